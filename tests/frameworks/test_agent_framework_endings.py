"""How an Agent Framework run and its model calls end when something goes wrong.

An error or a cancellation decides a run's outcome over a forced answer the cap already gave;
a cancellation is no error; a raising model call names its error on its own span.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

pytest.importorskip("agent_framework", reason="needs the agent-framework extra")

from agent_framework import Message, tool

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.agent_framework import SymfonicAgentFramework
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import adapter_checks as checks
from tests.support.agent_framework_support import QUESTION, ScriptedClient, agent


def _adapter(telemetry: InMemoryTelemetry) -> SymfonicAgentFramework:
    return SymfonicAgentFramework(handler=telemetry.handler())


class _ForcedCallFails(ScriptedClient):
    """The loop's forced final call (tools off) raises; every other call is scripted."""

    def _reply(self, messages: Sequence[Message], options: Mapping[str, Any]) -> Message:
        if options.get("tool_choice") == "none":
            raise ConnectionError("model down")
        return super()._reply(messages, options)


def _model_spans(telemetry: InMemoryTelemetry) -> list[Any]:
    return [
        s
        for s in telemetry.spans()
        if (s.attributes or {}).get(semconv.GEN_AI_OPERATION_NAME) == "chat"
    ]


async def _streamed(built: Any) -> Any:
    stream = built.run(QUESTION, stream=True)
    async for _ in stream:
        pass
    return await stream.get_final_response()


async def _run(built: Any) -> Any:
    return await built.run(QUESTION)


ENTRY_POINTS = {"run": _run, "stream": _streamed}


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_raising_model_call_names_its_error_on_its_own_span(
    telemetry: InMemoryTelemetry, entry: str
) -> None:
    with tenant_scope("acme"), pytest.raises(ConnectionError):
        asyncio.run(ENTRY_POINTS[entry](agent(_adapter(telemetry), ScriptedClient(fail=True))))
    (call,) = _model_spans(telemetry)
    assert (call.attributes or {})[semconv.ERROR_TYPE] == "ConnectionError"


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_forced_final_call_that_raises_is_still_the_fallback_call(
    telemetry: InMemoryTelemetry, entry: str
) -> None:
    client = _ForcedCallFails(function_invocation_configuration={"max_iterations": 2})
    with tenant_scope("acme"), pytest.raises(ConnectionError):
        asyncio.run(ENTRY_POINTS[entry](agent(_adapter(telemetry), client)))
    failed = [s for s in _model_spans(telemetry) if semconv.ERROR_TYPE in (s.attributes or {})]
    assert len(failed) == 1
    attributes = failed[0].attributes or {}
    assert attributes[semconv.ERROR_TYPE] == "ConnectionError"
    assert attributes[semconv.NODE_NAME] == semconv.NODE_SYNTHESIZE_FALLBACK


class _CancelledCall(ScriptedClient):
    """The model call is cancelled (or interrupted) while it runs."""

    def __init__(self, exc: type[BaseException]) -> None:
        super().__init__()
        self.exc = exc

    def _reply(self, messages: Sequence[Message], options: Mapping[str, Any]) -> Message:
        raise self.exc()


@pytest.mark.parametrize("exc", [asyncio.CancelledError, KeyboardInterrupt])
def test_an_interrupted_model_call_is_recorded_naming_the_interruption(
    telemetry: InMemoryTelemetry, exc: type[BaseException]
) -> None:
    with tenant_scope("acme"), pytest.raises(exc):
        asyncio.run(agent(_adapter(telemetry), _CancelledCall(exc)).run(QUESTION))
    (call,) = _model_spans(telemetry)
    assert (call.attributes or {})[semconv.ERROR_TYPE] == exc.__name__
    checks.assert_cancelled_never_a_bail(telemetry)


def test_a_run_whose_forced_call_raises_is_an_error_not_a_capped_answer(
    telemetry: InMemoryTelemetry,
) -> None:
    """The forced call was seen (and remembered as the answer to come) before it raised: the
    exception that ended the run decides its outcome."""
    with tenant_scope("acme"), pytest.raises(ConnectionError):
        asyncio.run(
            agent(
                _adapter(telemetry),
                _ForcedCallFails(function_invocation_configuration={"max_iterations": 2}),
            ).run(QUESTION)
        )
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "error"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    run = telemetry.span("invoke_agent helper").attributes or {}
    assert run[semconv.ERROR_TYPE] == "ConnectionError"


def test_a_run_cancelled_in_a_tool_is_cancelled_not_an_error(
    telemetry: InMemoryTelemetry,
) -> None:
    @tool(name="lookup")
    def cancelled(q: str) -> str:
        """Look something up."""
        raise asyncio.CancelledError

    with tenant_scope("acme"), pytest.raises(asyncio.CancelledError):
        asyncio.run(
            agent(_adapter(telemetry), ScriptedClient(tool_turns=1), [cancelled]).run(QUESTION)
        )
    checks.assert_cancelled_never_a_bail(telemetry)
    assert semconv.ERROR_TYPE not in (telemetry.span("invoke_agent helper").attributes or {})
