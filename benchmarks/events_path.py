"""Benchmark 2: the five Symfonic-style events through OTelCallbackHandler vs the SDK minimum."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import Row, Slice, _ratio, added, interleave
from minimum import Plan, Replay, discover
from workloads import (
    BASELINE,
    Sdk,
    next_run_id,
)

from symfonic_otel import OTelCallbackHandler
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    FabricationDetectedEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
)

_STARTED_AT = "2025-06-01T12:00:00.000000+00:00"


def _five_events(run_id: str) -> tuple[Any, ...]:
    return (
        AgentStartEvent(query="How did revenue grow?", run_id=run_id),
        LLMEndEvent(
            model="gpt-4o-mini",
            output="",
            usage={"input_tokens": 420, "output_tokens": 48},
            run_id=run_id,
            node_name="react",
            duration_ms=850.0,
            started_at_utc=_STARTED_AT,
            iteration_index=0,
        ),
        ReactLoopEndEvent(
            run_id=run_id,
            iteration_index=0,
            content_type="str",
            has_tool_calls=True,
            tool_call_count=1,
            termination_reason="tool_calls_with_no_text",
        ),
        FabricationDetectedEvent(
            run_id=run_id,
            mode="observe",
            action_taken="observed",
            findings=[{"kind": "unsupported_number", "claim": "42%", "confidence": 0.7}],
            refuse_threshold=0.8,
            max_finding_confidence=0.7,
            original_draft_preview="",
            replacement_preview=None,
            preview_truncated=False,
        ),
        AgentEndEvent(run_id=run_id, final_response="", duration_ms=900.0, node_count=2),
    )


def _five_calls(handler: OTelCallbackHandler, step: Any = None) -> Callable[[str], None]:
    """One run's five events through ``handler`` (with ``step()`` after each, for discovery)."""

    def run(run_id: str) -> None:
        start, llm, loop_end, fabrication, end = _five_events(run_id)
        for method, event in (
            (handler.agent_start, start),
            (handler.llm_end, llm),
            (handler.react_loop_end, loop_end),
            (handler.fabrication_detected, fabrication),
            (handler.agent_end, end),
        ):
            method(event)
            if step is not None:
                step()

    return run


def events_plan() -> Plan:
    """What ``OTelCallbackHandler`` makes of the five events, for the SDK minimum to replay."""

    def make(sdk: Any) -> OTelCallbackHandler:
        return OTelCallbackHandler(
            tracer_provider=sdk.tracer_provider,
            meter_provider=sdk.meter_provider,
            capture_content=False,
        )

    def turn(handler: OTelCallbackHandler, step: Callable[[], None]) -> None:
        _five_calls(handler, step)(next_run_id())

    return discover(make, turn)


EVENTS_MINIMUM = "SDK minimum, same telemetry"


def _events_slices(ours: OTelCallbackHandler, replay: Replay) -> dict[str, Slice]:
    step = replay.step

    def none(n: int) -> None:
        for _ in range(n):
            _five_events(next_run_id())

    def minimum(n: int) -> None:
        for _ in range(n):
            _five_events(next_run_id())
            step()
            step()
            step()
            step()
            step()

    def symfonic(n: int) -> None:
        handler = ours
        for _ in range(n):
            start, llm, loop_end, fabrication, end = _five_events(next_run_id())
            handler.agent_start(start)
            handler.llm_end(llm)
            handler.react_loop_end(loop_end)
            handler.fabrication_detected(fabrication)
            handler.agent_end(end)

    return {BASELINE: none, EVENTS_MINIMUM: minimum, "OTelCallbackHandler": symfonic}


def events_path(rounds: int, per_slice: int) -> list[Row]:
    plan = events_plan()
    print(f"five events: our telemetry per run, replayed by the SDK minimum: {plan.describe()}")
    sdks = {name: Sdk.realistic() for name in (BASELINE, EVENTS_MINIMUM, "OTelCallbackHandler")}
    ours = OTelCallbackHandler(
        tracer_provider=sdks["OTelCallbackHandler"].tracer_provider,
        meter_provider=sdks["OTelCallbackHandler"].meter_provider,
        capture_content=False,
    )
    replay = Replay(sdks[EVENTS_MINIMUM].tracer_provider, sdks[EVENTS_MINIMUM].meter_provider, plan)
    slices = _events_slices(ours, replay)
    collects = {name: sdk.collect for name, sdk in sdks.items()}
    timings = interleave(slices, collects, rounds=rounds, per_slice=per_slice)
    minimum = sum(added(timings, EVENTS_MINIMUM, BASELINE)[:2])
    base = timings[BASELINE]
    rows = [
        Row(
            "5 events of one run",
            "sync",
            "events only",
            "0",
            statistics.median(base.turn),
            0.0,
            statistics.median(base.wall),
        )
    ]
    spans = str(plan.span_count)
    for name in (EVENTS_MINIMUM, "OTelCallbackHandler"):
        hot, deferred, wall = added(timings, name, BASELINE)
        rows.append(
            Row(
                "5 events of one run",
                "sync",
                name,
                spans,
                hot,
                deferred,
                wall,
                _ratio(hot + deferred, minimum),
            )
        )
    for sdk in sdks.values():
        sdk.shutdown()
    return rows
