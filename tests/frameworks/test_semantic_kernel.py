"""The Semantic Kernel adapter, on a real kernel with a scripted chat service (no network).

``SymfonicFilters().register(kernel)``. Semantic Kernel's cap raises nothing: after
``maximum_auto_invoke_attempts`` requests that all called functions, the non-streaming loop makes
one final request without function calling and returns it (a silent bail whose forced answer is
a synthesis fallback, recovered when it has text); the streaming loop just stops. An answer on
the last allowed attempt is no bail. Runs in the ``semantic-kernel`` environment that
``.ci/framework-envs`` builds.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support import adapter_checks as checks

pytest.importorskip("semantic_kernel", reason="needs the semantic-kernel extra")

from opentelemetry.trace import StatusCode
from semantic_kernel import Kernel
from semantic_kernel.exceptions import FunctionExecutionException, KernelInvokeException
from semantic_kernel.functions import kernel_function

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.semantic_kernel import SymfonicFilters
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.bail_support import bails_of
from tests.support.loop_support import looping, repeated
from tests.support.raising_support import assert_error_run
from tests.support.semantic_kernel_support import ScriptedChat, arguments, chat, kernel


def _kernel(telemetry: InMemoryTelemetry, model: ScriptedChat, **kwargs: Any) -> tuple[Kernel, Any]:
    plugin = kwargs.pop("plugin", None)
    filters = kwargs.pop("filters", None) or SymfonicFilters(handler=telemetry.handler(**kwargs))
    built = filters.register(kernel(model, plugin))
    function = built.add_function(plugin_name="agent", function_name="helper", prompt="{{$input}}")
    return built, function


def invoke(k: Kernel, fn: Any, args: Any) -> str:
    return str(asyncio.run(k.invoke(fn, args)))


def invoke_prompt(k: Kernel, fn: Any, args: Any) -> str:
    return str(asyncio.run(k.invoke_prompt("{{$input}}", function_name="helper", arguments=args)))


def invoke_stream(k: Kernel, fn: Any, args: Any) -> str:
    async def consume() -> str:
        texts: list[str] = []
        async for chunk in k.invoke_stream(fn, args):
            texts.extend(str(m) for m in chunk if getattr(m, "role", None) == "assistant")
        return "".join(texts)

    return asyncio.run(consume())


def _answers(
    telemetry: InMemoryTelemetry, model: ScriptedChat, entry: Any = invoke, **kwargs: Any
) -> None:
    """Runs ``model``'s kernel through ``entry`` for tenant ``acme``: it answers."""
    k, fn = _kernel(telemetry, model, **kwargs)
    with tenant_scope("acme"):
        assert entry(k, fn, arguments(input="q")) == "It is sunny."


ENTRY_POINTS = {"invoke": invoke, "invoke_prompt": invoke_prompt, "invoke_stream": invoke_stream}


entry = checks.entry_fixture(ENTRY_POINTS)


_fallbacks = checks.fallbacks


def _assert_capped(telemetry: InMemoryTelemetry, tenant: str) -> None:
    checks.assert_capped_silent_bail(telemetry, tenant)
    checks.assert_capped_run_span(telemetry, "invoke_agent helper")


# --- the cap: maximum_auto_invoke_attempts and the forced final request ------------------------


def test_the_attempt_cap_is_a_silent_bail_and_its_forced_answer_a_recovered_fallback(
    telemetry: InMemoryTelemetry,
) -> None:
    model = chat()
    k, fn = _kernel(telemetry, model)
    with tenant_scope("acme"):
        assert invoke(k, fn, arguments(attempts=3, input="q")) == "Probably sunny."

    assert model.calls == 4  # three attempts that called functions, then the forced request
    _assert_capped(telemetry, "acme")
    assert _fallbacks(telemetry, True) == 1 and _fallbacks(telemetry, False) == 0
    chats = [s for s in telemetry.spans() if s.name == "chat scripted"]
    assert len(chats) == 4
    assert (chats[-1].attributes or {})[semconv.SYNTHESIS_RECOVERED] is True
    assert len([s for s in telemetry.spans() if s.name == "execute_tool lookup"]) == 3
    assert (telemetry.span("invoke_agent helper").attributes or {})[semconv.RESPONSE_EMPTY] is False


def test_a_blank_forced_answer_is_an_unrecovered_fallback(telemetry: InMemoryTelemetry) -> None:
    k, fn = _kernel(telemetry, chat(forced=""))
    with tenant_scope("acme"):
        assert invoke(k, fn, arguments(attempts=2, input="q")) == ""
    _assert_capped(telemetry, "acme")
    assert _fallbacks(telemetry, False) == 1 and _fallbacks(telemetry, True) == 0
    assert (telemetry.span("invoke_agent helper").attributes or {})[semconv.RESPONSE_EMPTY] is True


