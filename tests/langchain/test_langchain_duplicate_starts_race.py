"""A start delivered twice at once (two threads handing the handler the same run) still opens
one span: the run tree's check for a duplicate and its claim of the run are one step under its
lock, for agent runs and for tool runs alike.

The interleaving is forced, not hoped for: the first start is paused inside that step, just
before the claim, while the second start runs on this thread. With the lock held the second
waits for the pause to end (``PAUSE_S``) and then sees the duplicate.
"""

from __future__ import annotations

from uuid import uuid4

from langchain_core.messages import AIMessage

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.langchain.runs import RunTree
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.paused_section import PausedBefore


def test_a_tool_start_delivered_twice_at_once_opens_one_span(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    tool = uuid4()
    with PausedBefore(RunTree.claim_span, "self._loose_spans[key] = None") as first:
        first.start(lc.on_tool_start, {"name": "add"}, "1 + 2", run_id=tool)
        lc.on_tool_start({"name": "add"}, "1 + 2", run_id=tool)
        first.finish()
    lc.on_tool_end("3", run_id=tool)
    assert [s.name for s in telemetry.spans()] == ["execute_tool add"]


def test_an_agent_start_delivered_twice_at_once_opens_one_run(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    root = uuid4()
    with PausedBefore(RunTree.open_agent, "self._agents[agent.key] = agent") as first:
        first.start(lc.on_chain_start, {}, {"messages": [("user", "hi")]}, run_id=root)
        lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
        first.finish()
    lc.on_chain_end({"messages": [AIMessage(content="")]}, run_id=root)
    assert [s.name for s in telemetry.spans()] == ["invoke_agent symfonic"]
    assert lc.tracked_runs == 0
    # the run kept its state: its blank end is judged (a silent bail), not ended as untracked
    assert telemetry.value(semconv.SILENT_BAILS.name) == 1
