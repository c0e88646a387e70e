"""Loops through the handler's own events: identical tool calls and the call budget.

Symfonic's ToolCallStart is read duck-typed (a pydantic model here, as Symfonic's are); model
calls are LLMEnd events. Every verdict is read while the run is still open (the looping run is
counted at detection), then again after its end.
"""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint
from pydantic import BaseModel

from symfonic_otel import OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.core.loops import counts, signature
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent, ToolResultEvent
from symfonic_otel.read.content import MAX_CONTENT_CHARS
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.loop_support import (
    all_loop_events,
    assert_no_text,
    looping,
    repeated,
    run_spans,
)

SECRET = "s3cr3t-argument-text"


class ToolCallStart(BaseModel):  # Symfonic's shape: a pydantic model, read duck-typed
    tool_call_id: str
    tool_name: str
    arguments: Any = None
    phase: str = "executing"
    run_id: str = ""


def _tool(h: OTelCallbackHandler, run: str, i: int, name: str, args: Any, phase: str = "") -> None:
    call_id = f"{run}-{i}"
    h.tool_call_start(
        ToolCallStart(
            tool_call_id=call_id,
            tool_name=name,
            arguments=args,
            phase=phase or "executing",
            run_id=run,
        )
    )
    if phase != "announced":
        h.tool_result(ToolResultEvent(call_id, name, "ok", run_id=run))


def _model(h: OTelCallbackHandler, run: str, i: int) -> None:
    h.llm_end(LLMEndEvent("gpt-4o", "", {}, run_id=run, node_name="react", iteration_index=i))


def _start(h: OTelCallbackHandler, run: str, tenant: str = "acme") -> None:
    with tenant_scope(tenant):
        h.agent_start(AgentStartEvent("q", run))


def _end(h: OTelCallbackHandler, run: str) -> None:
    h.agent_end(AgentEndEvent(run, "answer", 10.0, 1))


def test_three_identical_calls_count_one_looping_run_while_it_runs(
    telemetry: InMemoryTelemetry,
) -> None:
    h = telemetry.handler()
    _start(h, "r1")
    for i in range(2):
        _tool(h, "r1", i, "search", {"q": SECRET, "n": 1})
    assert looping(telemetry) == 0  # two identical calls: a retry, not a loop
    assert repeated(telemetry, tenant__id="acme") == 1
    _tool(h, "r1", 2, "search", {"n": 1, "q": SECRET})  # same arguments, other key order
    assert h.is_open("r1")
    assert looping(telemetry, semconv.LOOP_REPEATED_TOOL_CALL, tenant__id="acme") == 1
    for i in range(3, 6):
        _tool(h, "r1", i, "search", {"q": SECRET, "n": 1})
    assert looping(telemetry) == 1  # still one after six calls
    assert repeated(telemetry, tenant__id="acme") == 5  # every call past the first
    _end(h, "r1")
    assert looping(telemetry) == 1
    (run,) = run_spans(telemetry)
    events = all_loop_events(telemetry)
    assert events == [
        {
            semconv.LOOP_KIND: semconv.LOOP_REPEATED_TOOL_CALL,
            semconv.LOOP_COUNT: 3,
            semconv.GEN_AI_TOOL_NAME: "search",
        }
    ]
    attrs = run.attributes or {}
    assert attrs[semconv.RUN_TOOL_CALLS] == 6
    assert attrs[semconv.RUN_REPEATED_TOOL_CALLS] == 5
    assert attrs[semconv.RUN_INFERENCE_CALLS] == 0
    assert attrs[semconv.LOOP_KIND] == semconv.LOOP_REPEATED_TOOL_CALL
    assert_no_text(telemetry, SECRET)


def _looping_run(telemetry: InMemoryTelemetry) -> tuple[Any, Any]:
    """A handler and its run, still running: its third identical tool call made it loop."""
    h = telemetry.handler()
    _start(h, "r1")
    for i in range(3):
        _tool(h, "r1", i, "search", "same")
    run = h._core.runs.get("r1")
    assert run is not None
    return h, run


def test_the_event_is_on_the_run_span_at_detection(telemetry: InMemoryTelemetry) -> None:
    """Trace retention keeps a run whose run span has the event: it is there before the end."""
    h, run = _looping_run(telemetry)
    names = [event.name for event in run.span.events]  # type: ignore[attr-defined]
    assert names == [semconv.EVENT_LOOP_DETECTED]
    _end(h, "r1")


