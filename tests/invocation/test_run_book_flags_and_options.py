"""The run book's paired facts and option checks, on the real core handler and OTel SDK.

Each pins the one of two a planted bug would swap: the recovered flag over the adapter's own
answer flag for a forced answer, a failed forced answer that recovered nothing, the agent name
beside caller attributes, a span opened once however often it is asked; and the edges of the
option, usage and tenant readers.
"""

from __future__ import annotations

import pytest

from symfonic_otel import semconv
from symfonic_otel.core.loops import DEFAULT_LOOP_THRESHOLD, DEFAULT_RUNAWAY_CALLS
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.invocation import RunBook, Turn, bail_event, positive, tenant_in, token_counts
from symfonic_otel.invocation.guard import Guard
from symfonic_otel.invocation.loops import loop_handler
from symfonic_otel.invocation.runs import FrameworkRun, RunIndex
from symfonic_otel.invocation.verdicts import verdict_of
from symfonic_otel.logs import FailureLog
from symfonic_otel.testing.telemetry import InMemoryTelemetry

RUN_SPAN = "invoke_agent helper"


def _book(telemetry: InMemoryTelemetry, *, capture: bool = False) -> RunBook:
    return RunBook(telemetry.handler(capture_content=capture), "TestAdapter", 8)


def _run_attributes(telemetry: InMemoryTelemetry) -> dict[str, object]:
    return dict(telemetry.span(RUN_SPAN).attributes or {})


# --- answer flags ---------------------------------------------------------------------------


