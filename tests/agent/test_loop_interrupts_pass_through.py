"""Cancellation and Ctrl-C pass through every ``except`` on the reference loop's call path.

Each seam the loop calls into (the chat model, a tool, the forced-tool-choice resolver, a
callback handler) raises ``asyncio.CancelledError`` or ``KeyboardInterrupt``; the run must
re-raise it, never turn it into a tool error, a logged handler failure or an answer, and the
handler must still close the run (as ``cancelled``, never as an error).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.tools import tool

from symfonic_otel import semconv
from symfonic_otel.agent import ReactAgent
from symfonic_otel.testing import InMemoryTelemetry, ScriptedChatModel
from tests.support.agent_support import TOOLS, call, turn

INTERRUPTS = [asyncio.CancelledError, KeyboardInterrupt]
RUNS = semconv.AGENT_RUNS.name


class _Raising:
    """A resolver and a callback handler that raise ``exc`` when the loop calls them."""

    def __init__(self, exc: type[BaseException]) -> None:
        self.exc = exc

    async def resolve(self, state: dict[str, Any], messages: list[Any]) -> str | None:
        raise self.exc()

    async def on_llm_end(self, event: Any) -> None:
        raise self.exc()


def _run(agent: ReactAgent) -> Any:
    # asyncio.run, not the test's loop: a KeyboardInterrupt leaves the loop it is raised in.
    return asyncio.run(agent.run("what is x?", run_id="interrupted"))


def _answering() -> ScriptedChatModel:
    return ScriptedChatModel([turn("", call("lookup", {"key": "x"})), "x is value-of-x."])


def _passes_through(
    telemetry: InMemoryTelemetry, exc: type[BaseException], agent: ReactAgent
) -> None:
    """The interrupt leaves the run as raised, and the handler counts the run ``cancelled``."""
    with pytest.raises(exc):
        _run(agent)
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "cancelled"}) == 1


def _assert_cancelled_not_failed(telemetry: InMemoryTelemetry) -> None:
    outcomes = {attrs.get(semconv.RUN_OUTCOME) for attrs, _ in telemetry.points(RUNS)}
    assert outcomes == {"cancelled"}


def test_ctrl_c_in_the_model_call_ends_the_run(telemetry: InMemoryTelemetry) -> None:
    """(A scripted ``CancelledError`` trips LangChain's own gather; the cancelled task is below.)"""
    exc = KeyboardInterrupt
    handler = telemetry.handler()
    model = ScriptedChatModel([exc(), "never reached"])
    _passes_through(telemetry, exc, ReactAgent(model, TOOLS, callbacks=[handler]))
    assert len(model.calls) == 1  # no second turn after the interrupt
    _assert_cancelled_not_failed(telemetry)


@pytest.mark.parametrize("exc", INTERRUPTS)
def test_an_interrupt_in_a_tool_is_not_handed_to_the_model_as_a_tool_error(
    exc: type[BaseException], telemetry: InMemoryTelemetry
) -> None:
    @tool
    async def hang(key: str) -> str:
        """A tool interrupted while it runs."""
        raise exc()

    handler = telemetry.handler()
    model = ScriptedChatModel([turn("", call("hang", {"key": "x"})), "an answer after the error"])
    _passes_through(telemetry, exc, ReactAgent(model, [hang], callbacks=[handler]))
    assert len(model.calls) == 1


@pytest.mark.parametrize("exc", INTERRUPTS)
@pytest.mark.parametrize(
    ("seam", "model_calls"),
    [
        pytest.param("resolver", 0, id="resolver"),  # it runs before the first model call
        pytest.param("handler", 1, id="handler"),  # the first llm_end raised: no second turn
    ],
)
def test_an_interrupt_in_the_resolver_or_a_handler_is_no_failure_of_theirs(
    exc: type[BaseException], seam: str, model_calls: int, telemetry: InMemoryTelemetry
) -> None:
    handler, raising = telemetry.handler(), _Raising(exc)
    model = _answering()
    if seam == "resolver":
        agent = ReactAgent(model, TOOLS, callbacks=[handler], tool_choice_resolver=raising)
    else:
        agent = ReactAgent(model, TOOLS, callbacks=[raising, handler])
    _passes_through(telemetry, exc, agent)
    assert len(model.calls) == model_calls


def test_a_task_cancelled_mid_model_call_raises_cancelled_error(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    model = ScriptedChatModel(["slow answer"], latency_s=5.0)

    async def main() -> None:
        task = asyncio.ensure_future(
            ReactAgent(model, TOOLS, callbacks=[handler]).run("q", run_id="c")
        )
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "cancelled"}) == 1
