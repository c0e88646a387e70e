"""The LangChain adapter: run durations and time to first chunk in seconds against a known
latency, and the per-agent child-run cap at exactly its value and one below what a run needs."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from opentelemetry.sdk.metrics.export import HistogramDataPoint

from symfonic_otel import semconv
from symfonic_otel.langchain import LangChainCallbackHandler, run_book
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import cfg, one_node_graph, research_then_answer
from tests.support.langchain_support import add, react_agent, scripted_agent, tool_turn

LATENCY_S = 0.2


def _sums(telemetry: InMemoryTelemetry, spec: semconv.InstrumentSpec) -> list[float]:
    found = []
    for _, point in telemetry.points(spec.name):
        assert isinstance(point, HistogramDataPoint)
        found.append(point.sum)
    return found


async def test_an_agent_run_of_known_latency_records_its_duration_in_seconds(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel([tool_turn(), "The sum is 3."], latency_s=LATENCY_S)
    graph = react_agent(model, [add])
    await graph.ainvoke({"messages": [("user", "add 1 and 2")]}, config={"callbacks": [lc]})
    [run_s] = _sums(telemetry, semconv.AGENT_DURATION)
    assert 2 * LATENCY_S <= run_s < 2 * LATENCY_S + 5  # two model calls
    chat_s = _sums(telemetry, semconv.CLIENT_OPERATION_DURATION)
    assert len(chat_s) >= 1
    assert 2 * LATENCY_S <= sum(chat_s) < 2 * LATENCY_S + 5


async def test_the_time_to_first_chunk_of_a_stream_is_in_seconds(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(["a streamed answer of some length"], latency_s=LATENCY_S)
    async for _ in model.astream("hello", config={"callbacks": [lc]}):
        pass
    [first_chunk_s] = _sums(telemetry, semconv.CLIENT_TIME_TO_FIRST_CHUNK)
    assert LATENCY_S <= first_chunk_s < LATENCY_S + 5


class _SlowChainStart(BaseCallbackHandler):
    """A neighbouring callback that takes a few ms at each chain start: a sub-graph's first node
    then starts measurably later than the sub-graph itself."""

    def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
        time.sleep(0.003)


def test_a_sub_agent_run_records_its_duration_in_seconds(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(["found it", "the answer"])
    app = research_then_answer(one_node_graph("inner", model, "researcher"), model)
    app.invoke(
        {"messages": [("user", "q")]},
        config=cfg(run_name="boss", callbacks=[lc, _SlowChainStart()]),
    )
    recorded = {
        attributes[semconv.GEN_AI_AGENT_NAME]: point.sum
        for attributes, point in telemetry.points(semconv.AGENT_DURATION.name)
        if isinstance(point, HistogramDataPoint)
    }
    assert sorted(recorded) == ["boss", "researcher"]
    for span in telemetry.spans():
        agent = span.name.removeprefix("invoke_agent ")
        if agent in recorded:
            assert span.start_time is not None and span.end_time is not None
            span_s = (span.end_time - span.start_time) / 1e9
            assert span_s - 0.5 < recorded[agent] < span_s + 0.5, agent


# A one-tool ReAct run holds at most five child runs open at once (its graph, node, model call
# and tool nesting): at a cap of five it is traced whole; at four, the deepest runs are skipped.
FULL_RUN = ["chat scripted-chat", "chat scripted-chat", "execute_tool add", "invoke_agent symfonic"]


@pytest.mark.parametrize(("cap", "whole"), [(5, True), (4, False)])
def test_child_runs_are_tracked_up_to_the_cap_exactly(
    telemetry: InMemoryTelemetry,
    lc: LangChainCallbackHandler,
    monkeypatch: pytest.MonkeyPatch,
    cap: int,
    whole: bool,
) -> None:
    monkeypatch.setattr(run_book, "MAX_RUNS_PER_AGENT", cap)
    scripted_agent(tool_turn(), "The sum is 3.").invoke(
        {"messages": [("user", "add 1 and 2")]}, config={"callbacks": [lc]}
    )
    names = sorted(span.name for span in telemetry.spans())
    if whole:
        assert names == FULL_RUN
    else:
        assert "invoke_agent symfonic" in names
        assert names != FULL_RUN
        assert len(names) < len(FULL_RUN)


class _InterruptedOnRead:
    """A tool output whose ``status`` is read while the user presses Ctrl-C."""

    @property
    def status(self) -> str:
        raise KeyboardInterrupt


def test_an_interrupt_while_reading_a_payload_passes_through_the_adapter() -> None:
    memory = InMemoryTelemetry()
    handler = LangChainCallbackHandler(handler=memory.handler())
    run_id = uuid.uuid4()
    handler.on_tool_start({"name": "add"}, "1 + 2", run_id=run_id, inputs={"a": 1, "b": 2})
    with pytest.raises(KeyboardInterrupt):
        handler.on_tool_end(_InterruptedOnRead(), run_id=run_id)
    memory.shutdown()
