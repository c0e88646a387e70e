"""cProfile of the hot paths (``--profile``) instead of the benchmark."""

from __future__ import annotations

import cProfile
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from events_path import _five_calls
from workloads import (
    MINIMUM,
    OURS,
    WORKLOADS,
    CyclingChatModel,
    Sdk,
    Subject,
    langchain_subjects,
    minimum_plan,
    next_run_id,
)

from symfonic_otel import OTelCallbackHandler


def _profile_turns(subject: Subject, turns: int, title: str) -> None:
    runnable = WORKLOADS["ReAct turn (RunnableLambda)"][0](CyclingChatModel())
    payload = WORKLOADS["ReAct turn (RunnableLambda)"][1]
    config = {"callbacks": subject.callbacks}
    for _ in range(200):
        runnable.invoke(payload, config=config)
    subject.sdk.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(turns):
        runnable.invoke(payload, config=config)
    subject.sdk.collect()
    profiler.disable()
    print(f"== {title}: LangChain ReAct turn x{turns} (incl. one collection), by own time ==")
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(r"symfonic_otel|opentelemetry|minimum", 30)
    print(f"== {title}: by cumulative time, symfonic_otel only ==")
    stats.sort_stats("cumulative").print_stats(r"symfonic_otel", 25)


def profile(turns: int) -> None:
    """cProfile of the ReAct turn with our handler and with the SDK minimum, and the five
    events: what our handler spends beyond the SDK's own work shows as the difference."""
    build, payload = WORKLOADS["ReAct turn (RunnableLambda)"]
    for subject in langchain_subjects(minimum_plan(build, payload)):
        if subject.name in (OURS, MINIMUM):
            _profile_turns(subject, turns, subject.name)
        subject.sdk.shutdown()
    sdk = Sdk.realistic()
    handler = OTelCallbackHandler(
        tracer_provider=sdk.tracer_provider, meter_provider=sdk.meter_provider
    )
    five = _five_calls(handler)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(turns):
        five(next_run_id())
    sdk.collect()
    profiler.disable()
    print(f"== five events x{turns} through OTelCallbackHandler (incl. one collection) ==")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    sdk.shutdown()
