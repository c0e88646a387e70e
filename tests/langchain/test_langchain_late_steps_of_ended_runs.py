"""A run's late steps, after its agent run ended with them still open: the runs of the latest
dropped agent runs are remembered (the oldest forgotten first past ``MAX_FORGOTTEN``), so a late
child of a recent one starts no agent run of its own, while one of a run forgotten past the
bound is a new run, as any run with an unknown parent is."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest

from symfonic_otel import LangChainCallbackHandler
from symfonic_otel.langchain import run_book
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def _agent_runs(telemetry: InMemoryTelemetry) -> int:
    return len([s for s in telemetry.spans() if s.name.startswith("invoke_agent")])


def _late_chain(lc: LangChainCallbackHandler, parent: UUID) -> None:
    late = uuid4()
    lc.on_chain_start({}, {"messages": [("user", "late")]}, run_id=late, parent_run_id=parent)
    lc.on_chain_end({"messages": []}, run_id=late, parent_run_id=parent)


def test_past_the_bound_the_oldest_dropped_run_is_forgotten_not_the_newest(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_book, "MAX_FORGOTTEN", 2)  # each dropped run: its root and tool
    lc = LangChainCallbackHandler(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    telemetry.track(lc.handler)
    tools = [uuid4(), uuid4()]
    for tool in tools:  # each agent run ends with its tool still open
        root = uuid4()
        lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
        lc.on_tool_start({"name": "add"}, "1 + 2", run_id=tool, parent_run_id=root)
        lc.on_chain_end({"messages": []}, run_id=root)
    assert _agent_runs(telemetry) == 2
    _late_chain(lc, tools[1])  # the newest dropped run's step: still remembered
    assert _agent_runs(telemetry) == 2
    _late_chain(lc, tools[0])  # the oldest, past the bound: a run like any unknown parent's
    assert _agent_runs(telemetry) == 3
