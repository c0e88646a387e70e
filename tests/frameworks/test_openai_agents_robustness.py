"""The Agents SDK processor never raises into the SDK and keeps bounded state.

Events arrive malformed, duplicated, out of order or never end; the processor is fed duck-typed
spans directly (the SDK would not produce these) and real runs afterwards still record.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from symfonic_otel import tenant_scope
from symfonic_otel.invocation import FrameworkRun, RunIndex
from symfonic_otel.openai_agents import SymfonicTracingProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import adapter_checks as checks
from tests.support.openai_agents_support import sdk_span as _span

RUNS = "symfonic.agent.runs"


def _start_run(processor: SymfonicTracingProcessor, n: int) -> None:
    processor.on_span_start(_span("task", f"task{n}", f"trace{n}", None))
    processor.on_span_start(_span("agent", f"agent{n}", f"trace{n}", f"task{n}", name="a"))


def test_garbage_never_raises_and_is_counted(telemetry: InMemoryTelemetry) -> None:
    processor = SymfonicTracingProcessor(handler=telemetry.handler())
    for junk in (object(), None, 42, SimpleNamespace(span_data=None)):
        processor.on_span_start(junk)  # type: ignore[arg-type]
        processor.on_span_end(junk)  # type: ignore[arg-type]
        processor.on_trace_start(junk)  # type: ignore[arg-type]
        processor.on_trace_end(junk)  # type: ignore[arg-type]
    assert sum(processor.internal_failures().values()) >= 4
    assert processor.open_runs == 0


def test_an_end_before_its_start_and_a_duplicate_are_ignored(
    telemetry: InMemoryTelemetry,
) -> None:
    processor = SymfonicTracingProcessor(handler=telemetry.handler())
    processor.on_span_end(_span("task", "early", "t", None))  # never started: nothing
    _start_run(processor, 1)
    _start_run(processor, 1)  # redelivered starts
    end = _span("task", "task1", "trace1", None)
    processor.on_span_end(_span("agent", "agent1", "trace1", "task1"))
    processor.on_span_end(end)
    processor.on_span_end(end)  # redelivered end
    assert telemetry.value(RUNS) == 1
    assert processor.open_runs == 0 and processor.internal_failures() == {}


@checks.open_runs_past_a_cap_of_two
def test_open_runs_are_capped_the_oldest_ends_abandoned(
    telemetry: InMemoryTelemetry, started: int, open_after: int
) -> None:
    processor = SymfonicTracingProcessor(handler=telemetry.handler(), max_open_runs=2)
    for n in range(started):
        _start_run(processor, n)
    # the SDK's exit (shutdown) ends what is left abandoned too
    checks.assert_open_runs_capped(telemetry, processor, started, open_after, processor.shutdown)


def test_spans_indexed_per_run_are_capped_at_the_limit() -> None:
    index = RunIndex(max_runs=4, max_keys=2)
    run = FrameworkRun("r", group="t")
    index.add(run)
    assert index.index(run, "a") and index.index(run, "b")  # at the limit
    assert not index.index(run, "c")  # one past it
    assert index.owner("c", "t") is run  # an unindexed span's children fall back to the trace
    index.release("a")
    assert index.index(run, "c")
    index.pop("r")
    assert index.indexed_spans == 0 and len(index) == 0


def test_a_trace_ending_before_its_run_ends_the_run(telemetry: InMemoryTelemetry) -> None:
    processor = SymfonicTracingProcessor(handler=telemetry.handler())
    with tenant_scope("acme"):
        _start_run(processor, 7)
    processor.on_trace_end(SimpleNamespace(trace_id="trace7"))  # type: ignore[arg-type]
    assert processor.open_runs == 0
    assert telemetry.value(RUNS, {"symfonic.run.outcome": "abandoned"}) == 1


def test_bad_options_name_the_class() -> None:
    with pytest.raises(ValueError, match="SymfonicTracingProcessor: max_open_runs"):
        SymfonicTracingProcessor(max_open_runs=0)
    with pytest.raises(TypeError, match="SymfonicTracingProcessor: pass handler= or"):
        SymfonicTracingProcessor(handler=object(), agent_name="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="SymfonicTracingProcessor: handler must be"):
        SymfonicTracingProcessor(handler=object())  # type: ignore[arg-type]
