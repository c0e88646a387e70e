"""Loops under threads: one run's tool and model calls reported from many threads at once.

The counts take no lock (plain int increments, each signature's calls numbered by ``next`` on
its own counter) and only a detection does: every call must still be counted exactly once, the
repeats must be exactly the calls past each signature's first, and the run must loop once.
The interpreter is made to switch threads as often as it can, so a count that is not atomic
loses increments here.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from symfonic_otel import OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.core import loops
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    LLMEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
)
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.loop_support import all_loop_events, looping, repeated, run_spans

THREADS = 8
CALLS = 100  # per thread
SIGNATURES = 5


@pytest.fixture(autouse=True)
def _switch_often() -> Iterator[None]:
    saved = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(saved)


def _race(target: object, *args: object) -> None:
    barrier = threading.Barrier(THREADS)

    def work(thread: int) -> None:
        barrier.wait()
        target(thread, *args)  # type: ignore[operator]

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _calls(thread: int, h: OTelCallbackHandler, with_models: bool) -> None:
    for i in range(CALLS):
        call_id = f"{thread}-{i}"
        arguments = {"q": f"query {i % SIGNATURES}", "limit": 5}
        h.tool_call_start(ToolCallStartEvent(call_id, "search", arguments, run_id="r1"))
        h.tool_result(ToolResultEvent(call_id, "search", "ok", run_id="r1"))
        if with_models:
            h.llm_end(LLMEndEvent("gpt-4o", "", {}, run_id="r1", node_name="react"))


@pytest.mark.parametrize("with_models", [False, True], ids=["tools", "tools-and-models"])
def test_racing_threads_count_every_call_once_and_loop_once(
    telemetry: InMemoryTelemetry, with_models: bool
) -> None:
    h = telemetry.handler()
    with tenant_scope("acme"):
        h.agent_start(AgentStartEvent("q", "r1"))
    _race(_calls, h, with_models)
    total = THREADS * CALLS
    assert h.is_open("r1")  # read while it runs: the repeats and the looping run are there
    while_open = repeated(telemetry, tenant__id="acme"), looping(telemetry, tenant__id="acme")
    h.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    assert while_open == (total - SIGNATURES, 1)
    (event,) = all_loop_events(telemetry)
    if event[semconv.LOOP_KIND] == semconv.LOOP_REPEATED_TOOL_CALL:
        assert event[semconv.LOOP_COUNT] == 3  # the threshold-th identical call, exactly
    else:
        assert with_models and event[semconv.LOOP_COUNT] == 51
    (run,) = run_spans(telemetry)
    attrs = run.attributes or {}
    assert attrs[semconv.RUN_TOOL_CALLS] == total
    assert attrs[semconv.RUN_REPEATED_TOOL_CALLS] == total - SIGNATURES
    assert attrs[semconv.RUN_INFERENCE_CALLS] == (total if with_models else 0)
    assert repeated(telemetry, tenant__id="acme") == total - SIGNATURES


def _facts(thread: int, h: OTelCallbackHandler, run: object) -> None:
    """The loop facts themselves, nothing else between them: the tightest race."""
    core = h._core
    for i in range(CALLS * 10):
        loops.tool_call(core, run, "search", {"q": f"query {i % SIGNATURES}"})  # type: ignore[arg-type]
        loops.model_call(core, run)  # type: ignore[arg-type]


def test_racing_facts_count_exactly(telemetry: InMemoryTelemetry) -> None:
    """Fails when a count's read and store can be split (a call between them loses some)."""
    h = telemetry.handler(runaway_calls=10**6)
    with tenant_scope("acme"):
        h.agent_start(AgentStartEvent("q", "r1"))
    run = h._core.runs.get("r1")
    _race(_facts, h, run)
    total = THREADS * CALLS * 10
    while_open = repeated(telemetry, tenant__id="acme")
    h.agent_end(AgentEndEvent("r1", "answer", 10.0, 1))
    assert while_open == total - SIGNATURES
    (event,) = all_loop_events(telemetry)
    assert event[semconv.LOOP_COUNT] == 3
    attrs = run_spans(telemetry)[0].attributes or {}
    assert attrs[semconv.RUN_TOOL_CALLS] == total
    assert attrs[semconv.RUN_INFERENCE_CALLS] == total
    assert attrs[semconv.RUN_REPEATED_TOOL_CALLS] == total - SIGNATURES
