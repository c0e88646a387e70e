"""The run book's bounds, exactly at the bound and one past it: standalone model calls and
spans (the oldest dropped past ``MAX_STANDALONE``, none before), the child runs of one agent run
(``MAX_RUNS_PER_AGENT`` held at once, ended ones released), and sub-agent runs forgotten with
the parent that held them, whether it ended or was evicted."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import pytest
from opentelemetry.trace import StatusCode

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.langchain import run_book, runs
from symfonic_otel.langchain.extract import run_key
from symfonic_otel.langchain.runs import RunTree
from symfonic_otel.langchain.state import AgentRun, ChainStart
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_callbacks import start_sub_agent

_CHAT = "chat scripted"


def _chat_result(text: str) -> Any:
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, LLMResult

    return LLMResult(generations=[[ChatGeneration(message=AIMessage(content=text))]])


def _start_chat(lc: LangChainCallbackHandler, run: UUID, parent: UUID | None = None) -> None:
    lc.on_chat_model_start(
        {}, [[]], run_id=run, parent_run_id=parent, metadata={"ls_model_name": "scripted"}
    )


def _chats(telemetry: InMemoryTelemetry) -> list[Any]:
    return [s for s in telemetry.spans() if s.name.startswith("chat")]


def _tools(telemetry: InMemoryTelemetry) -> list[Any]:
    return [s for s in telemetry.spans() if s.name.startswith("execute_tool")]


# --- standalone calls and spans --------------------------------------------------------------


def test_standalone_calls_at_the_bound_are_all_kept_and_one_past_drops_the_oldest(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs, "MAX_STANDALONE", 3)
    calls = [uuid4() for _ in range(3)]
    for call in calls:
        _start_chat(lc, call)
    assert lc.tracked_calls == 3  # exactly at the bound: nothing dropped yet
    for call in calls:
        lc.on_llm_end(_chat_result("ok"), run_id=call)
    assert len(_chats(telemetry)) == 3
    before = len(_chats(telemetry))
    newer = [uuid4() for _ in range(4)]
    for call in newer:
        _start_chat(lc, call)
    assert lc.tracked_calls == 3  # one past the bound: one dropped
    lc.on_llm_end(_chat_result("late"), run_id=newer[0])  # the oldest was the one dropped
    assert len(_chats(telemetry)) == before
    for call in newer[1:]:
        lc.on_llm_end(_chat_result("ok"), run_id=call)
    assert len(_chats(telemetry)) - before == 3


def test_standalone_tools_at_the_bound_end_by_their_own_end_and_one_past_ends_the_oldest(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runs, "MAX_STANDALONE", 3)
    tools = [uuid4() for _ in range(3)]
    for tool in tools:
        lc.on_tool_start({"name": "add"}, "1 + 2", run_id=tool)
    assert not _tools(telemetry)  # at the bound: none ended early
    for tool in tools:
        lc.on_tool_error(ValueError("no"), run_id=tool)
    assert [s.status.status_code for s in _tools(telemetry)] == [StatusCode.ERROR] * 3
    more = [uuid4() for _ in range(4)]
    for tool in more:
        lc.on_tool_start({"name": f"t{more.index(tool)}"}, "x", run_id=tool)
    (evicted,) = [s for s in _tools(telemetry) if s.name != "execute_tool add"]
    assert evicted.name == "execute_tool t0"  # the oldest, not the newest
    assert (evicted.attributes or {}).get(semconv.STEP_UNFINISHED) is True
    for tool in more[1:]:
        lc.on_tool_end("3", run_id=tool)
    assert lc.tracked_calls == 0


# --- the child runs of one agent run ----------------------------------------------------------


def test_an_agent_run_holds_its_bound_of_child_runs_and_ended_ones_free_their_place(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run itself is one of its members: a bound of three leaves room for two open tools.
    monkeypatch.setattr(run_book, "MAX_RUNS_PER_AGENT", 3)
    root = uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
    first, second, third = uuid4(), uuid4(), uuid4()
    lc.on_tool_start({"name": "a"}, "1", run_id=first, parent_run_id=root)
    lc.on_tool_start({"name": "b"}, "2", run_id=second, parent_run_id=root)
    lc.on_tool_start({"name": "c"}, "3", run_id=third, parent_run_id=root)  # past it: skipped
    for tool in (first, second, third):
        lc.on_tool_end("ok", run_id=tool, parent_run_id=root)
    assert sorted(s.name for s in _tools(telemetry)) == ["execute_tool a", "execute_tool b"]
    for n in range(5):  # one at a time, many more than the bound: each ended one is released
        tool = uuid4()
        lc.on_tool_start({"name": f"seq{n}"}, "1", run_id=tool, parent_run_id=root)
        lc.on_tool_end("ok", run_id=tool, parent_run_id=root)
        call = uuid4()
        _start_chat(lc, call, root)
        lc.on_llm_end(_chat_result("ok"), run_id=call, parent_run_id=root)
    assert len(_tools(telemetry)) == 7
    assert len(_chats(telemetry)) == 5
    lc.on_chain_end({"messages": []}, run_id=root)


def test_a_run_that_ran_more_sub_graphs_than_its_bound_still_records_its_steps(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_book, "MAX_RUNS_PER_AGENT", 3)
    root = uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
    for n in range(4):
        sub, node = start_sub_agent(lc, root, f"helper{n}")
        lc.on_chain_end({}, run_id=node, parent_run_id=sub)
        lc.on_chain_end({"messages": []}, run_id=sub, parent_run_id=root)
    tool = uuid4()
    lc.on_tool_start({"name": "add"}, "1 + 2", run_id=tool, parent_run_id=root)
    lc.on_tool_end("3", run_id=tool, parent_run_id=root)
    lc.on_chain_end({"messages": []}, run_id=root)
    subs = [s for s in telemetry.spans() if s.name.startswith("invoke_agent helper")]
    assert len(subs) == 4
    assert len(_tools(telemetry)) == 1


def test_an_open_sub_agent_takes_no_place_among_its_parents_child_runs(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A sub-graph running beside two tools (parallel branches): the sub-agent run holds its own
    # child runs, so the parent holds itself and its two tools, within a bound of three.
    monkeypatch.setattr(run_book, "MAX_RUNS_PER_AGENT", 3)
    root = uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
    sub, node = start_sub_agent(lc, root, "helper")
    tools = [uuid4(), uuid4()]
    for n, tool in enumerate(tools):
        lc.on_tool_start({"name": f"t{n}"}, "1", run_id=tool, parent_run_id=root)
    for tool in tools:
        lc.on_tool_end("ok", run_id=tool, parent_run_id=root)
    lc.on_chain_end({}, run_id=node, parent_run_id=sub)
    lc.on_chain_end({"messages": []}, run_id=sub, parent_run_id=root)
    lc.on_chain_end({"messages": []}, run_id=root)
    assert sorted(s.name for s in _tools(telemetry)) == ["execute_tool t0", "execute_tool t1"]


# --- sub-agent runs go with their parent -----------------------------------------------------


def _tree_with_sub() -> tuple[RunTree, AgentRun, AgentRun]:
    tree = RunTree(max_agents=4)
    root_key, sub_key = run_key(uuid4()), run_key(uuid4())
    assert root_key is not None and sub_key is not None
    root = AgentRun(key=root_key, run_id="root", started_monotonic=0.0)
    assert tree.open_agent(root) == (True, [])
    assert tree.adopt(sub_key, root_key, ChainStart(0, "helper")) is root
    sub, _, _ = tree.promote(sub_key)
    assert sub is not None and sub.parent is root
    return tree, root, sub


def test_a_closed_sub_agent_is_not_left_open_again_when_its_parent_closes() -> None:
    tree, root, sub = _tree_with_sub()
    closed, _, left, _ = tree.close_agent(sub.key)
    assert closed is sub and left == []
    assert sub.key not in root.members
    closed, _, left, _ = tree.close_agent(root.key)
    assert closed is root
    assert left == []  # the sub-agent ended already: nothing to end for it
    assert tree.call_count == 0 and tree.agent_count == 0


def test_an_open_sub_agent_is_reported_left_open_when_its_parent_closes() -> None:
    tree, root, sub = _tree_with_sub()
    closed, _, left, _ = tree.close_agent(root.key)
    assert closed is root and left == [sub]
    assert tree.call_count == 0


def test_an_evicted_parent_forgets_its_open_sub_agent_and_that_sub_agents_steps(
    telemetry: InMemoryTelemetry,
) -> None:
    lc = LangChainCallbackHandler(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        max_open_runs=1,
    )
    telemetry.track(lc.handler)
    first = uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=first)
    sub, node = start_sub_agent(lc, first, "helper")
    tool = uuid4()
    lc.on_tool_start({"name": "deep"}, "1", run_id=tool, parent_run_id=node)
    second = uuid4()
    lc.on_chain_start({}, {"messages": [("user", "next")]}, run_id=second)  # evicts the first
    (deep,) = _tools(telemetry)  # the sub-agent's open tool was ended with it
    assert (deep.attributes or {}).get(semconv.STEP_UNFINISHED) is True
    assert lc.tracked_calls == 1  # the second run's own key: none of the sub-agent's
    lc.on_tool_end("late", run_id=tool, parent_run_id=node)  # late steps record nothing
    late = uuid4()
    lc.on_chain_start({}, {}, run_id=late, parent_run_id=node)  # no new run for a late step
    lc.on_chain_end({}, run_id=late, parent_run_id=node)
    lc.on_chain_end({}, run_id=node, parent_run_id=sub)
    lc.on_chain_end({"messages": []}, run_id=sub, parent_run_id=first)
    assert len(_tools(telemetry)) == 1
    agents = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    assert len(agents) == 2  # the first run and its sub-agent, both ended by the eviction
    lc.on_chain_end({"messages": []}, run_id=second)
    assert lc.tracked_runs == 0 and lc.tracked_calls == 0


def test_runs_of_dropped_agents_are_remembered_up_to_the_bound_exactly(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two agent runs that end with no child open remember one run each (their own): a bound of
    # two holds both, so a late step of either starts no agent run.
    monkeypatch.setattr(run_book, "MAX_FORGOTTEN", 2)
    roots = [uuid4(), uuid4()]
    for root in roots:
        lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
        lc.on_chain_end({"messages": []}, run_id=root)
    late = uuid4()
    lc.on_chain_start({}, {"messages": []}, run_id=late, parent_run_id=roots[0])
    lc.on_chain_end({"messages": []}, run_id=late, parent_run_id=roots[0])
    agents = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    assert len(agents) == 2
