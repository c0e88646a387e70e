"""The series of ``gen_ai.execute_tool.duration``: the tenant only with ``tenant_histograms=True``,
and a handler's pool of detailed (tool, error type) sets: the first ``DETAIL_POOL`` keep their
labels, a later one folds into ``_OTHER`` and still says whether the call failed."""

from __future__ import annotations

import pytest

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.emit.budget import DETAIL_POOL
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

TOOL = semconv.EXECUTE_TOOL_DURATION.name
OTHER = semconv.OTHER_VALUE


def _sets(telemetry: InMemoryTelemetry) -> dict[tuple[object, object], int]:
    """(tool, error type) -> how many durations the series holds."""
    return {
        (a.get(semconv.GEN_AI_TOOL_NAME), a.get(semconv.ERROR_TYPE)): point.count  # type: ignore[union-attr]
        for a, point in telemetry.points(TOOL)
    }


@pytest.mark.parametrize("per_tenant", [True, False])
def test_a_tool_duration_names_its_tenant_only_with_tenant_histograms(
    telemetry: InMemoryTelemetry, per_tenant: bool
) -> None:
    handler = telemetry.handler(tenant_histograms=per_tenant)
    with tenant_scope("acme"):
        handler.agent_start(AgentStartEvent("q", "r"))
        handler.end_tool(handler.start_tool("r", "search"))
        handler.agent_end(AgentEndEvent("r", "a", 1.0, 1))
    tenants = [a.get(semconv.TENANT_ID) for a, _ in telemetry.points(TOOL)]
    assert tenants == (["acme"] if per_tenant else [None])


def test_past_the_detail_pool_a_tool_set_folds_into_other_and_keeps_its_failure(
    telemetry: InMemoryTelemetry,
) -> None:
    emitter = MetricEmitter(telemetry.meter_provider.get_meter("t"), "ops")
    errors = [None, "E1", "E2", "E3", "E4"]
    tools = [f"tool-{index}" for index in range(DETAIL_POOL // len(errors))]
    for tool in tools:  # exactly DETAIL_POOL sets, each admitted
        for error in errors:
            emitter.tool_call("acme", tool, error, 0.1, None)
    emitter.tool_call("acme", "tool-0", "E5", 0.1, None)  # a new error type: one set too many
    emitter.tool_call("acme", "tool-2", "E6", 0.1, None)  # and another
    emitter.tool_call("acme", "late", None, 0.1, None)  # a new name: one set too many
    emitter.tool_call("acme", "tool-1", "E1", 0.1, None)  # admitted: keeps its labels
    sets = _sets(telemetry)
    assert len(sets) == DETAIL_POOL + 2
    assert sets[("tool-1", "E1")] == 2
    assert sets[(OTHER, OTHER)] == 2  # the failed calls, folded
    assert sets[(OTHER, None)] == 1  # the successful one, folded
    assert ("tool-0", "E5") not in sets


def test_a_tool_without_a_name_is_counted_under_other(telemetry: InMemoryTelemetry) -> None:
    emitter = MetricEmitter(telemetry.meter_provider.get_meter("t"), "ops")
    emitter.tool_call("acme", "", None, 0.1, None)
    emitter.tool_call("acme", " \n", "E1", 0.1, None)
    assert _sets(telemetry) == {(OTHER, None): 1, (OTHER, "E1"): 1}
