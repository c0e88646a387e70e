"""The Google ADK adapter, on real ADK runners with a scripted ``BaseLlm`` (no network).

``SymfonicPlugin`` is given to ``Runner(plugins=[...])``. A model that calls tools until
``RunConfig(max_llm_calls=...)`` stops it (``LlmCallsLimitExceededError``) is a silent bail for
its tenant with stop reason ``recursion_limit``; one that answers within the budget, even on the
last allowed call, is not. ``run`` (sync), ``run_async`` and SSE streaming give the same
verdicts. Runs in the ``google-adk`` environment that ``.ci/framework-envs`` builds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

pytest.importorskip("google.adk", reason="needs the google-adk extra (.ci/framework-envs)")

from google.adk.agents import LlmAgent
from google.adk.agents.invocation_context import LlmCallsLimitExceededError
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from opentelemetry.trace import SpanKind

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.google_adk import SymfonicPlugin
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import adapter_checks as checks
from tests.support.bail_support import assert_raised_step_cap, bails_of
from tests.support.loop_support import looping
from tests.support.raising_support import assert_error_run

APP = "app"
FOREVER = 10**6


def _tool_results(request: LlmRequest) -> int:
    return sum(
        1
        for content in request.contents
        for part in content.parts or []
        if part.function_response is not None
    )


class ScriptedLlm(BaseLlm):
    """Calls ``lookup`` until ``tool_turns`` results are in, then answers ``answer``."""

    model: str = "scripted"
    tool_turns: int = FOREVER
    answer: str = "It is sunny."

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=10, candidates_token_count=5
        )
        done = _tool_results(llm_request)
        if done < self.tool_turns:
            call = types.FunctionCall(id=f"call-{done}", name="lookup", args={"q": "weather"})
            parts = [types.Part(function_call=call)]
        else:
            if stream:  # a chunk, then the aggregated response, as Gemini streams
                chunk = types.Content(role="model", parts=[types.Part(text=self.answer[:3])])
                yield LlmResponse(content=chunk, partial=True)
            parts = [types.Part(text=self.answer)]
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            usage_metadata=usage,
            finish_reason=types.FinishReason.STOP,
        )


def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}"


def _runner(telemetry: InMemoryTelemetry, model: ScriptedLlm, **kwargs: Any) -> InMemoryRunner:
    tools = kwargs.pop("tools", [lookup])
    plugin = kwargs.pop("plugin", None) or SymfonicPlugin(handler=telemetry.handler(**kwargs))
    agent = LlmAgent(name="helper", model=model, tools=tools, instruction="Help.")
    return InMemoryRunner(app=App(name=APP, root_agent=agent, plugins=[plugin]))


def _message(text: str = "What is the weather?") -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def run_async(
    runner: InMemoryRunner, config: RunConfig | None = None, state: dict[str, Any] | None = None
) -> str:
    session = await runner.session_service.create_session(
        app_name=APP, user_id="u1", state=state or {}
    )
    final = ""
    async for event in runner.run_async(
        user_id="u1", session_id=session.id, new_message=_message(), run_config=config
    ):
        if event.is_final_response() and event.content and event.content.parts:
            final = "".join(p.text or "" for p in event.content.parts)
    return final


def run_sync(runner: InMemoryRunner, config: RunConfig | None = None) -> str:
    session = asyncio.run(runner.session_service.create_session(app_name=APP, user_id="u1"))
    final = ""
    for event in runner.run(
        user_id="u1", session_id=session.id, new_message=_message(), run_config=config
    ):
        if event.is_final_response() and event.content and event.content.parts:
            final = "".join(p.text or "" for p in event.content.parts)
    return final


def run_streaming(runner: InMemoryRunner, config: RunConfig | None = None) -> str:
    config = (config or RunConfig()).model_copy(update={"streaming_mode": StreamingMode.SSE})
    return asyncio.run(run_async(runner, config))


ENTRY_POINTS = {
    "run": run_sync,
    "run_async": lambda runner, config=None: asyncio.run(run_async(runner, config)),
    "streaming": run_streaming,
}


entry = checks.entry_fixture(ENTRY_POINTS)


# --- the step cap: LlmCallsLimitExceededError ----------------------------------------------------


def test_max_llm_calls_is_a_silent_bail_for_its_tenant_on_every_entry_point(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    runner = _runner(telemetry, ScriptedLlm())
    with tenant_scope("acme"), pytest.raises(LlmCallsLimitExceededError):
        entry(runner, RunConfig(max_llm_calls=3))

    assert_raised_step_cap(telemetry, "acme", "LlmCallsLimitExceededError")
    assert len([s for s in telemetry.spans() if s.name == "chat scripted"]) == 3
    assert len([s for s in telemetry.spans() if s.name == "execute_tool lookup"]) == 3


@pytest.mark.parametrize(("max_llm_calls", "bails"), [(3, 0), (2, 1)])
def test_an_answer_on_the_last_allowed_call_is_no_bail_and_one_call_short_is(
    telemetry: InMemoryTelemetry, entry: Any, max_llm_calls: int, bails: int
) -> None:
    """Two tool turns then the answer: three model calls. A limit of 3 lets it answer."""
    runner = _runner(telemetry, ScriptedLlm(tool_turns=2))
    config = RunConfig(max_llm_calls=max_llm_calls)
    with tenant_scope("acme"):
        if bails:
            with pytest.raises(LlmCallsLimitExceededError):
                entry(runner, config)
        else:
            assert entry(runner, config) == "It is sunny."
    assert bails_of(telemetry, "acme") == bails
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1


def test_an_answer_within_the_budget_is_a_completed_run_with_our_span_shape(
    telemetry: InMemoryTelemetry,
) -> None:
    runner = _runner(telemetry, ScriptedLlm(tool_turns=1))
    with tenant_scope("acme"):
        assert asyncio.run(run_async(runner, RunConfig(max_llm_calls=10))) == "It is sunny."

    checks.assert_one_healthy_run(telemetry)
    run = telemetry.span("invoke_agent helper")
    assert run.attributes is not None
    assert run.attributes[semconv.RUN_STOP_REASON] == "end_turn"
    chats = [s for s in telemetry.spans() if s.name == "chat scripted"]
    tool = telemetry.span("execute_tool lookup")
    assert len(chats) == 2
    assert all(c.parent is not None and c.parent.span_id == run.context.span_id for c in chats)
    assert tool.kind is SpanKind.INTERNAL
    assert tool.parent is not None and tool.parent.span_id == run.context.span_id
    assert chats[0].attributes is not None
    assert chats[0].attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 10
    assert chats[0].attributes[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 5


def test_a_blank_final_response_is_a_silent_bail(telemetry: InMemoryTelemetry) -> None:
    runner = _runner(telemetry, ScriptedLlm(tool_turns=0, answer=""))
    with tenant_scope("acme"):
        asyncio.run(run_async(runner))
    assert bails_of(telemetry, "acme", "no_content_no_tool_calls") == 1
    where = {semconv.TENANT_ID: "acme", semconv.RESPONSE_EMPTY: True}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1


# --- tenants ------------------------------------------------------------------------------------


def test_tenant_from_run_metadata_then_session_state_and_two_tenants_share_one_plugin(
    telemetry: InMemoryTelemetry,
) -> None:
    plugin = SymfonicPlugin(handler=telemetry.handler())
    capped = _runner(telemetry, ScriptedLlm(), plugin=plugin)
    healthy = _runner(telemetry, ScriptedLlm(tool_turns=1), plugin=plugin)
    config = RunConfig(max_llm_calls=2, custom_metadata={"tenant_id": "acme"})
    with pytest.raises(LlmCallsLimitExceededError):
        asyncio.run(run_async(capped, config))
    assert asyncio.run(run_async(healthy, state={"tenant_id": "globex"})) == "It is sunny."

    checks.assert_only_acme_bailed(telemetry, 1)
    assert plugin.open_runs == 0


def test_the_run_s_own_metadata_wins_over_the_session_state(telemetry: InMemoryTelemetry) -> None:
    """A session of tenant ``globex`` running a request the application gave to ``acme``
    (``RunConfig.custom_metadata``): the run is ``acme``'s; the state is only the fallback."""
    runner = _runner(telemetry, ScriptedLlm(tool_turns=1))
    config = RunConfig(custom_metadata={"tenant_id": "acme"})
    assert asyncio.run(run_async(runner, config, state={"tenant_id": "globex"})) == "It is sunny."
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "globex"}) == 0


