"""A collection runs the handlers' housekeeping before it applies what is queued: a run closed
past its TTL by the collection itself is in that same collection (its orphan count and its
abandoned run), not only in the next one."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.events import AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_a_run_expired_by_a_collection_is_counted_in_that_collection(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(run_ttl_s=1e-9)  # past its TTL by the next collection
    handler.agent_start(AgentStartEvent("q", "r"))
    assert handler.open_runs == 1
    orphaned = telemetry.value(semconv.ORPHANED_RUNS.name)  # one collection: it expires the run
    assert handler.open_runs == 0
    assert orphaned == 1