def test_the_default_cap_of_five_and_every_entry_point(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    """Streaming makes no final request: the same bail, without a fallback."""
    model = chat()
    k, fn = _kernel(telemetry, model)
    with tenant_scope("acme"):
        entry(k, fn, arguments(input="q"))
    streamed = entry is invoke_stream
    assert model.calls == (5 if streamed else 6)
    _assert_capped(telemetry, "acme")
    assert _fallbacks(telemetry, True) == (0 if streamed else 1)


@pytest.mark.parametrize(("tool_turns", "bails"), [(2, 0), (3, 1)])
def test_an_answer_on_the_last_allowed_attempt_is_no_bail_and_one_past_is(
    telemetry: InMemoryTelemetry, entry: Any, tool_turns: int, bails: int
) -> None:
    """Three attempts: two tool turns then the answer fit; three tool turns force the answer."""
    k, fn = _kernel(telemetry, chat(tool_turns=tool_turns))
    with tenant_scope("acme"):
        entry(k, fn, arguments(attempts=3, input="q"))
    assert bails_of(telemetry, "acme") == bails
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1


def test_an_answer_within_the_budget_is_a_completed_run_with_our_span_shape(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    _answers(telemetry, chat(tool_turns=1), entry=entry)
    checks.assert_one_healthy_run(telemetry)
    assert _fallbacks(telemetry, True) + _fallbacks(telemetry, False) == 0
    run = telemetry.span("invoke_agent helper")
    assert (run.attributes or {})[semconv.RUN_STOP_REASON] == "end_turn"
    checks.assert_two_chats_and_the_tool_under(telemetry, run, input_tokens=None)


def test_a_blank_answer_is_a_silent_bail(telemetry: InMemoryTelemetry) -> None:
    k, fn = _kernel(telemetry, chat(tool_turns=0, answer=""))
    with tenant_scope("acme"):
        invoke(k, fn, arguments(input="q"))
    assert bails_of(telemetry, "acme", "no_content_no_tool_calls") == 1


# --- tenants ------------------------------------------------------------------------------------


def test_two_tenants_interleaved_on_one_filter_set(telemetry: InMemoryTelemetry) -> None:
    """Both tenants' runs are open at once (gathered on one loop); only the capped one bails."""
    filters = SymfonicFilters(handler=telemetry.handler())
    capped, capped_fn = _kernel(telemetry, chat(), filters=filters)
    healthy, healthy_fn = _kernel(telemetry, chat(tool_turns=1), filters=filters)

    async def both() -> None:
        await asyncio.gather(
            capped.invoke(capped_fn, arguments(attempts=2, input="q", tenant_id="acme")),
            healthy.invoke(healthy_fn, arguments(input="q", tenant_id="globex")),
        )

    asyncio.run(both())
    assert bails_of(telemetry, "acme") == 1
    assert bails_of(telemetry, "globex") == 0
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "globex"}) == 1
    stops = {semconv.RUN_STOP_REASON: "recursion_limit", semconv.TENANT_ID: "globex"}
    assert telemetry.value(semconv.STOP_REASONS.name, stops) == 0
    assert filters.open_runs == 0


# --- failures: the model's, a tool's, the adapter's ---------------------------------------------


def test_a_raising_model_reaches_the_caller_unchanged_and_the_run_is_an_error(
    telemetry: InMemoryTelemetry,
) -> None:
    """The filter re-raises what the function raised; ``kernel.invoke`` wraps it, as always."""
    k, fn = _kernel(telemetry, chat(fail=True))
    with tenant_scope("acme"), pytest.raises(KernelInvokeException) as raised:
        invoke(k, fn, arguments(input="q"))
    assert isinstance(raised.value.__cause__, FunctionExecutionException)
    assert isinstance(raised.value.__cause__.__cause__, ConnectionError)
    assert_error_run(telemetry, "acme", raised.value.__cause__)


