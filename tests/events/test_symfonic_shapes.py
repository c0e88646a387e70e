"""Real Symfonic agent shapes through the core handler: the whole trace, metrics and verdicts.

Each scenario replays the event sequence a Symfonic agent emits (``event_scripts``, built from
Symfonic's own event shapes, not this package's dataclasses) and checks the exported span tree,
the ``gen_ai.*`` and ``symfonic.*`` attributes, the metrics, the run outcome, the silent-bail
verdict and the pause, that nothing was lost to an internal error and that no state is left.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import event_scripts as es
from tests.support import symfonic_events as sym

RUN = "invoke_agent symfonic"
CHAT = "chat gpt-4o"


def _base() -> datetime:
    return datetime.now(UTC) - timedelta(seconds=10)


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _children(telemetry: InMemoryTelemetry, parent: ReadableSpan) -> list[str]:
    span_id = parent.context.span_id if parent.context is not None else None
    return sorted(
        s.name for s in telemetry.spans() if s.parent is not None and s.parent.span_id == span_id
    )


def _parent_of(span: ReadableSpan, parent: ReadableSpan) -> bool:
    return (
        span.parent is not None
        and parent.context is not None
        and span.parent.span_id == parent.context.span_id
    )


def _drops(telemetry: InMemoryTelemetry) -> Counter[tuple[str, str]]:
    found: Counter[tuple[str, str]] = Counter()
    for attrs, value in telemetry.points("symfonic.telemetry.dropped_events"):
        assert isinstance(value, int | float)
        found[attrs["symfonic.telemetry.event"], attrs["symfonic.telemetry.drop_reason"]] += int(
            value
        )
    return found


def _iterations(telemetry: InMemoryTelemetry) -> tuple[int, float]:
    """(runs observed, iterations in all) of ``symfonic.react.iterations``."""
    ((_, point),) = telemetry.points("symfonic.react.iterations")
    assert isinstance(point, HistogramDataPoint)
    return point.count, point.sum


def _runs(telemetry: InMemoryTelemetry) -> list[tuple[dict[str, Any], Any]]:
    return sorted(telemetry.points("symfonic.agent.runs"), key=repr)


def _assert_clean(telemetry: InMemoryTelemetry, handler: OTelCallbackHandler) -> None:
    """Nothing lost to a handler failure, nothing left open, nothing private exported."""
    assert not any(reason == "internal_error" for _, reason in _drops(telemetry))
    assert handler.open_runs == 0
    assert telemetry.unended_spans == []
    exported = repr([(s.attributes, [e.attributes for e in s.events]) for s in telemetry.spans()])
    for secret in ("4242", es.PAUSE_TOKEN, "Be brief"):
        assert secret not in exported


def _tools(telemetry: InMemoryTelemetry) -> dict[str, ReadableSpan]:
    return {
        _attrs(s)["gen_ai.tool.name"]: s
        for s in telemetry.spans()
        if s.name.startswith("execute_tool")
    }


# --- multi-iteration ReAct with parallel tools -------------------------------------------------


@pytest.mark.parametrize("failing", [None, "weather"])
async def test_react_with_parallel_tool_calls(
    telemetry: InMemoryTelemetry, failing: str | None
) -> None:
    handler = telemetry.handler(node_spans=True)
    await es.play(handler, es.react_parallel_tools("r1", _base(), failing=failing))

    run = telemetry.span(RUN)
    assert _children(telemetry, run) == [
        "invoke_node react",
        "invoke_node react",
        "invoke_node tools",
    ]
    tools_node = telemetry.span("invoke_node tools")
    # The announced phase makes no span: one span per executed call, both under the tools node.
    tools = _tools(telemetry)
    assert sorted(tools) == ["search", "weather"]
    assert _children(telemetry, tools_node) == ["execute_tool search", "execute_tool weather"]
    search, weather = tools["search"], tools["weather"]
    assert _attrs(search)["gen_ai.tool.call.id"] == "run-A"
    assert _attrs(weather)["gen_ai.tool.call.id"] == "run-B"
    # Parallel: both started before either returned, and they returned in reverse order.
    assert search.start_time is not None and weather.start_time is not None
    assert search.end_time is not None and weather.end_time is not None
    assert search.start_time <= weather.start_time <= weather.end_time <= search.end_time
    if failing:
        assert weather.status.status_code is StatusCode.ERROR
        assert _attrs(weather)["error.type"] == "_OTHER"
    else:
        assert weather.status.status_code is StatusCode.UNSET
    assert search.status.status_code is StatusCode.UNSET

    chats = sorted(
        (s for s in telemetry.spans() if s.name == CHAT),
        key=lambda s: _attrs(s)["symfonic.react.iteration_index"],
    )
    assert [_attrs(c)["symfonic.react.iteration_index"] for c in chats] == [0, 1]
    for chat in chats:
        parent = next(s for s in telemetry.spans() if s.context is not None and _parent_of(chat, s))
        assert parent.name == "invoke_node react"
        attrs = _attrs(chat)
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.provider.name"] == "openai"
        assert attrs["gen_ai.request.model"] == "gpt-4o"
        assert attrs["gen_ai.request.temperature"] == 0.2  # LLMPreCall's invocation_params
        assert attrs["gen_ai.usage.input_tokens"] == 900
        assert attrs["symfonic.node.name"] == "react"
        assert attrs["symfonic.run.id"] == "r1"
        assert "gen_ai.input.messages" not in attrs and "gen_ai.tool.definitions" not in attrs

    attrs = _attrs(run)
    assert attrs["symfonic.run.outcome"] == "completed"
    assert attrs["symfonic.response.empty"] is False
    assert "symfonic.react.termination_reason" not in attrs
    assert "symfonic.run.paused" not in attrs
    durations = telemetry.points("gen_ai.execute_tool.duration")
    by_tool = {a["gen_ai.tool.name"]: a.get("error.type") for a, _ in durations}
    assert by_tool == {"search": None, "weather": "_OTHER" if failing else None}
    assert _iterations(telemetry) == (1, 2)
    assert telemetry.value("symfonic.react.silent_bails") == 0
    assert telemetry.value("gen_ai.client.operation.duration") == 2
    assert _drops(telemetry) == Counter()
    _assert_clean(telemetry, handler)


async def test_a_tool_that_raises_fails_its_node_and_the_run(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(node_spans=True)
    await es.play(handler, es.tool_raises("r1", _base()))

    run, node = telemetry.span(RUN), telemetry.span("invoke_node tools")
    assert node.status.status_code is StatusCode.ERROR
    assert _attrs(node)["error.type"] == "KeyError"
    tool = telemetry.span("execute_tool search")
    assert _parent_of(tool, node)
    assert _attrs(tool)["symfonic.step.unfinished"] is True  # it never returned
    attrs = _attrs(run)
    assert attrs["symfonic.run.outcome"] == "error"
    assert attrs["error.type"] == "KeyError"  # the failing node's: AgentEnd names no type
    assert attrs["symfonic.run.stop_reason"] == "error"
    assert "symfonic.response.empty" not in attrs
    assert run.status.status_code is StatusCode.ERROR
    assert _runs(telemetry) == [
        (
            {
                "tenant.id": "unknown",
                "gen_ai.agent.name": "symfonic",
                "symfonic.run.outcome": "error",
            },
            1,
        )
    ]
    assert telemetry.points("gen_ai.execute_tool.duration") == []
    assert _drops(telemetry) == Counter()
    _assert_clean(telemetry, handler)


async def test_node_error_names_the_run_error_without_node_spans(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    await es.play(handler, es.tool_raises("r1", _base()))
    assert [s.name for s in telemetry.spans() if s.name.startswith("invoke_node")] == []
    assert _attrs(telemetry.span(RUN))["error.type"] == "KeyError"
    assert _drops(telemetry) == Counter()
    _assert_clean(telemetry, handler)


# --- silent bail and synthesis --------------------------------------------------------------


@pytest.mark.parametrize("recovered", [True, False])
async def test_silent_bail_and_the_synthesis_fallback(
    telemetry: InMemoryTelemetry, recovered: bool
) -> None:
    handler = telemetry.handler()
    await es.play(handler, es.silent_bail_then_synthesis("r1", _base(), recovered=recovered))

    run = telemetry.span(RUN)
    assert _children(telemetry, run) == [CHAT, CHAT]
    synthesis = next(
        s
        for s in telemetry.spans()
        if _attrs(s).get("symfonic.node.name") == "react_synthesize_fallback"
    )
    assert _attrs(synthesis)["symfonic.synthesis.recovered"] is recovered
    attrs = _attrs(run)
    assert attrs["symfonic.react.termination_reason"] == "tool_calls_with_no_text"
    assert attrs["symfonic.response.empty"] is (not recovered)
    assert [e.name for e in run.events] == ["symfonic.react.loop_end"]
    assert dict(run.events[0].attributes or {}) == {
        "symfonic.react.termination_reason": "tool_calls_with_no_text",
        "symfonic.react.iteration_index": 0,
        "symfonic.react.content_type": "list",
        "symfonic.react.has_tool_calls": True,
        "symfonic.react.tool_call_count": 1,
    }
    assert telemetry.points("symfonic.react.silent_bails") == [
        (
            {
                "tenant.id": "unknown",
                "gen_ai.agent.name": "symfonic",
                "symfonic.react.termination_reason": "tool_calls_with_no_text",
            },
            1,
        )
    ]
    assert telemetry.points("symfonic.react.synthesis_fallbacks") == [
        (
            {
                "tenant.id": "unknown",
                "gen_ai.request.model": "gpt-4o",
                "symfonic.synthesis.recovered": recovered,
            },
            1,
        )
    ]
    assert _iterations(telemetry) == (1, 1)  # the synthesis call is no loop iteration
    assert _runs(telemetry)[0][0]["symfonic.response.empty"] is (not recovered)
    assert _drops(telemetry) == Counter()
    _assert_clean(telemetry, handler)


# --- pauses -----------------------------------------------------------------------------------


async def test_ask_user_pause_then_resume_as_a_new_run(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    await es.play(handler, es.ask_user_then_resume("turn-1", "turn-2", _base()))

    runs = {_attrs(s)["symfonic.run.id"]: s for s in telemetry.spans() if s.name == RUN}
    paused, resumed = _attrs(runs["turn-1"]), _attrs(runs["turn-2"])
    assert paused["symfonic.run.outcome"] == "completed"
    assert paused["symfonic.run.paused"] is True
    assert paused["symfonic.run.pause_kind"] == "ask_user"
    assert "symfonic.response.empty" not in paused  # waiting for its user, not blank
    assert [e.name for e in runs["turn-1"].events] == ["symfonic.run.paused"]
    # The pause event says what the run waits on (no interrupt name for a question).
    assert dict(runs["turn-1"].events[0].attributes or {}) == {
        "symfonic.run.pause_kind": "ask_user"
    }
    # The graph paused inside the tool: the ask_user call ended with its run, unfinished; the
    # resumed run ran it again, to its result.
    asks = {
        _attrs(s)["symfonic.run.id"]: s for s in telemetry.spans() if s.name.endswith("ask_user")
    }
    assert _parent_of(asks["turn-1"], runs["turn-1"])
    assert _attrs(asks["turn-1"])["symfonic.step.unfinished"] is True
    assert _parent_of(asks["turn-2"], runs["turn-2"])
    assert "symfonic.step.unfinished" not in _attrs(asks["turn-2"])
    assert telemetry.value("gen_ai.execute_tool.duration") == 1
    # The resumed run is a run of its own, answered.
    assert "symfonic.run.paused" not in resumed
    assert resumed["symfonic.response.empty"] is False
    assert runs["turn-1"].context is not None and runs["turn-2"].context is not None
    assert runs["turn-1"].context.trace_id != runs["turn-2"].context.trace_id
    assert _runs(telemetry) == [
        (
            {
                "tenant.id": "unknown",
                "gen_ai.agent.name": "symfonic",
                "symfonic.run.outcome": "completed",
                "symfonic.response.empty": False,
            },
            1,
        ),
        (
            {
                "tenant.id": "unknown",
                "gen_ai.agent.name": "symfonic",
                "symfonic.run.outcome": "completed",
                "symfonic.run.paused": True,
            },
            1,
        ),
    ]
    # The resumed run's call has iteration_index 1 (the conversation's earlier AI message):
    # one iteration of this run, not two.
    assert _iterations(telemetry) == (2, 2)
    assert telemetry.value("symfonic.react.silent_bails") == 0
    assert _drops(telemetry) == Counter()
    _assert_clean(telemetry, handler)


async def test_interrupt_pauses_the_run_and_its_loop_end_is_no_bail(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(capture_content=True)  # even captured, no token is exported
    await es.play(handler, es.interrupted("r1", _base()))

    run = telemetry.span(RUN)
    attrs = _attrs(run)
    assert attrs["symfonic.run.paused"] is True
    assert attrs["symfonic.run.pause_kind"] == "interrupt"
    assert attrs["symfonic.run.interrupt_name"] == "approval_required"
    assert "symfonic.response.empty" not in attrs
    assert "symfonic.react.termination_reason" not in attrs
    assert [e.name for e in run.events] == ["symfonic.run.paused", "symfonic.react.loop_end"]
    assert dict(run.events[0].attributes or {}) == {
        "symfonic.run.pause_kind": "interrupt",
        "symfonic.run.interrupt_name": "approval_required",
    }
    assert dict(run.events[1].attributes or {})["symfonic.run.paused"] is True
    assert _attrs(telemetry.span("execute_tool transfer"))["symfonic.step.unfinished"] is True
    assert telemetry.value("symfonic.react.silent_bails") == 0
    exported = repr([(s.attributes, [e.attributes for e in s.events]) for s in telemetry.spans()])
    assert es.PAUSE_TOKEN not in exported and "i-0123456789ab" not in exported
    assert '{"amount"' not in exported  # the interrupt's payload is not recorded
    assert _drops(telemetry) == Counter()
    assert handler.open_runs == 0


# --- nested agents ----------------------------------------------------------------------------


async def test_a_sub_agent_run_nests_under_the_parent_run(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    await es.play(handler, es.nested("parent", "child", _base()))

    runs = {_attrs(s)["symfonic.run.id"]: s for s in telemetry.spans() if s.name == RUN}
    parent, child = runs["parent"], runs["child"]
    assert _parent_of(child, parent)
    assert _children(telemetry, parent) == [CHAT, CHAT, "execute_tool delegate", RUN]
    assert _children(telemetry, child) == [CHAT]  # its call went by run id, not the context
    delegate = telemetry.span("execute_tool delegate")
    assert delegate.start_time is not None and child.start_time is not None
    assert delegate.end_time is not None and child.end_time is not None
    assert delegate.start_time <= child.start_time <= child.end_time <= delegate.end_time
    assert _iterations(telemetry) == (2, 3)
    # The sub-agent's tool events name no run while two are open: not guessed, counted.
    assert "execute_tool lookup" not in [s.name for s in telemetry.spans()]
    assert _drops(telemetry) == Counter(
        {("tool_call_start", "malformed"): 1, ("tool_result", "malformed"): 1}
    )
    _assert_clean(telemetry, handler)


async def test_a_sub_agent_without_a_current_parent_is_a_trace_of_its_own(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    steps = [s for s in es.nested("parent", "child", _base()) if s[0] not in ("attach", "detach")]
    await es.play(handler, steps)
    runs = {_attrs(s)["symfonic.run.id"]: s for s in telemetry.spans() if s.name == RUN}
    assert runs["child"].parent is None
    assert runs["child"].context is not None and runs["parent"].context is not None
    assert runs["child"].context.trace_id != runs["parent"].context.trace_id
    _assert_clean(telemetry, handler)


# --- streaming --------------------------------------------------------------------------------


@pytest.mark.parametrize("bailed", [False, True])
async def test_streamed_run(telemetry: InMemoryTelemetry, bailed: bool) -> None:
    handler = telemetry.handler()
    steps = es.streamed("r1")
    if bailed:  # the streaming path cannot recover a bail: its unknown answer is empty
        loop_end = sym.ReactLoopEnd("r1", 0, "NoneType", False, 0, "no_content_no_tool_calls")
        steps.insert(-1, ("on_react_loop_end", loop_end))
    await es.play(handler, steps)

    chat = telemetry.span(CHAT)
    attrs = _attrs(chat)
    ttfc = attrs["gen_ai.response.time_to_first_chunk"]
    assert chat.start_time is not None and chat.end_time is not None
    assert 0.02 <= ttfc <= (chat.end_time - chat.start_time) / 1e9 - 0.02
    assert telemetry.value("gen_ai.client.operation.time_to_first_chunk") == 1
    run = _attrs(telemetry.span(RUN))
    if bailed:
        assert run["symfonic.response.empty"] is True
        assert run["symfonic.react.termination_reason"] == "no_content_no_tool_calls"
    else:
        assert "symfonic.response.empty" not in run  # final_response None: unknown
    assert _runs(telemetry)[0][0].get("symfonic.response.empty") is (True if bailed else None)
    assert _drops(telemetry) == Counter()
    _assert_clean(telemetry, handler)


# --- out of order, duplicated, unknown --------------------------------------------------------


async def test_disordered_duplicated_and_unknown_events(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(node_spans=True)
    await es.play(handler, es.disordered("r1", "stranger", _base()))

    run = telemetry.span(RUN)
    assert [s.name for s in telemetry.spans()].count(RUN) == 1
    assert _children(telemetry, run) == [CHAT, "execute_tool search"]
    roots = [s for s in telemetry.spans() if s.parent is None and s.name == CHAT]
    assert len(roots) == 3  # the early and late calls of r1, the stranger's call
    assert _attrs(telemetry.span("execute_tool search")).get("symfonic.step.unfinished") is None
    assert _drops(telemetry) == Counter(
        {
            ("llm_end", "unknown_run"): 3,
            ("agent_start", "duplicate"): 2,
            ("agent_end", "duplicate"): 1,
            ("tool_result", "unknown_call"): 2,
            ("tool_result", "malformed"): 1,
            ("node_end", "unknown_run"): 1,
            ("react_loop_end", "unknown_run"): 1,
        }
    )
    # A bail is counted whatever run it names: it is what operators page on.
    assert telemetry.value("symfonic.react.silent_bails") == 1
    assert telemetry.value("symfonic.agent.runs") == 1
    assert _attrs(run)["symfonic.response.empty"] is False
    assert _iterations(telemetry) == (1, 1)
    _assert_clean(telemetry, handler)
