"""Fan-outs over several items or collaborators: every open tool span, every expired run, every
raising callback handler is handled, not only the first."""

from __future__ import annotations

from typing import Any

from structlog.testing import capture_logs

from symfonic_otel import semconv
from symfonic_otel.agent import ReactAgent
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    ToolCallStartEvent,
)
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_support import TOOLS, turn

# --- fan-outs: several items, several collaborators ------------------------------------------


def test_every_open_tool_span_ends_with_its_run(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    for index in range(3):
        handler.tool_call_start(ToolCallStartEvent(f"t{index}", "search", run_id="r"))
    handler.agent_end(AgentEndEvent("r", "a", 1.0, 1))
    tools = [s for s in telemetry.spans() if s.name.startswith("execute_tool")]
    assert len(tools) == 3 and all(s.end_time is not None for s in tools)
    assert telemetry.unended_spans == []


def test_every_run_past_its_ttl_is_closed_at_once(telemetry: InMemoryTelemetry) -> None:
    import time

    handler = telemetry.handler(run_ttl_s=0.5)
    for index in range(3):
        handler.agent_start(AgentStartEvent("q", f"r{index}"))
    time.sleep(0.6)
    assert handler.expire_runs() == 3
    assert handler.open_runs == 0
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "abandoned"}) == 3


def test_every_run_past_its_ttl_is_abandoned_when_the_next_run_starts(
    telemetry: InMemoryTelemetry,
) -> None:
    import time

    handler = telemetry.handler(run_ttl_s=0.5)
    for index in range(3):
        handler.agent_start(AgentStartEvent("q", f"old{index}"))
    time.sleep(0.6)
    handler.agent_start(AgentStartEvent("q", "new"))  # finds the three stale runs on its way in
    assert handler.open_runs == 1
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "abandoned"}) == 3
    assert telemetry.value("symfonic.telemetry.orphaned_runs") == 3
    handler.agent_end(AgentEndEvent("new", "a", 1.0, 1))


class _Raises:
    def __init__(self) -> None:
        self.calls = 0

    def on_agent_start(self, event: Any) -> None:
        self.calls += 1
        raise RuntimeError("handler bug")


async def test_each_raising_callback_handler_gets_its_own_log_line() -> None:
    first, second = _Raises(), _Raises()
    agent = ReactAgent(
        ScriptedChatModel([turn("ok", finish="stop")] * 2), TOOLS, callbacks=[first, second]
    )
    with capture_logs() as logs:
        await agent.run("q", run_id="run-1")
        await agent.run("q", run_id="run-2")
    lines = [entry for entry in logs if entry["event"].startswith("callback handler raised")]
    assert (first.calls, second.calls) == (2, 2)  # both are called every time
    assert len(lines) == 2  # once per handler and kind, not once per kind
    assert {line["run_id"] for line in lines} == {"run-1"}
