"""What a run's end means: the empty flag, stop reasons, error types, iterations, duplicates."""

from __future__ import annotations

import time
from typing import Any

import pytest

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent, ReactLoopEndEvent
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.testing.telemetry import InMemoryTelemetry

RUNS = semconv.AGENT_RUNS.name
STOPS = semconv.STOP_REASONS.name


def _run_span_attrs(memory: InMemoryTelemetry, run_id: str) -> dict[str, Any]:
    [span] = [
        s
        for s in memory.spans()
        if s.name.startswith("invoke_agent") and (s.attributes or {}).get(semconv.RUN_ID) == run_id
    ]
    return dict(span.attributes or {})


def _bail(handler: OTelCallbackHandler, run_id: str) -> None:
    handler.react_loop_end(ReactLoopEndEvent(run_id, 2, "list", True, 1, "tool_calls_with_no_text"))


# --- symfonic.response.empty ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "final_response", "bailed", "answered", "expected"),
    [
        ("completed", "The answer.", False, None, False),
        ("completed", "", False, None, True),
        ("completed", "  \n ", False, None, True),
        # The Symfonic streaming path: final_response is None, the answer is unknown...
        ("completed", None, False, None, None),
        # ...unless the run reported a silent bail, which streaming cannot recover.
        ("completed", None, True, None, True),
        # A recovered bail (synthesis produced text) is an answer.
        ("completed", "Synthesised.", True, None, False),
        # The adapter's verdict wins for a completed run (a dict state, a parsed object).
        ("completed", "", False, True, False),
        ("completed", "{'result': '10'}", False, False, True),
        # Failures are not empty answers: no flag, whatever the response.
        ("error", None, False, None, None),
        ("error", "", True, False, None),
        ("cancelled", "", False, None, None),
        ("abandoned", "", False, None, None),
    ],
)
def test_empty_flag_only_on_completed_runs_with_a_known_answer(
    telemetry: InMemoryTelemetry,
    outcome: str,
    final_response: str | None,
    bailed: bool,
    answered: bool | None,
    expected: bool | None,
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    if bailed:
        _bail(handler, "r")
    handler.agent_end(
        AgentEndEvent("r", final_response, 5.0, 1, outcome=outcome),  # type: ignore[arg-type]
        answered=answered,
    )
    attrs = _run_span_attrs(telemetry, "r")
    [(labels, count)] = telemetry.points(RUNS)
    assert count == 1 and labels[semconv.RUN_OUTCOME] == outcome
    if expected is None:
        assert semconv.RESPONSE_EMPTY not in attrs
        assert semconv.RESPONSE_EMPTY not in labels
    else:
        assert attrs[semconv.RESPONSE_EMPTY] is expected
        assert labels[semconv.RESPONSE_EMPTY] is expected


def test_abandoned_runs_carry_no_empty_flag(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "lost"))
    assert handler.close_open_runs() == 1
    attrs = _run_span_attrs(telemetry, "lost")
    assert attrs[semconv.RUN_OUTCOME] == "abandoned"
    assert semconv.RESPONSE_EMPTY not in attrs
    [(labels, _)] = telemetry.points(RUNS)
    assert semconv.RESPONSE_EMPTY not in labels


# --- stop reasons ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "stop_reason", "expected"),
    [
        ("completed", "end_turn", "end_turn"),
        ("completed", "max_tokens", "max_tokens"),
        ("completed", "refusal", "refusal"),
        ("completed", "loop_detected", "loop_detected"),
        ("completed", "recursion_limit", "recursion_limit"),
        ("completed", "stop_sequence", "stop_sequence"),  # a pass-through value
        ("error", None, "error"),  # derived from the outcome
        ("cancelled", None, "interrupted"),
        ("error", "max_tokens", "max_tokens"),  # an explicit value wins
        ("completed", None, None),  # Symfonic's own events: no stop reason, none invented
    ],
)
def test_run_stop_reason_on_the_span_and_the_counter(
    telemetry: InMemoryTelemetry, outcome: str, stop_reason: str | None, expected: str | None
) -> None:
    handler = telemetry.handler(agent_name="support")
    handler.agent_start(AgentStartEvent("q", "r"))
    handler.agent_end(
        AgentEndEvent("r", "x", 1.0, 1, outcome=outcome, stop_reason=stop_reason),  # type: ignore[arg-type]
    )
    attrs = _run_span_attrs(telemetry, "r")
    stops = telemetry.points(STOPS)
    if expected is None:
        assert semconv.RUN_STOP_REASON not in attrs
        assert stops == []
        return
    assert attrs[semconv.RUN_STOP_REASON] == expected
    assert stops == [
        (
            {
                semconv.TENANT_ID: "unknown",
                semconv.GEN_AI_AGENT_NAME: "support",
                semconv.RUN_STOP_REASON: expected,
            },
            1,
        )
    ]


