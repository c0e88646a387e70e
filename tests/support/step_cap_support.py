"""Agents whose framework enforces a step budget itself, and how a capped run must look.

Each ``Cap`` is a real agent constructor with a budget, over a scripted model that keeps calling
``add``: ``capped`` scripts one tool-calling turn past what the budget lets through (the
framework ends the run with a budget message of its own), ``answered`` answers on the last model
call the budget allows (the boundary: still a clean answer).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware, ToolCallLimitMiddleware
from langchain_core.runnables import RunnableConfig

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel, ScriptEntry
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import AGENT_SPAN, add, react_agent, tool_turn

ANSWER = "1 + 2 is 3."
QUESTION = {"messages": [("user", "Add 1 and 2, then check it again")]}
RUNS = semconv.AGENT_RUNS.name
BAILS = semconv.SILENT_BAILS.name
STOPS = semconv.STOP_REASONS.name
MODES = ("invoke", "ainvoke", "stream_messages", "stream_updates", "astream_messages")


def script(tool_turns: int, *, answer: bool = True) -> list[ScriptEntry]:
    entries: list[ScriptEntry] = [tool_turn(call_id=f"c{i}") for i in range(tool_turns)]
    return [*entries, ANSWER] if answer else entries


@dataclass(frozen=True)
class Cap:
    """An agent constructor with a step budget."""

    name: str
    build: Callable[[list[ScriptEntry]], Any]
    allowed: int  # tool-calling turns the budget lets through before the model must answer
    recursion_limit: int

    def capped(self) -> Any:
        return self.build(script(self.allowed + 1))

    def answered(self) -> Any:
        return self.build(script(self.allowed))


def prebuilt(entries: list[ScriptEntry]) -> Any:
    """LangGraph's ``create_react_agent``: at an even ``recursion_limit`` its
    ``remaining_steps`` guard answers for the model once the budget is spent."""
    return react_agent(ScriptedChatModel(entries), [add])


def model_call_limit(entries: list[ScriptEntry], exit_behavior: str = "end") -> Any:
    """``create_agent`` with at most 3 model calls per run."""
    middleware = ModelCallLimitMiddleware(run_limit=3, exit_behavior=exit_behavior)  # type: ignore[arg-type]
    return _create_agent(entries, middleware)


def tool_call_limit(entries: list[ScriptEntry], exit_behavior: str = "end") -> Any:
    """``create_agent`` with at most 2 tool calls per run."""
    middleware = ToolCallLimitMiddleware(run_limit=2, exit_behavior=exit_behavior)  # type: ignore[arg-type]
    return _create_agent(entries, middleware)


def _create_agent(entries: list[ScriptEntry], middleware: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_agent(ScriptedChatModel(entries), [add], middleware=[middleware])


# recursion_limit 10: the guard fires on the 5th model call (remaining_steps 1 < 2); the
# create_agent ones get room enough that only their middleware can end the run.
CAPS = (
    Cap("prebuilt_remaining_steps", prebuilt, 4, 10),
    Cap("create_agent_model_call_limit", model_call_limit, 2, 50),
    Cap("create_agent_tool_call_limit", tool_call_limit, 2, 50),
)


def cfg(cap: Cap, tenant: str, handler: LangChainCallbackHandler | None = None) -> RunnableConfig:
    config: dict[str, Any] = {
        "recursion_limit": cap.recursion_limit,
        "metadata": {"tenant_id": tenant},
    }
    if handler is not None:
        config["callbacks"] = [handler]
    return cast(RunnableConfig, config)


def run(mode: str, agent: Any, config: RunnableConfig) -> None:
    """One run of ``agent`` on ``QUESTION``: invoked, awaited, or streamed (sync or async) to
    the end."""
    if mode == "invoke":
        agent.invoke(QUESTION, config=config)
    elif mode == "ainvoke":
        asyncio.run(agent.ainvoke(QUESTION, config=config))
    elif mode.startswith("astream_"):
        stream_mode = mode.removeprefix("astream_")

        async def drain() -> list[Any]:
            return [
                chunk async for chunk in agent.astream(QUESTION, config, stream_mode=stream_mode)
            ]

        assert asyncio.run(drain()), "the stream yielded nothing"
    else:
        stream_mode = mode.removeprefix("stream_")
        chunks = list(agent.stream(QUESTION, config=config, stream_mode=stream_mode))
        assert chunks, "the stream yielded nothing"


def root(telemetry: InMemoryTelemetry) -> dict[str, Any]:
    return dict(telemetry.span(AGENT_SPAN).attributes or {})


def assert_capped(telemetry: InMemoryTelemetry, tenant: str, outcome: str = "completed") -> None:
    """One run, ended by its step cap: a silent bail of ``tenant`` with no answer."""
    attributes = root(telemetry)
    assert attributes[semconv.RUN_OUTCOME] == outcome
    assert attributes[semconv.RUN_STOP_REASON] == semconv.STOP_REASON_RECURSION_LIMIT
    assert attributes[semconv.REACT_TERMINATION_REASON] == "tool_calls_with_no_text"
    bail = {semconv.TENANT_ID: tenant, semconv.REACT_TERMINATION_REASON: "tool_calls_with_no_text"}
    assert telemetry.value(BAILS, bail) == 1
    assert telemetry.value(BAILS) == 1
    stop = {semconv.TENANT_ID: tenant, semconv.RUN_STOP_REASON: "recursion_limit"}
    assert telemetry.value(STOPS, stop) == telemetry.value(STOPS) == 1
    ended = {semconv.TENANT_ID: tenant, semconv.RUN_OUTCOME: outcome}
    if outcome == "completed":  # no answer reached the user
        assert attributes[semconv.RESPONSE_EMPTY] is True
        ended[semconv.RESPONSE_EMPTY] = True
    else:
        assert semconv.RESPONSE_EMPTY not in attributes
    assert telemetry.value(RUNS, ended) == telemetry.value(RUNS) == 1


def assert_answered(telemetry: InMemoryTelemetry, tenant: str) -> None:
    """One run that answered inside its budget: an ordinary completed run, no bail."""
    attributes = root(telemetry)
    assert attributes[semconv.RUN_OUTCOME] == "completed"
    assert attributes[semconv.RESPONSE_EMPTY] is False
    assert attributes[semconv.RUN_STOP_REASON] == "end_turn"
    assert semconv.REACT_TERMINATION_REASON not in attributes
    assert telemetry.value(BAILS) == 0
    stop = {semconv.TENANT_ID: tenant, semconv.RUN_STOP_REASON: "end_turn"}
    assert telemetry.value(STOPS, stop) == telemetry.value(STOPS) == 1
    ended = {
        semconv.TENANT_ID: tenant,
        semconv.RUN_OUTCOME: "completed",
        semconv.RESPONSE_EMPTY: False,
    }
    assert telemetry.value(RUNS, ended) == telemetry.value(RUNS) == 1
