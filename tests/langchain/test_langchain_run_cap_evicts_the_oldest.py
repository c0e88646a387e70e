"""Past ``max_open_runs`` the LangChain handler forgets its *oldest* open run, never the one
just started: the newest run's tools and end are still placed under it."""

from __future__ import annotations

from uuid import uuid4

from symfonic_otel import LangChainCallbackHandler
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_past_the_cap_the_oldest_run_is_forgotten_and_the_newest_kept(
    telemetry: InMemoryTelemetry,
) -> None:
    lc = LangChainCallbackHandler(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        max_open_runs=2,
    )
    telemetry.track(lc.handler)
    roots, tools = [uuid4() for _ in range(3)], [uuid4() for _ in range(3)]
    for root, tool in zip(roots, tools, strict=True):
        lc.on_chain_start({}, {"messages": [("user", "hi")]}, run_id=root)
        lc.on_tool_start({"name": "add"}, "1 + 2", run_id=tool, parent_run_id=root)
    # the oldest run's open tool span was ended when it was forgotten
    assert len([s for s in telemetry.spans() if s.name == "execute_tool add"]) == 1
    lc.on_tool_end("3", run_id=tools[2], parent_run_id=roots[2])
    lc.on_chain_end({"messages": []}, run_id=roots[2])
    newest_tool = [s for s in telemetry.spans() if s.name == "execute_tool add"][-1]
    newest_run = max(
        (s for s in telemetry.spans() if s.name.startswith("invoke_agent")),
        key=lambda s: s.start_time or 0,
    )
    assert newest_tool.parent is not None
    assert newest_tool.parent.span_id == newest_run.context.span_id
    lc.on_tool_end("3", run_id=tools[1], parent_run_id=roots[1])
    lc.on_chain_end({"messages": []}, run_id=roots[1])