def test_pass_through_stop_reasons_are_capped(telemetry: InMemoryTelemetry) -> None:
    from symfonic_otel.emit.budget import MAX_PASSTHROUGH_STOP_REASONS

    handler = telemetry.handler()
    for index in range(40):
        handler.agent_start(AgentStartEvent("q", f"r{index}"))
        handler.agent_end(AgentEndEvent(f"r{index}", "x", 1.0, 1, stop_reason=f"weird_{index}"))
    labels = {a[semconv.RUN_STOP_REASON] for a, _ in telemetry.points(STOPS)}
    assert len(labels - {semconv.OTHER_VALUE}) == MAX_PASSTHROUGH_STOP_REASONS
    assert semconv.OTHER_VALUE in labels
    assert telemetry.value(STOPS) == 40  # every exit counted
    # Spans keep the raw value.
    assert _run_span_attrs(telemetry, "r39")[semconv.RUN_STOP_REASON] == "weird_39"


def test_chat_spans_carry_the_raw_finish_reason(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    for index, raw in enumerate(("tool_use", "STOP", None)):
        handler.llm_end(
            LLMEndEvent(
                model="m",
                output="",
                usage={},
                run_id="r",
                node_name="react",
                iteration_index=index,
                stop_reason=raw,
            )
        )
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    chats = sorted(
        (s for s in telemetry.spans() if s.name == "chat m"),
        key=lambda s: (s.attributes or {})[semconv.REACT_ITERATION_INDEX],
    )
    reasons = [(s.attributes or {}).get(semconv.GEN_AI_RESPONSE_FINISH_REASONS) for s in chats]
    assert reasons == [("tool_use",), ("STOP",), None]


def test_stop_reason_read_duck_typed_from_any_event(telemetry: InMemoryTelemetry) -> None:
    """Symfonic's own events have no ``stop_reason``; any object that has one is read."""

    class SymfonicEnd:  # Symfonic's AgentEndEvent shape: no stop_reason, no error_type
        run_id, final_response, duration_ms, node_count, outcome = "a", "x", 1.0, 1, "completed"

    class OtherEnd(SymfonicEnd):
        run_id, stop_reason = "b", "max_tokens"

    handler = telemetry.handler()
    for event in (SymfonicEnd(), OtherEnd()):
        handler.agent_start(AgentStartEvent("q", event.run_id))
        handler.agent_end(event)
    assert semconv.RUN_STOP_REASON not in _run_span_attrs(telemetry, "a")
    assert _run_span_attrs(telemetry, "b")[semconv.RUN_STOP_REASON] == "max_tokens"


def test_new_tenant_gets_its_stop_reason_series_at_zero(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    seeded = {a[semconv.RUN_STOP_REASON]: v for a, v in telemetry.points(STOPS, include_zeros=True)}
    # Only the exits the shipped ratio alerts read are created at zero (the denominator's
    # common exit and the truncation and refusal numerators); others appear with their count.
    assert seeded == dict.fromkeys(("end_turn", "max_tokens", "refusal"), 0)


# --- error types ------------------------------------------------------------------------------


def test_error_type_from_the_event_on_spans_and_metrics(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    handler.llm_end(
        LLMEndEvent(
            model="gpt-4o",
            output="",
            usage={},
            run_id="r",
            outcome="error",
            error_type="RateLimitError",
        )
    )
    handler.agent_end(
        AgentEndEvent("r", None, 1.0, None, outcome="error", error_type="RateLimitError")
    )
    assert _run_span_attrs(telemetry, "r")[semconv.ERROR_TYPE] == "RateLimitError"
    chat = telemetry.span("chat gpt-4o")
    assert (chat.attributes or {})[semconv.ERROR_TYPE] == "RateLimitError"
    [(labels, _)] = telemetry.points(semconv.CLIENT_OPERATION_DURATION.name)
    assert labels[semconv.ERROR_TYPE] == "RateLimitError"


def test_explicit_error_type_wins_and_missing_reads_other(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.llm_end(
        LLMEndEvent(model="a", output="", usage={}, outcome="error", error_type="FromEvent"),
        error_type="FromAdapter",
    )
    handler.llm_end(LLMEndEvent(model="b", output="", usage={}, outcome="error"))
    assert (telemetry.span("chat a").attributes or {})[semconv.ERROR_TYPE] == "FromAdapter"
    assert (telemetry.span("chat b").attributes or {})[semconv.ERROR_TYPE] == "_OTHER"


# --- iterations -------------------------------------------------------------------------------


def _iterations(memory: InMemoryTelemetry) -> list[float]:
    return [p.sum for _, p in memory.points(semconv.REACT_ITERATIONS.name)]  # type: ignore[union-attr]


def test_iterations_count_loop_calls_only(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    nodes = ["react", "react", "react", "fabrication_revise", "react_synthesize_fallback"]
    for index, node in enumerate(nodes):
        handler.llm_end(
            LLMEndEvent(
                model="m", output="x", usage={}, run_id="r", node_name=node, iteration_index=index
            )
        )
    # Symfonic's other call sites (critic, summariser) are not loop iterations either.
    handler.llm_end(LLMEndEvent(model="m", output="x", usage={}, run_id="r", node_name="critic"))
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    assert _iterations(telemetry) == [3]


def test_iterations_of_a_graph_without_react_nodes(telemetry: InMemoryTelemetry) -> None:
    """A LangGraph run names its own nodes: every call but synthesis and revision counts."""
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    for node in ("agent", "agent", "fabrication_revise"):
        handler.llm_end(LLMEndEvent(model="m", output="x", usage={}, run_id="r", node_name=node))
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    assert _iterations(telemetry) == [2]


# --- duplicates -------------------------------------------------------------------------------


def test_agent_start_redelivered_after_its_end_opens_no_phantom_run(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    start = AgentStartEvent("q", "r")
    handler.agent_start(start)
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    handler.agent_start(start)  # redelivered
    assert handler.open_runs == 0
    assert len([s for s in telemetry.spans() if s.name.startswith("invoke_agent")]) == 1
    assert telemetry.value(RUNS) == 1
    assert telemetry.value("symfonic.agent.active_runs") == 0
    assert (
        telemetry.value(
            "symfonic.telemetry.dropped_events",
            {
                "symfonic.telemetry.event": "agent_start",
                "symfonic.telemetry.drop_reason": "duplicate",
            },
        )
        == 1
    )


def test_a_run_closed_past_its_ttl_is_remembered_as_ended(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(run_ttl_s=0.001)
    start = AgentStartEvent("q", "r")
    handler.agent_start(start)
    time.sleep(0.002)
    assert handler.expire_runs() == 1
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))  # the late end of the abandoned run
    handler.agent_start(start)  # a redelivered start of it
    assert handler.open_runs == 0
    assert len([s for s in telemetry.spans() if s.name.startswith("invoke_agent")]) == 1
    assert telemetry.value(RUNS) == 1
    drops = "symfonic.telemetry.dropped_events"
    for event in ("agent_end", "agent_start"):
        duplicate = {
            "symfonic.telemetry.event": event,
            "symfonic.telemetry.drop_reason": "duplicate",
        }
        assert telemetry.value(drops, duplicate) == 1, event
