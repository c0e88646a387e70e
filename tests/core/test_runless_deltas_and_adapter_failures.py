"""Two handler entry points whose inputs name no run or no event: Symfonic's text deltas (no
run id) time the first chunk of the sole open run's call, never of a call while two runs are
open; an adapter's own failure is counted as a lost event of its kind and logged once."""

from __future__ import annotations

from structlog.testing import capture_logs

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent, LLMStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.symfonic_events import TextDelta

FIRST_CHUNK = semconv.CLIENT_TIME_TO_FIRST_CHUNK.name


def _streamed_call(telemetry: InMemoryTelemetry, runs: tuple[str, ...]) -> None:
    handler = telemetry.handler()
    for run in runs:
        handler.agent_start(AgentStartEvent("q", run))
    handler.llm_start(LLMStartEvent("gpt-4o", [], run_id="r1"))
    handler.text_delta(TextDelta(text="Hel"))
    handler.llm_end(LLMEndEvent("gpt-4o", "Hello", {}, run_id="r1"))
    for run in runs:
        handler.agent_end(AgentEndEvent(run, "answer", 10.0, 1))


def test_a_delta_naming_no_run_times_the_sole_open_run_s_call(
    telemetry: InMemoryTelemetry,
) -> None:
    _streamed_call(telemetry, ("r1",))
    assert telemetry.value(FIRST_CHUNK) == 1
    [chat] = [s for s in telemetry.spans() if s.name == "chat gpt-4o"]
    assert semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK in (chat.attributes or {})


def test_a_delta_naming_no_run_times_nothing_while_two_runs_are_open(
    telemetry: InMemoryTelemetry,
) -> None:
    _streamed_call(telemetry, ("r1", "r2"))
    assert telemetry.value(FIRST_CHUNK) == 0


def test_an_adapter_failure_is_counted_per_event_and_logged_once(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    with capture_logs() as lines:
        for _ in range(3):
            try:
                raise KeyError("private prompt key")
            except KeyError as exc:
                handler.adapter_failed("example.on_span_end", exc)
    where = {
        semconv.TELEMETRY_EVENT: "example.on_span_end",
        semconv.TELEMETRY_DROP_REASON: "internal_error",
    }
    assert telemetry.value(semconv.DROPPED_EVENTS.name, where) == 3
    logged = [line for line in lines if line["event"] == "symfonic_otel.internal_failure"]
    assert [(line["kind"], line["error_type"]) for line in logged] == [
        ("example.on_span_end", "KeyError")
    ]
    assert "private prompt key" not in repr(logged)