@pytest.mark.parametrize(
    "calls",
    [
        [("search", {"q": "a"}), ("search", {"q": "b"}), ("search", {"q": "c"})],
        [("search", {"q": "a"}), ("fetch", {"q": "a"}), ("read", {"q": "a"})],
        [("search", {"q": "a"}), ("search", {"q": "a"})],
    ],
    ids=["different-arguments", "different-tools", "two-calls"],
)
def test_no_loop_without_threshold_identical_calls(
    telemetry: InMemoryTelemetry, calls: list[tuple[str, Any]]
) -> None:
    h = telemetry.handler()
    _start(h, "r1")
    for i, (name, args) in enumerate(calls):
        _tool(h, "r1", i, name, args)
    _end(h, "r1")
    assert looping(telemetry) == 0
    assert all_loop_events(telemetry) == []


def test_non_consecutive_repeats_count(telemetry: InMemoryTelemetry) -> None:
    h = telemetry.handler()
    _start(h, "r1")
    plan = [("search", "x"), ("fetch", "1"), ("search", "x"), ("read", "2"), ("search", "x")]
    for i, (name, args) in enumerate(plan):
        _tool(h, "r1", i, name, args)
    assert looping(telemetry, semconv.LOOP_REPEATED_TOOL_CALL) == 1
    _end(h, "r1")


def test_the_announced_phase_never_doubles(telemetry: InMemoryTelemetry) -> None:
    h = telemetry.handler()
    _start(h, "r1")
    for i in range(2):  # each call announced by the model, then executed: two real calls
        _tool(h, "r1", 10 + i, "search", {"q": "a"}, phase="announced")
        _tool(h, "r1", i, "search", {"q": "a"})
    assert looping(telemetry) == 0
    assert repeated(telemetry) == 1
    _end(h, "r1")
    (run,) = run_spans(telemetry)
    assert (run.attributes or {})[semconv.RUN_TOOL_CALLS] == 2


def test_the_51st_model_call_exceeds_the_call_budget(telemetry: InMemoryTelemetry) -> None:
    h = telemetry.handler()
    _start(h, "r1", tenant="globex")
    for i in range(50):
        _model(h, "r1", i)
    assert looping(telemetry) == 0
    _model(h, "r1", 50)
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET, tenant__id="globex") == 1
    for i in range(51, 60):
        _model(h, "r1", i)
    assert looping(telemetry) == 1
    _end(h, "r1")
    (event,) = all_loop_events(telemetry)
    assert event == {semconv.LOOP_KIND: semconv.LOOP_CALL_BUDGET, semconv.LOOP_COUNT: 51}


def test_a_run_loops_once_whatever_it_does_next(telemetry: InMemoryTelemetry) -> None:
    h = telemetry.handler(runaway_calls=3)
    _start(h, "r1")
    for i in range(3):
        _tool(h, "r1", i, "search", "x")
    for i in range(5):
        _model(h, "r1", i)
    _end(h, "r1")
    assert looping(telemetry) == 1
    assert len(all_loop_events(telemetry)) == 1


def test_options_take_effect(telemetry: InMemoryTelemetry) -> None:
    h = telemetry.handler(loop_threshold=2, runaway_calls=4)
    _start(h, "r1")
    _tool(h, "r1", 0, "search", "x")
    _tool(h, "r1", 1, "search", "x")
    _end(h, "r1")
    _start(h, "r2")
    for i in range(5):
        _model(h, "r2", i)
    _end(h, "r2")
    assert looping(telemetry, semconv.LOOP_REPEATED_TOOL_CALL) == 1
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET) == 1
    assert h.loop_limits.threshold == 2 and h.loop_limits.runaway == 4


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("loop_threshold", 1),
        ("loop_threshold", True),
        ("loop_threshold", "3"),
        ("runaway_calls", 0),
        ("runaway_calls", 2.5),
    ],
)
def test_bad_options_name_the_argument(option: str, value: object) -> None:
    with pytest.raises(ValueError, match=option):
        OTelCallbackHandler(**{option: value})


