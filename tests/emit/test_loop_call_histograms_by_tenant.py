"""The call-count histograms of runs (``gen_ai.invoke_agent.inference_calls``) with
``tenant_histograms=True``: each tenant's runs land on its own series, whichever tenant ran
first, labelled with the run's outcome; without the option no series names a tenant."""

from __future__ import annotations

import pytest

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.testing.telemetry import InMemoryTelemetry

CALLS = semconv.INVOKE_AGENT_INFERENCE_CALLS.name


def _run(handler: OTelCallbackHandler, tenant: str, run_id: str, model_calls: int) -> None:
    with tenant_scope(tenant):
        handler.agent_start(AgentStartEvent("q", run_id))
        for _ in range(model_calls):
            handler.llm_end(LLMEndEvent("gpt-4o", "x", {}, run_id=run_id, node_name="react"))
        handler.agent_end(AgentEndEvent(run_id, "an answer", 10.0, 1))


def _by_tenant(telemetry: InMemoryTelemetry) -> dict[object, tuple[int, float]]:
    points = telemetry.points(CALLS)
    assert {attributes.get(semconv.RUN_OUTCOME) for attributes, _ in points} == {"completed"}
    return {
        attributes.get(semconv.TENANT_ID): (point.count, point.sum)  # type: ignore[union-attr]
        for attributes, point in points
    }


@pytest.mark.parametrize("order", [("acme", "globex"), ("globex", "acme")])
def test_each_tenant_s_call_counts_land_on_its_own_series(
    telemetry: InMemoryTelemetry, order: tuple[str, str]
) -> None:
    handler = telemetry.handler(tenant_histograms=True)
    calls = {"acme": 1, "globex": 3}
    for index, tenant in enumerate(order):
        _run(handler, tenant, f"r{index}", calls[tenant])
    assert _by_tenant(telemetry) == {"acme": (1, 1), "globex": (1, 3)}


def test_without_tenant_histograms_the_series_name_no_tenant(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    _run(handler, "acme", "r0", 1)
    _run(handler, "globex", "r1", 3)
    assert _by_tenant(telemetry) == {None: (2, 4)}
