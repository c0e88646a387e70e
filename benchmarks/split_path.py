"""Benchmark 1b: where the LangChain path's cost goes, spans (and our Python) vs metric work."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain_core.callbacks import BaseCallbackHandler
from measure import _fmt, _measure, _ratio, added
from minimum import SdkMinimum
from opentelemetry.metrics import NoOpMeter, NoOpMeterProvider
from workloads import (
    BASELINE,
    MINIMUM,
    OURS,
    WORKLOADS,
    Sdk,
    Subject,
    langchain_subjects,
    minimum_plan,
)

from symfonic_otel.emit.recorder import recorder_for

MINIMUM_SPANS = "SDK minimum, spans only"
OURS_NO_METER = "LangChainCallbackHandler, no-op meter"


class _NoOpMeters(NoOpMeterProvider):
    """One no-op meter for every caller; its collection drains our handler's queue (as the
    SDK's would), so queued values are applied, not left to pile up to the queue's cap."""

    def __init__(self) -> None:
        self._meter = NoOpMeter("benchmark")

    def get_meter(self, name: str, *args: Any, **kwargs: Any) -> NoOpMeter:
        return self._meter

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        recorder_for(self._meter).collect()
        return True

    def shutdown(self) -> None:
        self.force_flush()


def _no_meter_sdk() -> Sdk:
    sdk = Sdk.realistic()
    sdk.meter_provider.shutdown()
    return Sdk(sdk.tracer_provider, _NoOpMeters())  # type: ignore[arg-type]


def _ours_without_meter(sdk: Sdk) -> list[BaseCallbackHandler]:
    """Our handler with the real tracer and a no-op meter: all of our Python runs (metric
    bookkeeping included), only the SDK's metric work is gone."""
    from symfonic_otel import LangChainCallbackHandler

    return [
        LangChainCallbackHandler(
            tracer_provider=sdk.tracer_provider,
            meter_provider=sdk.meter_provider,
            capture_content=False,
        )
    ]


def split_path(rounds: int, per_slice: int, loop: asyncio.AbstractEventLoop) -> list[str]:
    """The ReAct turn measured twice over: the full telemetry, and the spans alone (the SDK
    minimum's plan without its measurements, our handler on a no-op meter). The difference of
    the two is each subject's metric work; what our spans-only row costs above the minimum's
    is our own Python."""
    workload = "ReAct turn (RunnableLambda)"
    build, payload = WORKLOADS[workload]
    plan = minimum_plan(build, payload)
    spans_plan = replace(plan, steps=tuple(replace(step, records=()) for step in plan.steps))
    subjects = []
    for subject in langchain_subjects(plan):
        if subject.name in (BASELINE, MINIMUM, OURS):
            subjects.append(subject)
        else:
            subject.sdk.shutdown()
    subjects += [
        Subject(
            MINIMUM_SPANS,
            lambda sdk: [SdkMinimum(sdk.tracer_provider, sdk.meter_provider, spans_plan)],
        ).build(),
        Subject(OURS_NO_METER, _ours_without_meter, _no_meter_sdk()).build(),
    ]
    lines = [f"{workload}, CPU µs per turn above the baseline (deferred work included):"]
    for mode in ("invoke", "ainvoke"):
        timings = _measure(subjects, build, payload, mode, loop, rounds, per_slice)
        cost = {s.name: sum(added(timings, s.name, BASELINE)[:2]) for s in subjects[1:]}
        spans_min, spans_ours = cost[MINIMUM_SPANS], cost[OURS_NO_METER]
        metrics_min, metrics_ours = cost[MINIMUM] - spans_min, cost[OURS] - spans_ours
        lines.append(
            f"  {mode}: all: minimum {cost[MINIMUM]:,.0f}, ours {cost[OURS]:,.0f} "
            f"({_fmt(_ratio(cost[OURS], cost[MINIMUM]))}); spans and our Python: minimum "
            f"{spans_min:,.0f}, ours {spans_ours:,.0f} ({_fmt(_ratio(spans_ours, spans_min))}); "
            f"metric work: minimum {metrics_min:,.0f}, ours {metrics_ours:,.0f} "
            f"({_fmt(_ratio(metrics_ours, metrics_min))}); our Python above the SDK: "
            f"{spans_ours - spans_min:,.0f}; for 1.15x it must be under "
            f"{1.15 * cost[MINIMUM] - metrics_ours - spans_min:,.0f}"
        )
    for subject in subjects:
        subject.sdk.shutdown()
    return lines