# --- never hurt the agent -----------------------------------------------------------------------


class _Broken(OSError):
    pass


def test_a_failing_handler_never_reaches_the_agent_and_is_counted_as_dropped(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = SymfonicPlugin(handler=telemetry.handler())
    runner = _runner(telemetry, ScriptedLlm(tool_turns=1), plugin=plugin)
    checks.assert_a_broken_tool_start_is_only_dropped(
        monkeypatch,
        telemetry,
        plugin,
        "SymfonicPlugin.before_tool",
        lambda: asyncio.run(run_async(runner)),
        _Broken,
    )


def test_bad_arguments_get_clear_errors() -> None:
    checks.assert_bad_arguments_rejected(SymfonicPlugin)


def test_a_caller_that_stops_reading_early_is_cancelled_not_a_bail(
    telemetry: InMemoryTelemetry,
) -> None:
    runner = _runner(telemetry, ScriptedLlm(tool_turns=2))

    async def first_event_only() -> None:
        session = await runner.session_service.create_session(app_name=APP, user_id="u1")
        events = runner.run_async(user_id="u1", session_id=session.id, new_message=_message())
        async for _ in events:
            break
        await events.aclose()

    with tenant_scope("acme"):
        asyncio.run(first_event_only())
    checks.assert_cancelled_never_a_bail(telemetry)


# --- loops: identical tool calls and the call budget -------------------------------------------


def test_three_identical_lookups_are_one_looping_run_counted_while_it_runs(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    """The model calls ``lookup(q="weather")`` three times, then answers: a looping run for
    the tenant, counted at the third call (read inside that call), once, with two repeats."""
    lookup, seen_in_call = checks.watched_lookup(telemetry)
    runner = _runner(telemetry, ScriptedLlm(tool_turns=3), tools=[lookup])
    with tenant_scope("acme"):
        assert entry(runner, RunConfig(max_llm_calls=10)) == "It is sunny."
    checks.assert_three_lookups_looped(telemetry, seen_in_call)


def test_two_lookups_are_no_loop_and_the_options_reach_the_handler(
    telemetry: InMemoryTelemetry,
) -> None:
    def go(tool_turns: int, **options: Any) -> None:
        run_sync(_runner(telemetry, ScriptedLlm(tool_turns=tool_turns), **options))

    checks.assert_loop_options_reach_the_handler(telemetry, go)
    assert looping(telemetry) == 1


# --- a raising model or tool ----------------------------------------------------------------------


class ModelDown(Exception):
    """A provider failure ADK does not know of."""


class DownLlm(ScriptedLlm):
    """Calls ``lookup`` once, then raises ``error`` as a provider client does."""

    error: Exception = ModelDown("provider down")

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        if _tool_results(llm_request):
            raise self.error
        async for response in super().generate_content_async(llm_request, stream):
            yield response


def _failing_lookup() -> Any:
    def lookup(q: str) -> str:
        """Look something up."""
        raise LookupError("backend down")

    return lookup


@pytest.mark.parametrize("raising", ["model", "tool"])
def test_a_raising_model_or_tool_reaches_the_caller_as_itself_and_the_run_is_error(
    telemetry: InMemoryTelemetry, entry: Any, raising: str
) -> None:
    model = DownLlm(tool_turns=1) if raising == "model" else ScriptedLlm(tool_turns=1)
    runner = _runner(telemetry, model, tools=[lookup if raising == "model" else _failing_lookup()])
    expected = ModelDown if raising == "model" else LookupError
    with tenant_scope("acme"), pytest.raises(expected) as raised:
        entry(runner)
    if raising == "model":
        assert raised.value is model.error
    assert_error_run(telemetry, "acme", raised.value)
