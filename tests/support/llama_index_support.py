"""LlamaIndex agents over a scripted model, run through each entry point the framework has.

The model is LlamaIndex's own ``MockFunctionCallingLLM`` with a response generator that plays a
script: ``"tool"`` asks for ``add`` (a tool-call block, or ReAct's ``Action:`` text for a
``ReActAgent``), ``"raise"`` fails the call, any other string is a text answer. A ``budget`` of
``max_iterations=N`` lets the agent parse N-1 turns: LlamaIndex counts the N-th parsed turn as
the cap, whatever it holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import ChatResponse, LLMMetadata, ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.callbacks import llm_chat_callback
from llama_index.core.llms.mock import MockFunctionCallingLLM

from symfonic_otel.llama_index import SymfonicLlamaIndex
from symfonic_otel.testing.telemetry import InMemoryTelemetry

ANSWER = "1 + 2 is 3."
FORCED = "I ran out of steps; the sum so far is 3."
BUDGET = 3  # max_iterations
KINDS = ("function", "react", "workflow")
MODES = ("run", "stream_events")


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Script:
    """The scripted model's turns; counts the calls it answered."""

    def __init__(self, turns: Sequence[str], react: bool = False) -> None:
        self.turns = list(turns)
        self.react = react
        self.calls = 0

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        turn = self.turns[min(self.calls, len(self.turns) - 1)]
        self.calls += 1
        if turn == "raise":
            raise RuntimeError("provider down")
        if turn not in ("tool", "ask"):
            content = f"Thought: I can answer.\nAnswer: {turn}" if self.react else turn
            return ChatMessage(role="assistant", content=content)
        if self.react:
            text = 'Thought: I need a tool.\nAction: add\nAction Input: {"a": 1, "b": 2}'
            return ChatMessage(role="assistant", content=text)
        name = "ask" if turn == "ask" else "add"  # ask: the sub-agent tool of one test
        kwargs = {"q": "Add 1 and 2"} if name == "ask" else {"a": 1, "b": 2}
        call = ToolCallBlock(tool_call_id=f"c{self.calls}", tool_name=name, tool_kwargs=kwargs)
        return ChatMessage(role="assistant", blocks=[call])


def looping() -> list[str]:
    """Tool calls until the budget (and one more turn: the forced answer in generate mode)."""
    return ["tool"] * BUDGET + [FORCED]


def answering(tool_turns: int = 1) -> list[str]:
    return ["tool"] * tool_turns + [ANSWER]


def agent(kind: str, turns: Sequence[str], *, streaming: bool = True) -> tuple[Any, Script]:
    script = Script(turns, react=kind == "react")
    llm = MockFunctionCallingLLM(response_generator=script)
    if kind == "react":
        return ReActAgent(name="helper", llm=llm, tools=[add], streaming=streaming), script
    built = FunctionAgent(
        name="helper", description="Adds.", llm=llm, tools=[add], streaming=streaming
    )
    if kind == "workflow":
        return AgentWorkflow(agents=[built], root_agent="helper"), script
    return built, script


async def _run(workflow: Any, mode: str, **kwargs: Any) -> Any:
    handler = workflow.run(user_msg="Add 1 and 2", max_iterations=BUDGET, **kwargs)
    if mode == "stream_events":
        events = [event async for event in handler.stream_events()]
        assert events, "the stream yielded nothing"
    return await handler


def run(workflow: Any, mode: str = "run", **kwargs: Any) -> tuple[Any, BaseException | None]:
    """Run to the end; returns the result or the exception the run raised."""
    try:
        return asyncio.run(_run(workflow, mode, **kwargs)), None
    except Exception as exc:
        return None, exc


@contextmanager
def instrumented(telemetry: InMemoryTelemetry) -> Iterator[SymfonicLlamaIndex]:
    adapter = SymfonicLlamaIndex(telemetry.handler()).instrument()
    try:
        yield adapter
    finally:
        adapter.uninstrument()


class PricedLLM(MockFunctionCallingLLM):
    """The scripted model with a model name and the provider's usage in its raw response (the
    shape OpenAI-style integrations leave there), for the cost tests."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-1", is_function_calling_model=True)

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        message = self._get_response_generator()(messages, **kwargs)
        usage = {"prompt_tokens": 100, "completion_tokens": 10}
        return ChatResponse(message=message, raw={"usage": usage})  # type: ignore[arg-type]


def priced_agent(turns: Sequence[str]) -> Any:
    """A non-streaming ``FunctionAgent`` over ``PricedLLM``."""
    llm = PricedLLM(response_generator=Script(turns))
    return FunctionAgent(name="helper", llm=llm, tools=[add], streaming=False)
