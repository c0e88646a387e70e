"""The Strands Agents adapter, on real Strands agents with a scripted ``Model`` (no network).

``SymfonicHooks`` is given to ``Agent(hooks=[...])``. Strands' caps raise nothing: a model that
calls tools until ``limits={"turns": ...}`` (or a token cap) stops the loop ends the invocation
normally with ``stop_reason`` ``limit_turns`` / ``limit_total_tokens`` / ``limit_output_tokens``,
which is a silent bail for its tenant with stop reason ``recursion_limit``; an answer within
the budget, even on the last allowed turn, is not. ``agent(...)``, ``invoke_async`` and
``stream_async`` give the same verdicts. Runs in the ``strands`` environment that
``.ci/framework-envs`` builds.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any

import pytest

pytest.importorskip("strands", reason="needs the strands extra (.ci/framework-envs)")

from opentelemetry.trace import StatusCode
from strands import Agent, tool
from strands.models import Model
from strands.types.exceptions import EventLoopException

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.strands import SymfonicHooks
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import adapter_checks as checks
from tests.support.bail_support import bails_of
from tests.support.loop_support import looping
from tests.support.raising_support import assert_completed_with_failed_tool, assert_error_run

FOREVER = 10**6
USAGE = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}


class ScriptedModel(Model):
    """Calls ``lookup`` until ``tool_turns`` results are in, then answers ``answer``."""

    def __init__(self, tool_turns: int = FOREVER, answer: str = "It is sunny.") -> None:
        self.tool_turns = tool_turns
        self.answer = answer
        self.config: dict[str, Any] = {"model_id": "scripted"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        done = sum(1 for m in messages for block in m.get("content", []) if "toolResult" in block)
        yield {"messageStart": {"role": "assistant"}}
        if done < self.tool_turns:
            use = {"toolUseId": f"call-{done}", "name": "lookup"}
            yield {"contentBlockStart": {"start": {"toolUse": use}}}
            delta = {"toolUse": {"input": json.dumps({"q": "weather"})}}
            yield {"contentBlockDelta": {"delta": delta}}
            yield {"contentBlockStop": {}}
            stop = "tool_use"
        else:
            yield {"contentBlockDelta": {"delta": {"text": self.answer}}}
            yield {"contentBlockStop": {}}
            stop = "end_turn"
        yield {"messageStop": {"stopReason": stop}}
        yield {"metadata": {"usage": USAGE, "metrics": {"latencyMs": 1}}}


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


def _agent(telemetry: InMemoryTelemetry, model: ScriptedModel, **kwargs: Any) -> Agent:
    tools = kwargs.pop("tools", [lookup])
    hooks = kwargs.pop("hooks", None) or SymfonicHooks(handler=telemetry.handler(**kwargs))
    return Agent(model=model, tools=tools, name="helper", hooks=[hooks], callback_handler=None)


def call(agent: Agent, **kwargs: Any) -> Any:
    return agent("What is the weather?", **kwargs)


def invoke_async(agent: Agent, **kwargs: Any) -> Any:
    return asyncio.run(agent.invoke_async("What is the weather?", **kwargs))


def stream_async(agent: Agent, **kwargs: Any) -> Any:
    async def consume() -> Any:
        result = None
        async for event in agent.stream_async("What is the weather?", **kwargs):
            result = event.get("result", result)
        return result

    return asyncio.run(consume())


ENTRY_POINTS = {"call": call, "invoke_async": invoke_async, "stream_async": stream_async}


entry = checks.entry_fixture(ENTRY_POINTS)


def _assert_capped(telemetry: InMemoryTelemetry, tenant: str) -> None:
    """A completed run the budget ended: bail, stop ``recursion_limit``, empty answer."""
    assert bails_of(telemetry, tenant, "tool_calls_with_no_text") == 1
    assert telemetry.value(semconv.SILENT_BAILS.name) == 1
    where = {
        semconv.TENANT_ID: tenant,
        semconv.RUN_OUTCOME: "completed",
        semconv.RESPONSE_EMPTY: True,
    }
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    stops = {semconv.RUN_STOP_REASON: "recursion_limit", semconv.TENANT_ID: tenant}
    assert telemetry.value(semconv.STOP_REASONS.name, stops) == 1
    run = telemetry.span("invoke_agent helper")
    assert run.status.status_code is not StatusCode.ERROR
    assert run.attributes is not None
    assert run.attributes[semconv.RUN_STOP_REASON] == "recursion_limit"
    assert run.attributes[semconv.REACT_TERMINATION_REASON] == "tool_calls_with_no_text"


# --- the step caps: limit_turns, limit_total_tokens, limit_output_tokens -----------------------


def test_the_turn_limit_is_a_silent_bail_for_its_tenant_on_every_entry_point(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    agent = _agent(telemetry, ScriptedModel())
    with tenant_scope("acme"):
        result = entry(agent, limits={"turns": 3})

    assert result.stop_reason == "limit_turns"  # Strands raised nothing
    _assert_capped(telemetry, "acme")
    assert len([s for s in telemetry.spans() if s.name == "chat scripted"]) == 3
    assert len([s for s in telemetry.spans() if s.name == "execute_tool lookup"]) == 3


@pytest.mark.parametrize(
    ("limits", "stop"),
    [
        ({"total_tokens": 30}, "limit_total_tokens"),  # 15 a call: two calls reach it
        ({"output_tokens": 10}, "limit_output_tokens"),  # 5 a call: two calls reach it
    ],
)
def test_the_token_limits_are_silent_bails_too(
    telemetry: InMemoryTelemetry, entry: Any, limits: dict[str, int], stop: str
) -> None:
    agent = _agent(telemetry, ScriptedModel())
    with tenant_scope("acme"):
        result = entry(agent, limits=limits)
    assert result.stop_reason == stop
    _assert_capped(telemetry, "acme")
    assert len([s for s in telemetry.spans() if s.name == "chat scripted"]) == 2


@pytest.mark.parametrize(("turns", "bails"), [(3, 0), (2, 1)])
def test_an_answer_on_the_last_allowed_turn_is_no_bail_and_one_turn_short_is(
    telemetry: InMemoryTelemetry, entry: Any, turns: int, bails: int
) -> None:
    """Two tool turns then the answer: three turns. A limit of 3 lets it answer."""
    agent = _agent(telemetry, ScriptedModel(tool_turns=2))
    with tenant_scope("acme"):
        result = entry(agent, limits={"turns": turns})
    assert result.stop_reason == ("end_turn" if not bails else "limit_turns")
    assert bails_of(telemetry, "acme") == bails
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1


def test_an_answer_within_the_budget_is_a_completed_run_with_our_span_shape(
    telemetry: InMemoryTelemetry,
) -> None:
    agent = _agent(telemetry, ScriptedModel(tool_turns=1))
    with tenant_scope("acme"):
        assert str(agent("q", limits={"turns": 5})).strip() == "It is sunny."

    checks.assert_one_healthy_run(telemetry)
    run = telemetry.span("invoke_agent helper")
    assert run.attributes is not None
    assert run.attributes[semconv.RUN_STOP_REASON] == "end_turn"
    checks.assert_two_chats_and_the_tool_under(telemetry, run)


def test_a_blank_answer_is_a_silent_bail(telemetry: InMemoryTelemetry) -> None:
    agent = _agent(telemetry, ScriptedModel(tool_turns=0, answer=""))
    with tenant_scope("acme"):
        agent("q")
    assert bails_of(telemetry, "acme", "no_content_no_tool_calls") == 1


# --- tenants ------------------------------------------------------------------------------------


def test_tenant_from_invocation_state_and_two_tenants_share_one_provider(
    telemetry: InMemoryTelemetry,
) -> None:
    hooks = SymfonicHooks(handler=telemetry.handler())
    capped = _agent(telemetry, ScriptedModel(), hooks=hooks)
    healthy = _agent(telemetry, ScriptedModel(tool_turns=1), hooks=hooks)
    capped("q", limits={"turns": 2}, invocation_state={"tenant_id": "acme"})
    healthy("q", invocation_state={"tenant_id": "globex"})

    checks.assert_only_acme_bailed(telemetry, 1)
    assert hooks.open_runs == 0


# --- never hurt the agent -----------------------------------------------------------------------


def test_a_failing_adapter_never_reaches_the_agent_and_is_counted_as_dropped(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = SymfonicHooks(handler=telemetry.handler())
    agent = _agent(telemetry, ScriptedModel(tool_turns=1), hooks=hooks)
    checks.assert_a_broken_tool_start_is_only_dropped(
        monkeypatch, telemetry, hooks, "SymfonicHooks.before_tool", lambda: str(agent("q")).strip()
    )


def test_bad_arguments_get_clear_errors() -> None:
    checks.assert_bad_arguments_rejected(SymfonicHooks)


# --- loops: identical tool calls and the call budget -------------------------------------------


def test_three_identical_lookups_are_one_looping_run_counted_while_it_runs(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    """The model calls ``lookup(q="weather")`` three times, then answers: a looping run for
    the tenant, counted at the third call (read inside that call), once, with two repeats."""
    watched, seen_in_call = checks.watched_lookup(telemetry)
    agent = _agent(telemetry, ScriptedModel(tool_turns=3), tools=[tool(watched)])
    with tenant_scope("acme"):
        result = entry(agent)
    assert result.stop_reason == "end_turn"
    checks.assert_three_lookups_looped(telemetry, seen_in_call)


def test_two_lookups_are_no_loop_and_the_options_reach_the_handler(
    telemetry: InMemoryTelemetry,
) -> None:
    def go(tool_turns: int, **options: Any) -> None:
        call(_agent(telemetry, ScriptedModel(tool_turns=tool_turns), **options))

    checks.assert_loop_options_reach_the_handler(telemetry, go)
    assert looping(telemetry) == 1


# --- a raising model or tool ----------------------------------------------------------------------


class ModelDown(Exception):
    """A provider failure Strands does not know of."""


class DownModel(ScriptedModel):
    """Calls ``lookup`` once, then raises ``error`` as a provider client does."""

    error = ModelDown("provider down")

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        if any("toolResult" in block for m in messages for block in m.get("content", [])):
            raise self.error
        async for event in super().stream(messages, *args, **kwargs):
            yield event


def test_a_raising_model_reaches_the_caller_as_itself_and_the_run_is_error(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    """Strands wraps a model's unknown exception in its own ``EventLoopException``; the run's
    ``error.type`` is the model's exception, which every Strands failure would otherwise hide."""
    with tenant_scope("acme"), pytest.raises(EventLoopException) as raised:
        entry(_agent(telemetry, DownModel(tool_turns=1)))
    assert raised.value.__cause__ is DownModel.error
    assert_error_run(telemetry, "acme", DownModel.error)


def test_a_raising_tool_is_handed_to_the_model_and_the_run_completes(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    @tool(name="lookup")
    def failing(q: str) -> str:
        """Look something up."""
        raise LookupError("backend down")

    with tenant_scope("acme"):
        entry(_agent(telemetry, ScriptedModel(tool_turns=1), tools=[failing]))
    assert_completed_with_failed_tool(telemetry, "acme", "execute_tool lookup")
