"""A fleet's mix of runs for outcome retention: healthy, bailing, failing, looping, fabricating.

Each run is a scripted Symfonic event sequence played through the handler: the same shapes as
the agent-shape tests (a ReAct turn with two parallel tools, a bail recovered by synthesis, a
tool raising), plus a bail with no fallback, a loop stop and a fabrication detection.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from symfonic_otel import tenant_scope
from symfonic_otel.events import AgentEndEvent, FabricationDetectedEvent
from tests.support.event_scripts import (
    ANSWER,
    RUN_DURATION_MS,
    Script,
    play,
    react_parallel_tools,
    silent_bail_then_synthesis,
    tool_raises,
)
from tests.support.symfonic_events import AgentEnd

BASE: Final = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
HEALTHY: Final = "healthy"
# The kinds whose traces outcome retention must always export whole.
FAILING: Final = ("bail_fallback", "bail", "error", "loop", "fabrication")


@dataclass(frozen=True)
class PlannedRun:
    kind: str
    run_id: str
    tenant: str


def kind_of(index: int) -> str:
    """10 % bails (half with a synthesis fallback), 5 % errors, 2 % loops, 2 % fabrications."""
    if index % 20 == 0:
        return "bail_fallback"
    if index % 20 == 10:
        return "bail"
    if index % 20 == 5:
        return "error"
    if index % 50 == 1:
        return "loop"
    if index % 50 == 3:
        return "fabrication"
    return HEALTHY


def plan(runs: int, tenants: int = 20) -> list[PlannedRun]:
    return [
        PlannedRun(kind_of(i), f"run-{i:05d}-{kind_of(i)}", f"tenant-{(i // 7) % tenants:02d}")
        for i in range(runs)
    ]


def script(kind: str, run_id: str) -> Script:
    if kind == "bail_fallback":
        return silent_bail_then_synthesis(run_id, BASE, recovered=True)
    if kind == "bail":  # the loop ends without text and nothing recovers it
        steps = silent_bail_then_synthesis(run_id, BASE, recovered=False)
        return [*steps[:-4], ("on_agent_end", AgentEnd(run_id, "", RUN_DURATION_MS, 1))]
    if kind == "error":
        return tool_raises(run_id, BASE)
    steps = react_parallel_tools(run_id, BASE)
    if kind == "loop":
        end = AgentEndEvent(
            run_id=run_id,
            final_response=ANSWER,
            duration_ms=RUN_DURATION_MS,
            node_count=3,
            stop_reason="loop_detected",
        )
        return [*steps[:-1], ("on_agent_end", end)]
    if kind == "fabrication":
        detection = FabricationDetectedEvent(
            run_id=run_id,
            mode="observe",
            action_taken="observed",
            findings=[{"kind": "unsupported_url", "claim": "x"}],
            refuse_threshold=0.8,
            max_finding_confidence=0.7,
            original_draft_preview="",
            replacement_preview=None,
            preview_truncated=False,
        )
        return [*steps[:-1], ("on_fabrication_detected", detection), steps[-1]]
    return steps


async def play_all(handler: Any, runs: list[PlannedRun]) -> None:
    for run in runs:
        with tenant_scope(run.tenant):
            await play(handler, script(run.kind, run.run_id))
