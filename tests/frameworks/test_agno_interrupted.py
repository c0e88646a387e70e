"""An Agno run interrupted in its model or in a tool: the spans end where it happened.

Cancellation is no ``Exception``: an interrupted model call still ends its run at once (Agno
calls no post hook then), and an interrupted tool ends its own span at the tool, naming the
interruption, not later as an unfinished step.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("agno", reason="needs the agno extra")

from agno.exceptions import RunCancelledException
from agno.models.message import Message
from agno.models.response import ModelResponse

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.agno import SymfonicAgno
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agno_support import QUESTION, ScriptedModel, agent

INTERRUPTIONS = [KeyboardInterrupt, asyncio.CancelledError]
MODES = ["run", "arun", "run_stream", "arun_stream"]


def _interrupted_model(exc: type[BaseException]) -> ScriptedModel:
    @dataclass
    class Interrupted(ScriptedModel):
        def _turn(self, messages: list[Message]) -> ModelResponse:
            raise exc()

    return Interrupted()


def _call(built: Any, mode: str) -> None:
    """Run ``built`` once; Agno turns some interruptions into a cancelled run, lets others out."""

    async def consume() -> None:
        async for _ in built.arun(QUESTION, stream=True):
            pass

    with tenant_scope("acme"), contextlib.suppress(KeyboardInterrupt, asyncio.CancelledError):
        if mode == "run":
            built.run(QUESTION)
        elif mode == "run_stream":
            for _ in built.run(QUESTION, stream=True):
                pass
        elif mode == "arun":
            asyncio.run(built.arun(QUESTION))
        else:
            asyncio.run(consume())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("exc", INTERRUPTIONS)
def test_an_interrupted_model_call_ends_its_run_at_once(
    telemetry: InMemoryTelemetry, exc: type[BaseException], mode: str
) -> None:
    adapter = SymfonicAgno(handler=telemetry.handler())
    _call(agent(adapter, _interrupted_model(exc)), mode)
    assert adapter.open_runs == 0
    run = telemetry.span("invoke_agent helper").attributes or {}
    assert run[semconv.TENANT_ID] == "acme"


@pytest.mark.parametrize("exc", INTERRUPTIONS)
def test_a_run_interrupted_in_its_model_is_cancelled_not_an_error(
    telemetry: InMemoryTelemetry, exc: type[BaseException]
) -> None:
    _call(agent(SymfonicAgno(handler=telemetry.handler()), _interrupted_model(exc)), "run")
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "cancelled"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1


@pytest.mark.parametrize("mode", ["run", "arun"])
@pytest.mark.parametrize("exc", INTERRUPTIONS)
def test_an_interrupted_tool_ends_its_span_at_the_tool_naming_the_interruption(
    telemetry: InMemoryTelemetry, exc: type[BaseException], mode: str
) -> None:
    def lookup(q: str) -> str:
        """Look something up."""
        raise exc()

    async def alookup(q: str) -> str:
        """Look something up."""
        raise exc()

    alookup.__name__ = "lookup"
    tool = lookup if mode == "run" else alookup
    built = agent(
        SymfonicAgno(handler=telemetry.handler()), ScriptedModel(tool_turns=1), tools=[tool]
    )
    _call(built, mode)
    attributes = telemetry.span("execute_tool lookup").attributes or {}
    assert attributes[semconv.ERROR_TYPE] == exc.__name__
    assert semconv.STEP_UNFINISHED not in attributes


@pytest.mark.parametrize("mode", MODES)
def test_a_run_agno_cancelled_in_its_model_call_is_cancelled_not_an_error(
    telemetry: InMemoryTelemetry, mode: str
) -> None:
    _call(agent(SymfonicAgno(handler=telemetry.handler()), _interrupted_model(_Cancelled)), mode)
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "cancelled"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    assert semconv.ERROR_TYPE not in (telemetry.span("invoke_agent helper").attributes or {})


class _Cancelled(RunCancelledException):
    """Agno's own cancellation (``Agent.cancel_run``), raised where the model is called."""

    def __init__(self) -> None:
        super().__init__("cancelled")
