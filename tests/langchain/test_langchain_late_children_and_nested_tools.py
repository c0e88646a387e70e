"""Two placements by a run's parent: a late step of an ended run is remembered with it, so the
late step's own children start no agent run either (a run cut short never turns into a swarm of
new runs, however deep its late steps go); and a standalone tool called inside another
standalone tool nests under that tool's span, not under the caller's current span."""

from __future__ import annotations

from uuid import uuid4

from symfonic_otel import LangChainCallbackHandler
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_the_children_of_a_late_step_of_an_ended_run_start_no_run(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    root, tool = uuid4(), uuid4()
    lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
    lc.on_tool_start({"name": "add"}, "1 + 2", run_id=tool, parent_run_id=root)
    lc.on_chain_end({"messages": []}, run_id=root)  # ends with its tool still open
    late, deeper = uuid4(), uuid4()
    lc.on_chain_start({}, {"messages": []}, run_id=late, parent_run_id=tool)
    lc.on_chain_start({}, {"messages": []}, run_id=deeper, parent_run_id=late)
    lc.on_chain_end({"messages": []}, run_id=deeper, parent_run_id=late)
    lc.on_chain_end({"messages": []}, run_id=late, parent_run_id=tool)
    agents = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    assert len(agents) == 1


def test_a_standalone_tool_inside_another_nests_under_its_span(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    outer, inner = uuid4(), uuid4()
    lc.on_tool_start({"name": "outer"}, "x", run_id=outer)
    lc.on_tool_start({"name": "inner"}, "y", run_id=inner, parent_run_id=outer)
    lc.on_tool_end("ok", run_id=inner, parent_run_id=outer)
    lc.on_tool_end("ok", run_id=outer)
    spans = {s.name: s for s in telemetry.spans()}
    inner_span, outer_span = spans["execute_tool inner"], spans["execute_tool outer"]
    assert inner_span.parent is not None and outer_span.context is not None
    assert inner_span.parent.span_id == outer_span.context.span_id
    assert outer_span.parent is None
