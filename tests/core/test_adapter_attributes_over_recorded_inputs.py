"""An adapter's own ``attributes`` at a model call's end win over what its LLMPreCall recorded
(the adapter read the request actually sent); the parameters it does not name are kept."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.recorded import span_attrs
from tests.support.symfonic_events import AgentEnd, AgentStart, LLMEnd, LLMPreCall


def test_the_adapter_s_attributes_win_over_the_pre_call_s_parameters(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(capture_content=False)
    handler.agent_start(AgentStart(query="q", run_id="r"))
    handler.llm_pre_call(
        LLMPreCall(
            model="gpt-4o",
            messages=[],
            tools=[],
            run_id="r",
            invocation_params={"temperature": 0.2, "max_tokens": 512},
            node_name="react",
        )
    )
    handler.llm_end(
        LLMEnd(model="gpt-4o", output="ok", usage={}, run_id="r", node_name="react"),
        attributes={semconv.GEN_AI_REQUEST_TEMPERATURE: 0.9},
    )
    handler.agent_end(AgentEnd(run_id="r", final_response="ok", duration_ms=3.0, node_count=1))
    [chat] = [s for s in telemetry.spans() if s.name == "chat gpt-4o"]
    attrs = span_attrs(chat)
    assert attrs[semconv.GEN_AI_REQUEST_TEMPERATURE] == 0.9
    assert attrs[semconv.GEN_AI_REQUEST_MAX_TOKENS] == 512