def test_separate_runs_and_tenants_are_judged_apart(telemetry: InMemoryTelemetry) -> None:
    h = telemetry.handler()
    _start(h, "a", tenant="acme")
    _start(h, "b", tenant="globex")
    for i in range(2):  # two each: neither run repeats three times
        _tool(h, "a", i, "search", "x")
        _tool(h, "b", i, "search", "x")
    _tool(h, "b", 2, "search", "x")
    _end(h, "a")
    _end(h, "b")
    assert looping(telemetry, tenant__id="globex") == 1
    assert looping(telemetry, tenant__id="acme") == 0


def test_histograms_per_agent_and_outcome_without_tenant(telemetry: InMemoryTelemetry) -> None:
    h = telemetry.handler(agent_name="support")
    _start(h, "r1")
    for i in range(3):
        _model(h, "r1", i)
        _tool(h, "r1", i, "search", str(i))
    _end(h, "r1")
    for name, expected in (
        (semconv.INVOKE_AGENT_INFERENCE_CALLS.name, 3),
        (semconv.INVOKE_AGENT_TOOL_CALLS.name, 3),
    ):
        ((attrs, point),) = telemetry.points(name)
        assert isinstance(point, HistogramDataPoint)
        assert attrs == {semconv.GEN_AI_AGENT_NAME: "support", semconv.RUN_OUTCOME: "completed"}
        assert point.sum == expected and point.count == 1
        assert tuple(point.explicit_bounds) == semconv.CALL_COUNT_BUCKETS


def test_abandoned_runs_record_their_counts(telemetry: InMemoryTelemetry) -> None:
    h = telemetry.handler()
    _start(h, "r1")
    _model(h, "r1", 0)
    assert h.close_open_runs() == 1
    ((attrs, point),) = telemetry.points(semconv.INVOKE_AGENT_INFERENCE_CALLS.name)
    assert attrs[semconv.RUN_OUTCOME] == "abandoned"
    assert isinstance(point, HistogramDataPoint) and point.sum == 1


def test_capture_on_puts_the_arguments_on_the_event(telemetry: InMemoryTelemetry) -> None:
    h = telemetry.handler(capture_content=True)
    _start(h, "r1")
    for i in range(3):
        _tool(h, "r1", i, "search", {"q": SECRET})
    _end(h, "r1")
    (event,) = all_loop_events(telemetry)
    assert SECRET in str(event[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])


@pytest.mark.parametrize(
    ("length", "truncated"), [(MAX_CONTENT_CHARS, False), (MAX_CONTENT_CHARS + 1, True)]
)
def test_loop_event_arguments_past_the_capture_limit_are_cut_and_flagged(
    telemetry: InMemoryTelemetry, length: int, truncated: bool
) -> None:
    h = telemetry.handler(capture_content=True)
    _start(h, "r1")
    for i in range(3):
        _tool(h, "r1", i, "search", "a" * length)
    _end(h, "r1")
    (event,) = all_loop_events(telemetry)
    assert event[semconv.GEN_AI_TOOL_CALL_ARGUMENTS] == "a" * min(length, MAX_CONTENT_CHARS)
    assert event.get(semconv.CONTENT_TRUNCATED, "absent") == (True if truncated else "absent")


def test_seeded_series_and_looping_exemplar(telemetry: InMemoryTelemetry) -> None:
    """A tenant's two looping-run series exist at zero from its first run; the count made at
    detection carries the run span as its exemplar."""
    h = telemetry.handler()
    _start(h, "r1")
    seeded = telemetry.points(semconv.LOOPING_RUNS.name, include_zeros=True)
    assert {attrs[semconv.LOOP_KIND] for attrs, _ in seeded} == set(semconv.LOOP_KINDS)
    for i in range(3):
        _tool(h, "r1", i, "search", "x")
    run = h._core.runs.get("r1")
    assert run is not None
    span_id = run.span.get_span_context().span_id
    metric = telemetry.metrics()[semconv.LOOPING_RUNS.name]
    exemplars = [e for p in metric.data.data_points for e in p.exemplars]
    assert [e.span_id for e in exemplars] == [span_id]
    _end(h, "r1")


def test_signature_is_shape_independent() -> None:
    assert signature("t", {"a": 1, "b": [1, 2]}) == signature("t", '{"b": [1, 2], "a": 1}')
    assert signature("t", {"a": 1}) != signature("u", {"a": 1})
    assert signature("t", "plain") == signature("t", " plain ")
    assert signature("t", {1: "x", "y": 2}) == signature("t", {1: "x", "y": 2})


