"""``agent_end(attributes=...)``: the adapter's extra keys reach the run span, but a key the
package sets itself (the outcome, the run's counts) keeps the package's value."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.recorded import span_attrs


def test_the_package_s_run_attributes_win_over_the_adapter_s_same_keys(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r1"))
    handler.end_tool(handler.start_tool("r1", "lookup", call_id="c1"))
    handler.agent_end(
        AgentEndEvent("r1", "answer", 10.0, 1),
        attributes={
            semconv.RUN_TOOL_CALLS: 99,
            semconv.RUN_OUTCOME: "error",
            "app.release": "2026.12",
        },
    )
    attrs = span_attrs(telemetry.span(semconv.agent_span_name("symfonic")))
    assert attrs[semconv.RUN_TOOL_CALLS] == 1
    assert attrs[semconv.RUN_OUTCOME] == "completed"
    assert attrs["app.release"] == "2026.12"
