"""``OutcomeRetentionSpanProcessor`` and ``healthy_trace_ratio``: what is held, kept, dropped.

Real SDK tracer providers, spans exported into memory through the processor; each test reads
what was exported and the processor's counts. The bounds are checked at the cap and one past.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections import Counter
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from structlog.testing import capture_logs

from symfonic_otel import OTelCallbackHandler, OutcomeRetentionSpanProcessor, semconv
from symfonic_otel.emit.retention_marks import keep_trace
from symfonic_otel.environment import TelemetrySettingWarning
from symfonic_otel.export.retention_rules import ratio_bound, ratio_keeps
from symfonic_otel.export.setup import configure_telemetry
from tests.support.retention_runs import FAILING, HEALTHY, plan, play_all


class Rig:
    def __init__(self, ratio: float = 0.0, **bounds: int) -> None:
        self.exported = InMemorySpanExporter()
        self.retention = OutcomeRetentionSpanProcessor(
            SimpleSpanProcessor(self.exported), healthy_trace_ratio=ratio, **bounds
        )
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.retention)
        self.tracer = self.provider.get_tracer("app")

    def exported_traces(self) -> Counter[int]:
        return Counter(span.context.trace_id for span in self.exported.get_finished_spans())


@pytest.fixture
def rig() -> Iterator[Rig]:
    made = Rig()
    yield made
    made.provider.shutdown()


def _run(rig: Rig, *, children: int = 2, **root_attributes: object) -> int:
    with rig.tracer.start_as_current_span("invoke_agent a", attributes=root_attributes) as root:  # type: ignore[arg-type]
        for i in range(children):
            with rig.tracer.start_as_current_span(f"chat {i}"):
                pass
        return root.get_span_context().trace_id


def test_healthy_runs_are_dropped_at_ratio_zero_and_failing_ones_kept_whole(rig: Rig) -> None:
    healthy = _run(rig, **{semconv.RUN_OUTCOME: "completed"})
    errored = _run(rig, **{semconv.RUN_OUTCOME: "error"})
    bailed = _run(rig, **{semconv.REACT_TERMINATION_REASON: "tool_calls_with_no_text"})
    looped = _run(rig, **{semconv.RUN_STOP_REASON: "loop_detected"})
    with rig.tracer.start_as_current_span("invoke_agent a") as span:
        span.add_event(semconv.EVENT_LOOP_DETECTED)
        loop_event = span.get_span_context().trace_id
    with rig.tracer.start_as_current_span("invoke_agent a") as span:
        with rig.tracer.start_as_current_span("chat", attributes={semconv.NODE_NAME: "x"}):
            pass
        with rig.tracer.start_as_current_span(
            "chat", attributes={semconv.NODE_NAME: semconv.NODE_SYNTHESIZE_FALLBACK}
        ):
            pass
        fallback = span.get_span_context().trace_id
    with rig.tracer.start_as_current_span("GET /", record_exception=False) as span:
        span.set_status(Status(StatusCode.ERROR))
        failed_root = span.get_span_context().trace_id
    traces = rig.exported_traces()
    assert healthy not in traces
    for trace_id in (errored, bailed, looped, fallback):
        assert traces[trace_id] == 3
    assert traces[loop_event] == 1 and traces[failed_root] == 1
    assert rig.retention.dropped_spans[semconv.RETENTION_DROP_UNSAMPLED] == 3


def test_a_mark_keeps_a_run_whose_spans_show_nothing(rig: Rig) -> None:
    with rig.tracer.start_as_current_span("invoke_agent a") as root:
        with rig.tracer.start_as_current_span("chat"):
            pass
        assert keep_trace(root.get_span_context()) is True  # what loop detection calls
    assert rig.exported_traces() == {root.get_span_context().trace_id: 2}


def test_the_ratio_decides_from_the_trace_id_like_the_sdk_sampler() -> None:
    rig = Rig(ratio=0.5)
    ids = [_run(rig, children=0) for _ in range(400)]
    bound = ratio_bound(0.5)
    assert set(rig.exported_traces()) == {t for t in ids if ratio_keeps(t, bound)}
    assert 120 < len(rig.exported_traces()) < 280


def test_spans_ending_after_their_root_follow_its_decision(rig: Rig) -> None:
    root = rig.tracer.start_span("invoke_agent a", attributes={semconv.RUN_OUTCOME: "error"})
    from opentelemetry import trace

    late = rig.tracer.start_span("tool", context=trace.set_span_in_context(root))
    root.end()
    late.end()
    assert rig.exported_traces() == {root.get_span_context().trace_id: 2}


def _open_run(rig: Rig) -> tuple[object, int]:
    """A run whose root stays open, with one ended child span held."""
    from opentelemetry import trace

    root = rig.tracer.start_span("invoke_agent a")
    rig.tracer.start_span("chat", context=trace.set_span_in_context(root)).end()
    return root, root.get_span_context().trace_id


def test_at_the_span_cap_nothing_is_decided_early_and_one_past_the_oldest_is() -> None:
    rig = Rig(max_held_spans=4)
    runs = [_open_run(rig) for _ in range(4)]
    assert rig.retention.held_spans == 4 and rig.retention.held_traces == 4
    assert rig.retention.decisions == {}
    assert keep_trace(runs[0][0].get_span_context())  # type: ignore[attr-defined]
    runs.append(_open_run(rig))  # one past: the oldest trace is decided now
    assert rig.retention.held_spans == 4
    assert rig.retention.decisions == {("kept", "capacity"): 1}
    oldest_root, oldest = runs[0]
    assert rig.exported_traces() == {oldest: 1}
    oldest_root.end()  # type: ignore[attr-defined]
    assert rig.exported_traces() == {oldest: 2}  # its later spans pass straight through: whole
    runs.append(_open_run(rig))  # the next oldest, unmarked, is dropped early
    assert rig.retention.decisions == {("kept", "capacity"): 1, ("dropped", "capacity"): 1}
    second_root, second = runs[1]
    second_root.end()  # type: ignore[attr-defined]
    assert second not in rig.exported_traces()
    assert rig.retention.dropped_spans[semconv.RETENTION_DROP_DECIDED_EARLY] == 2
    # It failed after it was dropped: the mark says so, and the loss is counted.
    assert keep_trace(second) is False
    assert keep_trace(second) is False
    assert rig.retention.late_keeps == 1
    assert not rig.retention.will_export(second)


def test_the_byte_bound_decides_early_too() -> None:
    probe = Rig()
    _open_run(probe)
    one = probe.retention.held_bytes
    rig = Rig(max_held_bytes=3 * one)
    for _ in range(3):
        _open_run(rig)
    assert rig.retention.held_bytes == 3 * one and rig.retention.decisions == {}
    _open_run(rig)
    assert rig.retention.held_bytes == 3 * one
    assert rig.retention.decisions == {("dropped", "capacity"): 1}


def test_shutdown_decides_what_is_held_and_flush_exports_the_kept(rig: Rig) -> None:
    root, trace_id = _open_run(rig)
    keep_trace(trace_id)
    _open_run(rig)  # a healthy run, dropped at ratio 0
    assert rig.provider.force_flush()
    assert rig.exported_traces() == {}  # open runs stay held over a flush
    rig.provider.shutdown()
    assert rig.exported_traces() == {trace_id: 1}
    assert rig.retention.held_spans == 0
    root.end()  # type: ignore[attr-defined]  # after shutdown: passed on, never raised


def test_concurrent_runs_from_many_threads_are_kept_whole() -> None:
    rig = Rig()
    failing: list[int] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        for i in range(60):
            attributes = {semconv.RUN_OUTCOME: "error"} if i % 3 == 0 else {}
            trace_id = _run(rig, children=3, **attributes)
            if attributes:
                with lock:
                    failing.append(trace_id)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert rig.exported_traces() == dict.fromkeys(failing, 4)
    assert rig.retention.held_spans == 0 and rig.retention.held_traces == 0


@pytest.mark.parametrize("bad", [1.5, -0.1, math.nan, "0.5", True, None])
def test_a_bad_ratio_is_refused_naming_the_option(bad: object) -> None:
    with pytest.raises(ValueError, match="healthy_trace_ratio"):
        OutcomeRetentionSpanProcessor(
            SimpleSpanProcessor(InMemorySpanExporter()),
            healthy_trace_ratio=bad,  # type: ignore[arg-type]
        )
    if bad is not None:
        with pytest.raises(ValueError, match="healthy_trace_ratio"):
            configure_telemetry(otlp=False, set_global=False, healthy_trace_ratio=bad)  # type: ignore[arg-type]


def test_bad_bounds_and_inner_are_refused_naming_the_argument() -> None:
    inner = SimpleSpanProcessor(InMemorySpanExporter())
    for option in ("max_held_spans", "max_held_bytes"):
        with pytest.raises(ValueError, match=option):
            OutcomeRetentionSpanProcessor(inner, healthy_trace_ratio=0.1, **{option: 0})
    with pytest.raises(TypeError, match="inner"):
        OutcomeRetentionSpanProcessor(object(), healthy_trace_ratio=0.1)  # type: ignore[arg-type]


def test_the_environment_sets_the_ratio_and_a_bad_value_only_warns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.setenv(semconv.HEALTHY_TRACE_RATIO_ENV, "0.25")
    with configure_telemetry(set_global=False) as telemetry:
        assert telemetry.retention is not None
        assert telemetry.retention.healthy_trace_ratio == 0.25
    with configure_telemetry(set_global=False, healthy_trace_ratio=1.0) as telemetry:
        assert telemetry.retention is None  # the argument wins over the variable
    monkeypatch.setenv(semconv.HEALTHY_TRACE_RATIO_ENV, "one percent")
    with (
        capture_logs() as logs,
        pytest.warns(TelemetrySettingWarning, match=semconv.HEALTHY_TRACE_RATIO_ENV),
        configure_telemetry(set_global=False) as telemetry,
    ):
        assert telemetry.retention is None
    (warning,) = [e for e in logs if e["event"] == "symfonic_otel.bad_environment_variable"]
    assert warning["log_level"] == "warning"
    assert warning["variable"] == semconv.HEALTHY_TRACE_RATIO_ENV
    assert warning["value"] == "one percent"


def test_through_the_handler_every_way_a_run_fails_is_kept() -> None:
    rig = Rig()
    handler = OTelCallbackHandler(tracer_provider=rig.provider)
    runs = plan(100)
    asyncio.run(play_all(handler, runs))
    kind_of = {run.run_id: run.kind for run in runs}
    exported = Counter(
        kind_of[str(span.attributes.get(semconv.RUN_ID))]
        for span in rig.exported.get_finished_spans()
        if span.name.startswith("invoke_agent") and span.attributes
    )
    assert HEALTHY not in exported
    assert exported == Counter(run.kind for run in runs if run.kind in FAILING)
    assert set(exported) == set(FAILING)
