"""LlamaIndex runs cut short: cancelled by the user mid-tool (outcome ``cancelled``, stop
reason ``interrupted``, not an answer nor an error), or still open when the adapter is
uninstrumented (ended as ``abandoned``, none left open). And a chat response whose tool calls
are both blocks and the provider's ``additional_kwargs`` counts each call once.
Real LlamaIndex agents and workflow handlers; an ``asyncio.Event`` orders the cancel."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatResponse, ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from workflows.errors import WorkflowCancelledByUser

from symfonic_otel import semconv
from symfonic_otel.llama_index import SymfonicLlamaIndex, reading
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.llama_index_support import ANSWER, Script, instrumented


def _agent_with(tool: Any) -> FunctionAgent:
    llm = MockFunctionCallingLLM(response_generator=Script(["tool", ANSWER]))
    return FunctionAgent(
        name="helper", llm=llm, tools=[FunctionTool.from_defaults(**tool)], streaming=False
    )


def _run_span(telemetry: InMemoryTelemetry) -> dict[str, Any]:
    (span,) = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    return dict(span.attributes or {})


def test_a_run_cancelled_mid_tool_is_cancelled_and_interrupted(
    telemetry: InMemoryTelemetry,
) -> None:
    async def main() -> BaseException | None:
        started = asyncio.Event()

        async def add(a: int, b: int) -> int:
            """Add slowly."""
            started.set()
            await asyncio.sleep(5)  # cancelled long before
            return a + b

        handler = _agent_with({"async_fn": add, "name": "add"}).run(user_msg="Add 1 and 2")
        await asyncio.wait_for(started.wait(), 2)
        await handler.cancel_run()
        try:
            await handler
        except WorkflowCancelledByUser as exc:
            return exc
        return None

    with instrumented(telemetry):
        raised = asyncio.run(main())
    assert isinstance(raised, WorkflowCancelledByUser)
    run = _run_span(telemetry)
    assert run[semconv.RUN_OUTCOME] == "cancelled"
    assert run[semconv.RUN_STOP_REASON] == semconv.STOP_REASON_INTERRUPTED
    assert semconv.ERROR_TYPE not in run


def test_a_run_still_open_at_uninstrument_is_ended_as_abandoned(
    telemetry: InMemoryTelemetry,
) -> None:
    adapter = SymfonicLlamaIndex(telemetry.handler()).instrument()

    def add(a: int, b: int) -> int:
        """Add, after the adapter was taken off mid-run."""
        adapter.uninstrument()
        return a + b

    async def main() -> Any:
        return await _agent_with({"fn": add, "name": "add"}).run(user_msg="Add 1 and 2")

    try:
        assert ANSWER in str(asyncio.run(main()))
    finally:
        adapter.uninstrument()
    assert adapter.open_runs == 0
    assert _run_span(telemetry)[semconv.RUN_OUTCOME] == "abandoned"


def test_tool_calls_in_both_blocks_and_additional_kwargs_are_counted_once() -> None:
    block = ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 1, "b": 2})
    both = ChatMessage(
        role="assistant",
        blocks=[block],
        additional_kwargs={"tool_calls": [{"id": "c1", "function": {"name": "add"}}]},
    )
    only_kwargs = ChatMessage(
        role="assistant",
        content="",
        additional_kwargs={"tool_calls": [{"id": "c1"}, {"id": "c2"}]},
    )
    assert reading.response_turn(ChatResponse(message=both)).tool_calls == 1
    assert reading.response_turn(ChatResponse(message=only_kwargs)).tool_calls == 2
