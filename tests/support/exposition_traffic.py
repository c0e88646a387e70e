"""One fixed mix of runs over three tenants, and the endpoint's exposition of it.

Every per-tenant family gets series here: completed, errored, cancelled and paused runs, both
silent-bail reasons, recovered and unrecovered synthesis fallbacks, a fabrication detection,
tokens and cost on two models, a pass-through stop reason. ``tests/support/data/exposition.*.txt``
hold what the endpoint served for this traffic before the per-tenant counters left the SDK, so the
new path is held to the old output, family by family and series by series (the silent-bail
counter's HELP text since reworded, in the metric and in the recording alike).
"""

from __future__ import annotations

import urllib.request
from datetime import UTC, datetime
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from symfonic_otel import tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent, ReactLoopEndEvent
from tests.support.event_scripts import (
    bail_with_synthesis,
    interrupted,
    play,
    react_parallel_tools,
    replay,
    silent_bail_then_synthesis,
    tool_raises,
)

BASE = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
TENANT_FAMILIES = (
    "symfonic_agent_runs",
    "symfonic_react_silent_bails",
    "symfonic_react_synthesis_fallbacks",
    "symfonic_agent_stop_reasons",
    "symfonic_llm_cost_usd",
    "symfonic_llm_tokens",
    "symfonic_fabrication_detections",
)


async def _empty_completion(handler: Any, run_id: str) -> None:
    """A run whose model answered nothing and called no tool, on a second model."""
    await handler.on_agent_start(AgentStartEvent(query="q", run_id=run_id))
    usage = {"input_tokens": 10, "output_tokens": 0}
    await handler.on_llm_end(
        LLMEndEvent(model="claude-3-5-haiku", output="", usage=usage, run_id=run_id)
    )
    await handler.on_react_loop_end(
        ReactLoopEndEvent(
            run_id=run_id,
            iteration_index=0,
            content_type="NoneType",
            has_tool_calls=False,
            tool_call_count=0,
            termination_reason="no_content_no_tool_calls",
        )
    )
    await handler.on_agent_end(
        AgentEndEvent(run_id=run_id, final_response="", duration_ms=20.0, node_count=1)
    )


async def play_traffic(handler: Any) -> None:
    """The fixed mix: acme mostly healthy, globex bailing, initech erroring and cancelled."""
    with tenant_scope("acme"):
        for i in range(3):
            await play(handler, react_parallel_tools(f"acme-ok-{i}", BASE))
        await replay(handler, bail_with_synthesis("acme-bail", "q"))
    with tenant_scope("globex"):
        await play(handler, silent_bail_then_synthesis("globex-1", BASE, recovered=True))
        await play(handler, silent_bail_then_synthesis("globex-2", BASE, recovered=False))
        await _empty_completion(handler, "globex-3")
        await play(handler, react_parallel_tools("globex-ok", BASE, failing="weather"))
    with tenant_scope("initech"):
        await play(handler, tool_raises("initech-err", BASE))
        await play(handler, interrupted("initech-cut", BASE))


def scrape(port: int, openmetrics: bool = False) -> str:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if openmetrics:
        request.add_header("Accept", OPENMETRICS)
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(response.read().decode())


Family = tuple[str, str, str]  # documentation, type, unit
Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(
    text: str, families: tuple[str, ...] = TENANT_FAMILIES
) -> tuple[dict[str, Family], Series]:
    """The named families' HELP, TYPE and unit, and every sample's value by name and labels."""
    found: dict[str, Family] = {}
    series: Series = {}
    for family in text_string_to_metric_families(text):
        name = family.name.removesuffix("_total")
        if name not in families:
            continue
        found[name] = (family.documentation, family.type, family.unit)
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in series, f"series served twice: {key}"
            series[key] = sample.value
    return found, series
