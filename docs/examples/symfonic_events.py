import asyncio

from symfonic_otel import OTelCallbackHandler, configure_telemetry, tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent, ReactLoopEndEvent

# Console output to see it work; see "Prometheus" and "OTLP" for production exporters.
telemetry = configure_telemetry(service_name="support-agent", otlp=False, console=True)
handler = OTelCallbackHandler(agent_name="support")


async def one_run() -> None:
    # What an agent framework calls on its callbacks during a run (here by hand).
    await handler.on_agent_start(AgentStartEvent(query="Is sku-42 in stock?", run_id="run-1"))
    usage = {"input_tokens": 120, "output_tokens": 14}
    await handler.on_llm_end(
        LLMEndEvent(model="gpt-4o-mini", output="", usage=usage, run_id="run-1", node_name="react")
    )
    # The loop was cut while the model still called tools and wrote no text: a silent bail.
    await handler.on_react_loop_end(
        ReactLoopEndEvent(
            run_id="run-1",
            iteration_index=0,
            content_type="str",
            has_tool_calls=True,
            tool_call_count=1,
            termination_reason="tool_calls_with_no_text",
        )
    )
    await handler.on_agent_end(
        AgentEndEvent(run_id="run-1", final_response="", duration_ms=850.0, node_count=3)
    )


with tenant_scope("acme"):
    asyncio.run(one_run())
telemetry.shutdown()  # flushes: the run span and the silent-bail count are printed