def test_a_raising_tool_is_swallowed_by_the_kernel_and_the_run_completes(
    telemetry: InMemoryTelemetry,
) -> None:
    class Broken:
        @kernel_function(name="lookup", description="Look something up.")
        def lookup(self, q: str) -> str:
            raise KeyError(q)

    _answers(telemetry, chat(tool_turns=1), plugin=Broken())
    where = {semconv.TENANT_ID: "acme", semconv.RUN_OUTCOME: "completed"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    tool = telemetry.span("execute_tool lookup")
    assert tool.status.status_code is StatusCode.ERROR
    assert (tool.attributes or {})["error.type"] == "KeyError"


def test_a_failing_adapter_never_reaches_the_agent_and_is_counted_as_dropped(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    filters = SymfonicFilters(handler=telemetry.handler())

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("telemetry down")

    monkeypatch.setattr(filters._book, "start_tool", broken)
    _answers(telemetry, chat(tool_turns=1), filters=filters)
    dropped = {semconv.TELEMETRY_EVENT: "SymfonicFilters.tool_start"}
    assert telemetry.value(semconv.DROPPED_EVENTS.name, dropped) == 1
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1


def test_open_runs_are_bounded(telemetry: InMemoryTelemetry) -> None:
    """Streams never read hold their runs open; past ``max_open_runs`` the oldest is abandoned."""
    filters = SymfonicFilters(handler=telemetry.handler(), max_open_runs=2)
    k, fn = _kernel(telemetry, chat(tool_turns=0), filters=filters)

    async def unread() -> None:
        streams = [k.invoke_stream(fn, arguments(input="q")) for _ in range(4)]
        for stream in streams:  # each reaches the filter, whose wrapped reply is never read
            await stream.__anext__()

    asyncio.run(unread())
    assert filters.open_runs <= 2
    abandoned = {semconv.RUN_OUTCOME: "abandoned"}
    assert telemetry.value(semconv.AGENT_RUNS.name, abandoned) >= 1


def test_bad_arguments_get_clear_errors() -> None:
    checks.assert_bad_arguments_rejected(SymfonicFilters)


# --- loops ------------------------------------------------------------------------------------


def test_three_identical_lookups_are_one_looping_run(
    telemetry: InMemoryTelemetry, entry: Any
) -> None:
    _answers(telemetry, chat(tool_turns=3), entry=entry)
    checks.assert_three_lookups_looped(telemetry, None, repeated_calls=None)


def test_two_lookups_are_no_loop(telemetry: InMemoryTelemetry) -> None:
    k, fn = _kernel(telemetry, chat(tool_turns=2))
    with tenant_scope("acme"):
        invoke(k, fn, arguments(input="q"))
    assert looping(telemetry) == 0 and repeated(telemetry) == 1


@pytest.mark.parametrize("ours_first", [True, False])
def test_a_filter_that_terminates_the_loop_ends_the_run_on_the_function_results(
    telemetry: InMemoryTelemetry, entry: Any, ours_first: bool
) -> None:
    """Semantic Kernel returns the function results as the reply; no request follows. Whether
    the terminating filter wraps ours or ours wraps it, the run is no bail."""
    model = chat()
    filters = SymfonicFilters(handler=telemetry.handler())

    async def stop_after_first(context: Any, next: Any) -> None:
        await next(context)
        context.terminate = True

    k = kernel(model)
    if ours_first:
        filters.register(k)
    k.add_filter("auto_function_invocation", stop_after_first)
    if not ours_first:
        filters.register(k)
    fn = k.add_function(plugin_name="agent", function_name="helper", prompt="{{$input}}")
    with tenant_scope("acme"):
        entry(k, fn, arguments(attempts=3, input="q"))
    assert model.calls == 1
    assert bails_of(telemetry, "acme") == 0
    run = telemetry.span("invoke_agent helper")
    assert (run.attributes or {})[semconv.RUN_STOP_REASON] == "tool_use"
    assert len([s for s in telemetry.spans() if s.name == "chat scripted"]) == 1


def test_the_loop_options_reach_the_handler(telemetry: InMemoryTelemetry) -> None:
    with pytest.raises(TypeError, match="not both"):
        SymfonicFilters(handler=telemetry.handler(), runaway_calls=2)
    own = SymfonicFilters(runaway_calls=3, loop_threshold=5)
    assert own.handler.loop_limits.runaway == 3 and own.handler.loop_limits.threshold == 5
    k, fn = _kernel(telemetry, chat(tool_turns=3), loop_threshold=4)
    with tenant_scope("acme"):
        invoke(k, fn, arguments(input="q"))
    assert looping(telemetry) == 0
    k, fn = _kernel(telemetry, chat(tool_turns=2), runaway_calls=2)
    with tenant_scope("acme"):  # three model calls past a budget of two
        invoke(k, fn, arguments(input="q"))
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET, tenant__id="acme") == 1
    assert looping(telemetry) == 1


@pytest.mark.parametrize("capture", [False, True])
def test_answer_and_tool_payloads_only_with_content_capture(
    telemetry: InMemoryTelemetry, capture: bool
) -> None:
    k, fn = _kernel(telemetry, chat(tool_turns=1), capture_content=capture)
    with tenant_scope("acme"):
        invoke(k, fn, arguments(input="q"))
    seen = repr(
        [dict(s.attributes or {}) for s in telemetry.spans()]
        + [dict(e.attributes or {}) for s in telemetry.spans() for e in s.events]
    )
    for text in ("It is sunny.", "result for weather"):
        assert (text in seen) is capture, text


def test_a_prompt_function_called_as_a_tool_is_one_tool_call_of_the_run(
    telemetry: InMemoryTelemetry,
) -> None:
    model = chat(tool_turns=1, answer_call=3)  # the tool's own loop calls it once more
    filters = SymfonicFilters(handler=telemetry.handler())
    k = Kernel()
    k.add_service(model)
    k.add_function(plugin_name="weather", function_name="lookup", prompt="Weather for {{$q}}")
    filters.register(k)
    fn = k.add_function(plugin_name="agent", function_name="helper", prompt="{{$input}}")
    with tenant_scope("acme"):
        assert invoke(k, fn, arguments(input="q")) == "It is sunny."
    assert model.calls == 5  # the run's two requests and the tool's three (its own tool's one)
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1
    assert len([s for s in telemetry.spans() if s.name == "chat scripted"]) == 2
    assert len([s for s in telemetry.spans() if s.name == "execute_tool lookup"]) == 1
    assert filters.open_runs == 0
