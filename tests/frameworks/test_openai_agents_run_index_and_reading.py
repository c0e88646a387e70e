"""The Agents SDK processor at the edges its other tests leave alone.

Each test here fails on one plausible slip in the processor's bookkeeping: the trace's newest run
as the fallback owner (not its oldest), every run left open when its trace ends (not only the
first), the most telling span error winning whatever the order the spans end in, and the group
ids remembered exactly up to ``max_open_runs``. Spans are duck-typed, fed straight to the
processor, as in the robustness tests. Also: a Responses message item read whole, with its role,
and a token count of zero, which is a count.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.invocation import FrameworkRun, RunIndex
from symfonic_otel.openai_agents import SymfonicTracingProcessor, read
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.openai_agents_support import sdk_span as _span

RUNS = "symfonic.agent.runs"
BAILS = "symfonic.react.silent_bails"
_ERRORS = {
    "max_turns": {"message": "Max turns exceeded", "data": {"max_turns": 3}},
    "guardrail": {"message": "Guardrail tripwire", "data": {"guardrail": "g"}},
    "error": {"message": "boom", "data": None},
}


def _start_run(processor: SymfonicTracingProcessor, task: str, trace_id: str) -> None:
    processor.on_span_start(_span("task", task, trace_id, None))
    processor.on_span_start(_span("agent", f"{task}-agent", trace_id, task, name="a"))


def _run(key: str, trace_id: str = "t") -> FrameworkRun:
    return FrameworkRun(key, group=trace_id)


def test_a_span_of_no_indexed_parent_falls_back_to_the_trace_s_newest_run() -> None:
    index = RunIndex(max_runs=4, max_keys=4)
    outer, inner, other = _run("outer"), _run("inner"), _run("other", trace_id="u")
    for run in (outer, inner, other):
        index.add(run)
    assert index.owner("unindexed", "t") is inner  # the newest of its trace, not the oldest
    assert index.owner(None, "u") is other
    index.pop("inner")
    assert index.owner("unindexed", "t") is outer


@pytest.mark.parametrize("left_open", [1, 2, 3])
def test_every_run_left_open_ends_abandoned_when_its_trace_ends(
    telemetry: InMemoryTelemetry, left_open: int
) -> None:
    """Several ``Runner.run`` in one ``trace(...)`` block, none of whose ends arrived."""
    processor = SymfonicTracingProcessor(handler=telemetry.handler())
    for n in range(left_open):
        _start_run(processor, f"task{n}", "shared")
    _start_run(processor, "elsewhere", "other")
    processor.on_trace_end(SimpleNamespace(trace_id="shared"))  # type: ignore[arg-type]
    assert processor.open_runs == 1  # only the other trace's run
    assert telemetry.value(RUNS, {semconv.RUN_OUTCOME: "abandoned"}) == left_open
    processor.on_trace_end(SimpleNamespace(trace_id="other"))  # type: ignore[arg-type]
    assert processor.open_runs == 0


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("error", "max_turns", "max_turns"),
        ("max_turns", "error", "max_turns"),
        ("error", "guardrail", "guardrail"),
        ("guardrail", "error", "guardrail"),
        ("guardrail", "max_turns", "max_turns"),
        ("max_turns", "guardrail", "max_turns"),
    ],
)
def test_the_most_telling_span_error_decides_the_run_whatever_the_order(
    telemetry: InMemoryTelemetry, first: str, second: str, expected: str
) -> None:
    processor = SymfonicTracingProcessor(handler=telemetry.handler())
    with tenant_scope("acme"):
        _start_run(processor, "task", "t")
    processor.on_span_start(_span("turn", "turn", "t", "task-agent"))
    processor.on_span_end(_span("turn", "turn", "t", "task-agent", error=_ERRORS[first]))
    processor.on_span_end(_span("agent", "task-agent", "t", "task", error=_ERRORS[second]))
    processor.on_span_end(_span("task", "task", "t", None))
    assert processor.open_runs == 0 and processor.internal_failures() == {}

    run = telemetry.span("invoke_agent a")
    assert run.attributes is not None
    bails = telemetry.value(BAILS, {semconv.TENANT_ID: "acme"})
    if expected == "max_turns":
        assert bails == 1
        assert run.attributes[semconv.RUN_STOP_REASON] == semconv.STOP_REASON_RECURSION_LIMIT
    else:
        assert bails == 0
        assert run.attributes[semconv.RUN_STOP_REASON] == semconv.STOP_REASON_ERROR
        assert run.attributes[semconv.ERROR_TYPE] == semconv.GUARDRAIL_ERROR_TYPE


@pytest.mark.parametrize(("traces", "remembered"), [(2, [0, 1]), (3, [1, 2])])
def test_group_ids_are_kept_for_max_open_runs_traces_exactly(
    telemetry: InMemoryTelemetry, traces: int, remembered: list[int]
) -> None:
    processor = SymfonicTracingProcessor(handler=telemetry.handler(), max_open_runs=2)
    for n in range(traces):
        processor.on_trace_start(SimpleNamespace(trace_id=f"t{n}", group_id=f"g{n}"))  # type: ignore[arg-type]
    for n in range(traces):  # one run at a time: the run cap plays no part
        _start_run(processor, f"task{n}", f"t{n}")
        processor.on_span_end(_span("agent", f"task{n}-agent", f"t{n}", f"task{n}"))
        processor.on_span_end(_span("task", f"task{n}", f"t{n}", None))
    conversations = sorted(
        str(span.attributes.get(semconv.GEN_AI_CONVERSATION_ID))
        for span in telemetry.spans()
        if span.name == "invoke_agent a"
        and span.attributes is not None
        and semconv.GEN_AI_CONVERSATION_ID in span.attributes
    )
    assert conversations == [f"g{n}" for n in remembered]
    assert processor.open_runs == 0


def test_a_responses_message_item_with_its_role_is_read_as_text() -> None:
    """A ``ResponseOutputMessage`` dumped whole carries ``role`` beside ``type``; its parts are
    ``output_text``."""
    item = ResponseOutputMessage(
        id="m1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text="Sunny.", annotations=[])],
    ).model_dump()
    shape = read.output_shape([item])
    assert shape is not None
    assert (shape.text, shape.tool_calls, shape.blank, shape.content_type) == (
        "Sunny.",
        0,
        False,
        "str",
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"input_tokens": 0, "output_tokens": 4}, {"input_tokens": 0, "output_tokens": 4}),
        ({"prompt_tokens": 0, "completion_tokens": 0}, {"input_tokens": 0, "output_tokens": 0}),
        ({"input_tokens": -1, "output_tokens": 4}, {"output_tokens": 4}),
    ],
)
def test_a_zero_token_count_is_a_count_and_a_negative_one_is_not(
    raw: dict[str, int], expected: dict[str, int]
) -> None:
    assert read.usage(raw) == expected