def test_a_hostile_argument_never_raises(telemetry: InMemoryTelemetry) -> None:
    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no")

        def __str__(self) -> str:
            raise RuntimeError("no")

    h = telemetry.handler()
    _start(h, "r1")
    for i in range(3):
        _tool(h, "r1", i, "search", {"x": Hostile()})
    _end(h, "r1")
    (run,) = run_spans(telemetry)
    assert (run.attributes or {})[semconv.RUN_TOOL_CALLS] == 3
    assert telemetry.value(semconv.DROPPED_EVENTS.name) == 0


def test_a_framework_agent_name_labels_its_loop_series(telemetry: InMemoryTelemetry) -> None:
    h = telemetry.handler()
    with tenant_scope("acme"):
        h.agent_start(AgentStartEvent("q", "r1"), attributes={semconv.GEN_AI_AGENT_NAME: "bot"})
    for i in range(3):
        _tool(h, "r1", i, "search", "x")
    _end(h, "r1")
    assert looping(telemetry, gen_ai__agent__name="bot") == 1
    assert repeated(telemetry, gen_ai__agent__name="bot") == 2
    ((attrs, _),) = telemetry.points(semconv.INVOKE_AGENT_TOOL_CALLS.name)
    assert attrs[semconv.GEN_AI_AGENT_NAME] == "bot"


class _Listed(BaseModel):
    q: list[int]


class _Named:
    """An argument JSON cannot encode: its text (``str``) is what it says."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


class _Hostile:
    """Arguments that raise when read: each object stands for itself."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def model_dump(self) -> dict[str, Any]:
        raise RuntimeError("unreadable")

    def __repr__(self) -> str:
        return f"_Hostile({self.tag})"

    def __str__(self) -> str:
        raise RuntimeError("unreadable")


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (None, ""),
        ('{"q": 1}', {"q": 1}),
        ('  {"q": 1}', {"q": 1}),
        (_Listed(q=[1]), {"q": [1]}),
        (_Named("x"), _Named("x")),
    ],
    ids=[
        "none-is-empty",
        "json-text-is-its-mapping",
        "leading-blanks",
        "model-is-its-fields",
        "equal-text",
    ],
)
def test_the_same_arguments_in_any_shape_are_one_call(one: object, other: object) -> None:
    assert signature("search", one) == signature("search", other)


class _Unprintable(_Hostile):
    """Arguments that cannot even be shown: the object's identity stands for it."""

    def __repr__(self) -> str:
        raise RuntimeError("unprintable")


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (["x"], ["y"]),
        (_Unprintable("a"), _Unprintable("a")),
        (_Hostile("a"), _Hostile("b")),
        ([{1: "a", "b": 2}], [{1: "a", "b": 3}]),
        (_Listed(q=[1]), _Listed(q=[2])),
    ],
    ids=["lists", "unprintable", "unreadable", "unsortable-keys", "models"],
)
def test_different_arguments_are_different_calls(one: object, other: object) -> None:
    assert signature("search", one) != signature("search", other)


def test_arguments_known_only_later_are_compared_without_counting_again(
    telemetry: InMemoryTelemetry,
) -> None:
    """``tool_arguments`` names calls already counted: they loop, they are not counted twice."""
    h = telemetry.handler()
    _start(h, "r1")
    for _ in range(3):
        h.tool_arguments("r1", "search", {"q": "a"})
    assert looping(telemetry) == 1
    assert repeated(telemetry) == 2
    _end(h, "r1")
    (event,) = all_loop_events(telemetry)
    assert "search" in event.values()
    (run,) = run_spans(telemetry)
    assert (run.attributes or {})[semconv.RUN_TOOL_CALLS] == 0


def test_the_run_span_has_its_counts_at_detection(telemetry: InMemoryTelemetry) -> None:
    """A run still running when it loops shows its counts so far on its span, as ``counts``."""
    h, run = _looping_run(telemetry)
    expected = {
        semconv.RUN_INFERENCE_CALLS: 0,
        semconv.RUN_TOOL_CALLS: 3,
        semconv.RUN_REPEATED_TOOL_CALLS: 2,
    }
    attrs = dict(run.span.attributes or {})  # type: ignore[attr-defined]
    assert {key: attrs.get(key) for key in expected} == expected
    assert {key: counts(run)[key] for key in expected} == expected
    _end(h, "r1")
