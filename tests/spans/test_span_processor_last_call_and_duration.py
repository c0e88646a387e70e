"""The span processor's verdicts at the edges its other tests leave alone.

Spans come from a real SDK tracer of another scope with explicit times, shaped as the GenAI
conventions name them: two model calls that end on the same clock tick (coarse clocks make
this common) are taken in the order they ended; finish reasons are matched whatever their
case (Gemini sends them upper case); a run span that starts and ends on the same tick lasted
zero seconds, and one whose end precedes its start has no duration.
"""

from __future__ import annotations

import json

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics.export import HistogramDataPoint

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry

PEER = "peer-instrumentation"
T0 = 1_700_000_000_000_000_000
TOOL_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "name": "add"}]}])
TEXT_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}])


class _Peer:
    """Another instrumentation's tracer on the provider the processor is installed on."""

    def __init__(self, memory: InMemoryTelemetry) -> None:
        self.memory = memory
        processor = SilentBailSpanProcessor(meter_provider=memory.meter_provider)
        memory.tracer_provider.add_span_processor(processor)
        self.tracer = memory.tracer_provider.get_tracer(PEER)

    def run(self, start: int, end: int, chats: list[tuple[str, str, int]]) -> None:
        """An agent span from ``start`` to ``end`` holding (finish, output, end time) calls."""
        agent = self.tracer.start_span(
            "invoke_agent peer",
            attributes={semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT},
            start_time=start,
        )
        with trace.use_span(agent, end_on_exit=False):
            for finish, output, chat_end in chats:
                chat = self.tracer.start_span(
                    "chat peer-model",
                    attributes={
                        semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
                        semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish,),
                        semconv.GEN_AI_OUTPUT_MESSAGES: output,
                    },
                    start_time=start,
                )
                chat.end(end_time=chat_end)
        agent.end(end_time=end)


@pytest.fixture
def peer(telemetry: InMemoryTelemetry) -> _Peer:
    return _Peer(telemetry)


@pytest.mark.parametrize(("answer_end", "bails"), [(T0 + 10, 0), (T0 + 9, 1)])
def test_of_two_calls_ending_on_one_tick_the_later_reported_is_the_last(
    peer: _Peer, answer_end: int, bails: int
) -> None:
    """The answer ends on the tool turn's tick: it is the last call. A tick earlier, it is not."""
    peer.run(T0, T0 + 20, [("tool_calls", TOOL_TURN, T0 + 10), ("stop", TEXT_TURN, answer_end)])
    assert peer.memory.value(semconv.SILENT_BAILS.name) == bails
    where = {semconv.REACT_TERMINATION_REASON: "tool_calls_with_no_text"}
    assert peer.memory.value(semconv.SILENT_BAILS.name, where) == bails


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("STOP", "end_turn"),
        ("MAX_TOKENS", "max_tokens"),
        ("SAFETY", "refusal"),
        ("Length", "max_tokens"),
        ("stop", "end_turn"),
    ],
)
def test_finish_reasons_are_normalised_whatever_their_case(
    peer: _Peer, finish: str, stop: str
) -> None:
    peer.run(T0, T0 + 20, [(finish, TEXT_TURN, T0 + 10)])
    assert peer.memory.value(semconv.STOP_REASONS.name, {semconv.RUN_STOP_REASON: stop}) == 1
    assert peer.memory.value(semconv.STOP_REASONS.name) == 1


@pytest.mark.parametrize(("end", "observed"), [(T0, 1), (T0 - 1, 0)])
def test_a_run_of_zero_seconds_has_a_duration_and_one_ending_before_its_start_none(
    peer: _Peer, end: int, observed: int
) -> None:
    peer.run(T0, end, [("stop", TEXT_TURN, T0)])
    points = [v for _, v in peer.memory.points(semconv.AGENT_DURATION.name)]
    assert sum(p.count for p in points if isinstance(p, HistogramDataPoint)) == observed
    if observed:
        assert [p.sum for p in points if isinstance(p, HistogramDataPoint)] == [0.0]


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("end_turn", "end_turn"),
        ("complete", "end_turn"),
        ("max_tokens", "max_tokens"),
        ("max_output_tokens", "max_tokens"),
        ("refusal", "refusal"),
        ("prohibited_content", "refusal"),
        ("blocklist", "refusal"),
        ("content_filter", "refusal"),
    ],
)
def test_every_provider_finish_reason_maps_to_its_stop_reason(
    peer: _Peer, finish: str, stop: str
) -> None:
    peer.run(T0, T0 + 20, [(finish, TEXT_TURN, T0 + 10)])
    assert peer.memory.value(semconv.STOP_REASONS.name, {semconv.RUN_STOP_REASON: stop}) == 1