def test_a_forced_answer_that_recovered_nothing_is_empty_whatever_the_adapter_says(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    book.model_call(run, Turn.of([" "], 0), model="m-1", node=semconv.NODE_SYNTHESIZE_FALLBACK)
    book.end("r1", "forced", answered=True)
    assert _run_attributes(telemetry)[semconv.RESPONSE_EMPTY] is True


def test_a_forced_answer_whose_call_failed_recovered_nothing_even_with_text(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    synthesis = semconv.NODE_SYNTHESIZE_FALLBACK
    book.model_call(run, Turn.of(["partial"], 0), model="m-1", node=synthesis, error_type="E")
    assert run.recovered is False
    book.end("r1", "forced")
    assert _run_attributes(telemetry)[semconv.RESPONSE_EMPTY] is True


# --- the run's span -------------------------------------------------------------------------


def test_a_run_started_with_attributes_still_names_its_agent(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry)
    book.start("r1", "helper", attributes={"app.region": "eu"})
    book.end("r1", "answered", answer="42")
    attributes = _run_attributes(telemetry)
    assert attributes[semconv.GEN_AI_AGENT_NAME] == "helper"
    assert attributes["app.region"] == "eu"


def test_opening_a_run_again_opens_no_second_span(telemetry: InMemoryTelemetry) -> None:
    book = _book(telemetry)
    run = book.start("r1", "helper")
    assert run is not None
    book.open(run, query="again")
    book.end("r1", "answered", answer="42")
    assert [span.name for span in telemetry.spans()] == [RUN_SPAN]
    assert telemetry.value(semconv.DROPPED_EVENTS.name) == 0
    assert telemetry.value(semconv.AGENT_RUNS.name) == 1


def test_without_capture_the_run_span_holds_neither_query_nor_answer(
    telemetry: InMemoryTelemetry,
) -> None:
    book = _book(telemetry)
    book.start("r1", "helper", query="the secret question")
    book.end("r1", "answered", answer="the secret answer")
    text = str(_run_attributes(telemetry)) + str(
        [dict(e.attributes or {}) for e in telemetry.span(RUN_SPAN).events]
    )
    assert "secret" not in text


# --- verdicts and bails ---------------------------------------------------------------------


def test_a_raised_step_cap_bails_as_still_working_whatever_the_last_turn() -> None:
    run = FrameworkRun("r1", last=Turn.of(["text"], 0))
    verdict = verdict_of(
        run,
        "capped_raised",
        answered=None,
        final=None,
        error_type="GraphRecursionError",
        stop_reason="end_turn",
        duration_ms=1.0,
    )
    assert verdict.bail == "tool_calls_with_no_text"


def test_an_error_type_is_capped_at_128_characters() -> None:
    verdict = verdict_of(
        FrameworkRun("r1"),
        "error",
        answered=None,
        final=None,
        error_type="E" * 300,
        stop_reason="end_turn",
        duration_ms=1.0,
    )
    assert verdict.end.error_type == "E" * 128


def test_a_bail_after_a_text_turn_reports_its_content_type() -> None:
    event = bail_event("r1", 2, Turn.of(["text"], 1), "tool_calls_with_no_text")
    assert event.content_type == "str" and event.tool_call_count == 1
    assert bail_event("r1", 2, Turn.of([], 1), "tool_calls_with_no_text").content_type == (
        "NoneType"
    )


def test_a_finish_reason_is_capped_at_64_characters() -> None:
    assert Turn.of(["x"], 0, "f" * 100).finish_reason == "f" * 64


# --- usage, tenants, options ----------------------------------------------------------------


def test_token_counts_map_each_framework_name_to_its_own_count() -> None:
    usage = {"prompt": 7, "completion": 3}
    assert token_counts(usage, "prompt", "completion") == {"input_tokens": 7, "output_tokens": 3}


def test_token_counts_leave_out_bools_and_read_attributes() -> None:
    class Usage:
        prompt = True
        completion = 4

    assert token_counts(Usage(), "prompt", "completion") == {"output_tokens": 4}


@pytest.mark.parametrize(
    ("metadata", "tenant"),
    [({"tenant_id": "acme"}, "acme"), ({"tenant_id": ""}, None), ({"tenant_id": 7}, None)],
)
def test_a_tenant_is_read_from_metadata_only_when_it_is_named(
    metadata: object, tenant: str | None
) -> None:
    assert tenant_in(metadata) == tenant


@pytest.mark.parametrize("value", [True, 0, -1, 1.5, "3"])
def test_a_bound_option_must_be_a_positive_int(value: object) -> None:
    with pytest.raises(ValueError, match="max_open_runs"):
        positive("TestAdapter", "max_open_runs", value)


def test_one_is_a_positive_bound() -> None:
    assert positive("TestAdapter", "max_open_runs", 1) == 1


def test_a_shared_handler_and_loop_options_together_are_refused() -> None:
    shared = OTelCallbackHandler()
    with pytest.raises(TypeError, match="not both"):
        loop_handler("TestAdapter", shared, loop_threshold=DEFAULT_LOOP_THRESHOLD + 1)
    with pytest.raises(TypeError, match="not both"):
        loop_handler("TestAdapter", shared, runaway_calls=DEFAULT_RUNAWAY_CALLS + 1)
    assert loop_handler("TestAdapter", shared) is shared


def test_a_built_handler_gets_each_loop_option_as_given() -> None:
    handler = loop_handler("TestAdapter", None, loop_threshold=3, runaway_calls=50)
    assert (handler.loop_limits.threshold, handler.loop_limits.runaway) == (3, 50)


def test_a_guard_with_its_own_log_still_counts_the_failure_on_the_handler(
    telemetry: InMemoryTelemetry,
) -> None:
    failures = FailureLog()
    guard = Guard(telemetry.handler(), "TestAdapter", failures)

    def broken() -> None:
        raise RuntimeError("hook bug")

    assert guard("on_step", broken) is None
    assert guard.counts() == {"TestAdapter.on_step": 1}
    assert telemetry.value(semconv.DROPPED_EVENTS.name) == 1


def test_a_run_id_is_its_own_run_before_a_span_of_that_name_in_another_run() -> None:
    index = RunIndex(8)
    first, second = FrameworkRun("a"), FrameworkRun("b")
    index.add(first)
    index.add(second)
    index.index(first, "b")  # a framework span id that happens to equal a run id
    assert index.owner("b") is second
