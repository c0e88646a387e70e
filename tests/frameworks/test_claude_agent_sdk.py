"""The Claude Agent SDK adapter, on the real SDK and its bundled CLI against a scripted endpoint.

The CLI calls a loopback server speaking the Anthropic Messages wire format (streamed as it asks)
through ``ANTHROPIC_BASE_URL`` with a placeholder key; the tool is an in-process SDK MCP tool.
A run its ``max_turns`` / ``max_budget_usd`` stopped ends with a ``ResultMessage`` of subtype
``error_max_turns`` / ``error_max_budget_usd`` and the SDK raises ``ResultError``: a silent bail
for its tenant with stop reason ``recursion_limit``, the exception unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import adapter_checks as checks

pytest.importorskip("claude_agent_sdk", reason="needs the claude-agent-sdk extra")

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    ResultError,
    ResultMessage,
    TextBlock,
    create_sdk_mcp_server,
    tool,
)
from opentelemetry.trace import StatusCode

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.claude_agent_sdk import SymfonicRecorder
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.anthropic_wire_support import TOOL, ScriptedAnthropic, serving
from tests.support.bail_support import bails_of
from tests.support.loop_support import looping
from tests.support.raising_support import assert_error_run

pytestmark = pytest.mark.timeout(120)


@tool("lookup", "Look something up.", {"q": str})
async def lookup(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": f"result for {args['q']}"}]}


@tool("lookup", "Look something up.", {"q": str})
async def broken_lookup(args: dict[str, Any]) -> dict[str, Any]:
    raise KeyError(args["q"])


def options(script: ScriptedAnthropic, home: Path, **kwargs: Any) -> ClaudeAgentOptions:
    server = create_sdk_mcp_server("weather", tools=[kwargs.pop("lookup", lookup)])
    return ClaudeAgentOptions(
        mcp_servers={"weather": server},
        tools=[],
        allowed_tools=[TOOL],
        model="claude-sonnet-4-5",
        env=script.env(home),
        **kwargs,
    )


async def _drain(messages: AsyncIterator[Any]) -> list[Any]:
    return [message async for message in messages]


def run_query(recorder: SymfonicRecorder, opts: ClaudeAgentOptions) -> list[Any]:
    return asyncio.run(_drain(recorder.query(prompt="What is the weather?", options=opts)))


def run_client(recorder: SymfonicRecorder, opts: ClaudeAgentOptions) -> list[Any]:
    async def turn() -> list[Any]:
        session = recorder.session(opts, name="claude")
        async with ClaudeSDKClient(session.options) as client:
            await client.query("What is the weather?")
            return await _drain(session.record(client.receive_response()))

    return asyncio.run(turn())


def run_partial(recorder: SymfonicRecorder, opts: ClaudeAgentOptions) -> list[Any]:
    opts.include_partial_messages = True  # StreamEvents interleaved with the messages
    return run_query(recorder, opts)


ENTRY_POINTS = {"query": run_query, "client": run_client, "partial": run_partial}


entry = checks.entry_fixture(ENTRY_POINTS)


def _result(messages: list[Any]) -> ResultMessage:
    (result,) = [m for m in messages if isinstance(m, ResultMessage)]
    return result


# --- healthy runs -----------------------------------------------------------------------------


def test_an_answer_is_a_completed_run_with_our_span_shape(
    telemetry: InMemoryTelemetry, tmp_path: Path, entry: Any
) -> None:
    recorder = SymfonicRecorder(handler=telemetry.handler())
    with serving(ScriptedAnthropic(tool_turns=1)) as script, tenant_scope("acme"):
        messages = entry(recorder, options(script, tmp_path))
    assert _result(messages).result == "It is sunny."
    checks.assert_one_healthy_run(telemetry)
    run = telemetry.span("invoke_agent claude")
    assert (run.attributes or {})[semconv.RUN_STOP_REASON] == "end_turn"
    chat = "chat claude-sonnet-4-5"
    checks.assert_two_chats_and_the_tool_under(telemetry, run, chat, TOOL, input_tokens=None)
    assert recorder.open_runs == 0


# --- the caps: max_turns and max_budget_usd ------------------------------------------------------


def _assert_capped(telemetry: InMemoryTelemetry, tenant: str, outcome: str) -> None:
    checks.assert_capped_silent_bail(telemetry, tenant, outcome)


@pytest.mark.parametrize(
    ("cap", "subtype"),
    [({"max_turns": 2}, "error_max_turns"), ({"max_budget_usd": 0.00001}, "error_max_budget_usd")],
)
def test_max_turns_or_the_budget_is_a_silent_bail_and_the_result_error_reaches_the_caller(
    telemetry: InMemoryTelemetry, tmp_path: Path, cap: dict[str, Any], subtype: str
) -> None:
    recorder = SymfonicRecorder(handler=telemetry.handler())
    with (
        serving(ScriptedAnthropic()) as script,
        tenant_scope("acme"),
        pytest.raises(ResultError) as raised,
    ):
        run_query(recorder, options(script, tmp_path, **cap))
    assert raised.value.subtype == subtype
    _assert_capped(telemetry, "acme", "error")
    run = telemetry.span("invoke_agent claude")
    assert (run.attributes or {})["error.type"] == "ResultError"
    assert recorder.open_runs == 0


def test_a_client_that_keeps_its_cli_is_capped_without_an_exception(
    telemetry: InMemoryTelemetry, tmp_path: Path
) -> None:
    recorder = SymfonicRecorder(handler=telemetry.handler())
    with serving(ScriptedAnthropic()) as script, tenant_scope("acme"):
        messages = run_client(recorder, options(script, tmp_path, max_turns=2))
    assert _result(messages).subtype == "error_max_turns"
    _assert_capped(telemetry, "acme", "completed")


@pytest.mark.parametrize(("max_turns", "bails"), [(3, 0), (2, 1)])
def test_an_answer_on_the_last_allowed_turn_is_no_bail_and_one_turn_short_is(
    telemetry: InMemoryTelemetry, tmp_path: Path, max_turns: int, bails: int
) -> None:
    """Two tool turns then the answer: three turns."""
    recorder = SymfonicRecorder(handler=telemetry.handler())
    with serving(ScriptedAnthropic(tool_turns=2)) as script, tenant_scope("acme"):
        try:
            run_query(recorder, options(script, tmp_path, max_turns=max_turns))
        except ResultError as exc:
            assert bails and exc.subtype == "error_max_turns"
    assert bails_of(telemetry, "acme") == bails
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1


# --- tenants ------------------------------------------------------------------------------------


def test_two_tenants_interleaved_only_the_capped_one_bails(
    telemetry: InMemoryTelemetry, tmp_path: Path
) -> None:
    recorder = SymfonicRecorder(handler=telemetry.handler())

    async def one(tenant: str, opts: ClaudeAgentOptions) -> None:
        with tenant_scope(tenant), contextlib.suppress(ResultError):
            await _drain(recorder.query(prompt="q", options=opts))

    with serving(ScriptedAnthropic()) as capped, serving(ScriptedAnthropic(tool_turns=1)) as ok:

        async def both() -> None:
            await asyncio.gather(
                one("acme", options(capped, tmp_path / "a", max_turns=2)),
                one("globex", options(ok, tmp_path / "b", max_turns=5)),
            )

        asyncio.run(both())
    assert bails_of(telemetry, "acme") == 1
    assert bails_of(telemetry, "globex") == 0
    where = {semconv.TENANT_ID: "globex", semconv.RUN_OUTCOME: "completed"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    assert recorder.open_runs == 0


# --- failures ----------------------------------------------------------------------------------


def test_a_failing_model_is_an_error_run_and_the_exception_reaches_the_caller(
    telemetry: InMemoryTelemetry, tmp_path: Path
) -> None:
    recorder = SymfonicRecorder(handler=telemetry.handler())
    with (
        serving(ScriptedAnthropic(status=400)) as script,
        tenant_scope("acme"),
        pytest.raises(ResultError) as raised,
    ):
        run_query(recorder, options(script, tmp_path))
    assert raised.value.subtype != "error_max_turns"
    assert_error_run(telemetry, "acme", raised.value, span="invoke_agent claude")


def test_a_raising_tool_is_reported_to_the_model_and_the_run_completes(
    telemetry: InMemoryTelemetry, tmp_path: Path
) -> None:
    recorder = SymfonicRecorder(handler=telemetry.handler())
    with serving(ScriptedAnthropic(tool_turns=1)) as script, tenant_scope("acme"):
        messages = run_query(recorder, options(script, tmp_path, lookup=broken_lookup))
    assert _result(messages).result == "It is sunny."
    runs = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "completed"}
    assert telemetry.value(semconv.AGENT_RUNS.name, runs) == 1
    assert telemetry.span(f"execute_tool {TOOL}").status.status_code is StatusCode.ERROR


def test_a_failing_adapter_never_reaches_the_agent_and_is_counted_as_dropped(
    telemetry: InMemoryTelemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = SymfonicRecorder(handler=telemetry.handler())

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("telemetry down")

    monkeypatch.setattr(recorder._book, "start_tool", broken)
    with serving(ScriptedAnthropic(tool_turns=1)) as script, tenant_scope("acme"):
        messages = run_query(recorder, options(script, tmp_path))
    assert _result(messages).result == "It is sunny."
    dropped = {semconv.TELEMETRY_EVENT: "SymfonicRecorder.pre_tool_use"}
    assert telemetry.value(semconv.DROPPED_EVENTS.name, dropped) == 1
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1


def test_the_callers_own_hooks_still_run(telemetry: InMemoryTelemetry, tmp_path: Path) -> None:
    seen: list[str] = []

    async def mine(data: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
        seen.append(data["hook_event_name"])
        return {}

    recorder = SymfonicRecorder(handler=telemetry.handler())
    with serving(ScriptedAnthropic(tool_turns=1)) as script, tenant_scope("acme"):
        hooks: Any = {"PreToolUse": [HookMatcher(hooks=[mine])]}
        run_query(recorder, options(script, tmp_path, hooks=hooks))
    assert seen == ["PreToolUse"]
    assert len([s for s in telemetry.spans() if s.name == f"execute_tool {TOOL}"]) == 1


def test_open_runs_are_bounded(telemetry: InMemoryTelemetry) -> None:
    """Streams left unread hold their runs; past ``max_open_runs`` the oldest is abandoned.
    The messages are the SDK's own types, as the CLI's stream delivers them."""
    recorder = SymfonicRecorder(handler=telemetry.handler(), max_open_runs=2)

    async def endless() -> AsyncIterator[Any]:
        yield AssistantMessage(content=[TextBlock("thinking")], model="m", message_id="msg_1")
        await asyncio.Event().wait()

    async def unread() -> None:
        for _ in range(4):
            stream = recorder.session(name="claude").record(endless())
            await stream.__anext__()

    asyncio.run(unread())
    assert recorder.open_runs <= 2
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "abandoned"}) >= 1


def test_bad_arguments_get_clear_errors() -> None:
    checks.assert_bad_arguments_rejected(SymfonicRecorder)


# --- loops ------------------------------------------------------------------------------------


def test_three_identical_lookups_are_one_looping_run(
    telemetry: InMemoryTelemetry, tmp_path: Path, entry: Any
) -> None:
    recorder = SymfonicRecorder(handler=telemetry.handler())
    with serving(ScriptedAnthropic(tool_turns=3)) as script, tenant_scope("acme"):
        entry(recorder, options(script, tmp_path))
    checks.assert_three_lookups_looped(
        telemetry, None, span="invoke_agent claude", repeated_calls=None, tool=TOOL
    )


def test_the_loop_options_reach_the_handler(telemetry: InMemoryTelemetry, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="not both"):
        SymfonicRecorder(handler=telemetry.handler(), runaway_calls=2)
    own = SymfonicRecorder(runaway_calls=3, loop_threshold=5)
    assert own.handler.loop_limits.runaway == 3 and own.handler.loop_limits.threshold == 5
    recorder = SymfonicRecorder(handler=telemetry.handler(runaway_calls=2))
    with serving(ScriptedAnthropic(tool_turns=2)) as script, tenant_scope("acme"):
        run_query(recorder, options(script, tmp_path))  # three model calls past a budget of two
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET, tenant__id="acme") == 1


def _texts(telemetry: InMemoryTelemetry) -> str:
    return repr(
        [dict(s.attributes or {}) for s in telemetry.spans()]
        + [dict(e.attributes or {}) for s in telemetry.spans() for e in s.events]
    )


@pytest.mark.parametrize("capture", [False, True])
def test_prompt_answer_and_tool_payloads_only_with_content_capture(
    telemetry: InMemoryTelemetry, tmp_path: Path, capture: bool
) -> None:
    recorder = SymfonicRecorder(handler=telemetry.handler(capture_content=capture))
    with serving(ScriptedAnthropic(tool_turns=1)) as script, tenant_scope("acme"):
        run_query(recorder, options(script, tmp_path))
    seen = _texts(telemetry)
    for text in ("What is the weather?", "It is sunny.", "result for weather"):
        assert (text in seen) is capture, text
