"""What the reference loop measures: model-call durations in seconds against a known latency,
and tool-call counts that include the calls the provider sent malformed."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from opentelemetry.sdk.metrics.export import HistogramDataPoint

from symfonic_otel import semconv
from symfonic_otel.agent import FrameworkConfig, ReactAgent
from symfonic_otel.testing import InMemoryTelemetry, ScriptedChatModel
from tests.support.agent_support import TOOLS, Recorder, call, invalid_call

LATENCY_S = 0.2


def _histogram_sum(telemetry: InMemoryTelemetry, name: str) -> tuple[float, int]:
    total, count = 0.0, 0
    for _, point in telemetry.points(name):
        assert isinstance(point, HistogramDataPoint)
        total += point.sum
        count += point.count
    return total, count


async def test_a_model_call_of_known_latency_records_that_many_seconds(
    telemetry: InMemoryTelemetry,
) -> None:
    recorder = Recorder()
    model = ScriptedChatModel(["the answer"], latency_s=LATENCY_S)
    await ReactAgent(model, TOOLS, callbacks=[recorder, telemetry.handler()]).run("q", run_id="d")
    [llm_end] = recorder.of("llm_end")
    assert LATENCY_S * 1000 <= llm_end.duration_ms < LATENCY_S * 1000 + 2000  # milliseconds
    total, count = _histogram_sum(telemetry, semconv.CLIENT_OPERATION_DURATION.name)
    assert count == 1
    assert LATENCY_S <= total < LATENCY_S + 2  # seconds
    run_total, _ = _histogram_sum(telemetry, semconv.AGENT_DURATION.name)
    assert LATENCY_S <= run_total < LATENCY_S + 2


async def test_the_bail_counts_the_malformed_tool_calls_of_the_last_turn() -> None:
    recorder = Recorder()
    capped = AIMessage(
        content="",
        tool_calls=[call("lookup", {"key": "x"}, "ok")],
        invalid_tool_calls=[
            invalid_call("bad1", "{not json", "bad"),
            invalid_call("bad2", "{not json", "bad"),
        ],
        response_metadata={"finish_reason": "tool_calls"},
    )
    model = ScriptedChatModel([capped] * 20)
    config = FrameworkConfig(recursion_limit=2)
    await ReactAgent(model, TOOLS, config=config, callbacks=[recorder]).run("q", run_id="b")
    [end] = recorder.of("react_loop_end")
    assert end.termination_reason == "tool_calls_with_no_text"
    assert end.has_tool_calls is True
    assert end.tool_call_count == 3  # one valid call and two the provider sent malformed
