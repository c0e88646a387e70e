"""A model call's tenant and time to first chunk as the adapter hints them: a call of a known
run is its run's tenant whatever tenant the adapter names (the hint is for calls of no run),
and a time to first chunk is kept up to a call's longest duration (in seconds), not past it."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.read.sanitise import MAX_CALL_MS
from symfonic_otel.testing.telemetry import InMemoryTelemetry

TTFC = semconv.CLIENT_TIME_TO_FIRST_CHUNK.name


def _tenants(telemetry: InMemoryTelemetry) -> set[object]:
    """The tenants on the model-call spans."""
    return {
        (span.attributes or {}).get(semconv.TENANT_ID)
        for span in telemetry.spans()
        if span.name.startswith("chat")
    }


def test_a_call_of_a_run_is_the_run_s_tenant_whatever_the_adapter_names(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r1"), tenant_id="acme")
    handler.llm_end(
        LLMEndEvent(model="gpt-4o", output="hi", usage={}, run_id="r1", duration_ms=5.0),
        tenant_id="globex",
    )
    handler.agent_end(AgentEndEvent("r1", "hi", 1.0, 1))
    assert _tenants(telemetry) == {"acme"}


def test_a_call_of_no_run_is_the_tenant_the_adapter_names(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.llm_end(
        LLMEndEvent(model="gpt-4o", output="hi", usage={}, duration_ms=5.0), tenant_id="globex"
    )
    assert _tenants(telemetry) == {"globex"}


def test_a_time_to_first_chunk_is_kept_up_to_a_call_s_longest_duration(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    longest_s = MAX_CALL_MS / 1000
    for seconds in (longest_s, longest_s * 2):
        handler.llm_end(
            LLMEndEvent(model="gpt-4o", output="hi", usage={}, duration_ms=5.0),
            time_to_first_chunk_s=seconds,
        )
    ((_, point),) = telemetry.points(TTFC)
    assert (point.count, point.sum) == (1, longest_s)  # type: ignore[union-attr]
