"""A collector that is down or stuck never hurts the agent; sustained load keeps memory flat.

Everything is configured the way an operator would: ``configure_telemetry`` reading the standard
``OTEL_*`` variables, the real OTLP exporters (gRPC and HTTP), the reference loop with the
handler. The bounds on ``force_flush`` / ``shutdown`` of an idle configuration against a dead
collector are in ``test_otlp_export.py``
(``test_flush_and_shutdown_are_bounded_when_the_collector_is_unreachable``); here they are
checked again after the agent has loaded the export pipeline.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from structlog.testing import capture_logs

from symfonic_otel.core.runs import OpenRun
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from tests.support.reliability_support import (
    ANSWER,
    EXPORT_INTERVAL_MS,
    LatencyResult,
    RaiseSpy,
    dead_collector,
    handler_for,
    handler_run,
    live_instances,
    measure_latency,
    no_exporter_telemetry,
    rss_mb,
)

LATENCY_BOUND = 1.10  # the bound: per-run latency within 1.1x of no exporter
ROUNDS = 24  # interleaved rounds; every round runs each arm's batch once
BATCH = 6
EXTRA_ROUNDS = 16  # added (at most twice) when a ratio lands above the bound: more data, not luck
MODEL_LATENCY_S = 0.003  # a few ms per scripted model call, so the agent run dominates
FLUSH_TIMEOUT_MS = 1_000
SHUTDOWN_TIMEOUT_MS = 1_500
# Scheduling slack on a loaded 2-core machine, on top of the configured timeout.
SLACK_S = 1.0

WARM_UP_RUNS = 4_000
LOAD_RUNS = 16_000  # 20,000 runs in all; benchmarks/reliability.py runs 100,000
QUEUE_SIZE = 2048
BATCH_SIZE = 512
RSS_GROWTH_BOUND_MB = 10.0  # ~500 bytes a run: one leaked span per run would be ~10x that


pytestmark = pytest.mark.usefixtures("clean_otel_env")


@pytest.fixture
def collectors() -> Iterator[dict[str, str]]:
    with dead_collector("refused") as refused, dead_collector("hanging") as hanging:
        yield {"refused": refused, "hanging": hanging}


def _otlp_telemetry(monkeypatch: pytest.MonkeyPatch, endpoint: str, protocol: str) -> Telemetry:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # the span exporter tries all the time
    return configure_telemetry(set_global=False, export_interval_ms=EXPORT_INTERVAL_MS)


def _bounded(telemetry: Telemetry, call: str, timeout_ms: int) -> float:
    started = time.monotonic()
    getattr(telemetry, call)(timeout_millis=timeout_ms)
    return time.monotonic() - started


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
async def test_dead_collector_leaves_agent_runs_complete_and_as_fast(
    monkeypatch: pytest.MonkeyPatch, collectors: dict[str, str], protocol: str
) -> None:
    """Refused and hanging collectors: every run completes with its answer, the handler raises
    nothing, per-run latency stays within 1.1x of the same handler with no exporter (measured in
    interleaved batches), and flush / shutdown of the loaded pipeline keep their timeouts."""
    telemetries = {
        "none": no_exporter_telemetry(),
        **{
            kind: _otlp_telemetry(monkeypatch, endpoint, protocol)
            for kind, endpoint in collectors.items()
        },
    }
    try:
        spies = {arm: RaiseSpy(handler_for(telemetry)) for arm, telemetry in telemetries.items()}
        # First calls import lazily and build tool schemas: not part of any arm's figure.
        await measure_latency(spies, rounds=1, batch=2, model_latency_s=0.0)

        result = LatencyResult(list(spies))
        await measure_latency(
            spies, rounds=ROUNDS, batch=BATCH, model_latency_s=MODEL_LATENCY_S, result=result
        )
        for _ in range(2):
            if all(result.ratio(arm, "none") <= LATENCY_BOUND for arm in collectors):
                break
            await measure_latency(
                spies,
                rounds=EXTRA_ROUNDS,
                batch=BATCH,
                model_latency_s=MODEL_LATENCY_S,
                result=result,
            )

        for arm, spy in spies.items():
            assert spy.raised == [], f"{arm}: the handler raised {spy.raised!r}"
            assert spy.calls >= 4 * BATCH * result.rounds  # start, 2 model calls, end per run
            assert result.answers[arm] == [ANSWER] * len(result.answers[arm])
            assert len(result.answers[arm]) == BATCH * result.rounds
            assert spy.handler.open_runs == 0
        ratios = {arm: round(result.ratio(arm, "none"), 3) for arm in collectors}
        assert all(ratio <= LATENCY_BOUND for ratio in ratios.values()), (
            f"{protocol}: per-run latency vs no exporter {ratios} over {result.rounds} rounds "
            f"(median batch mean without exporter {result.median_ms('none'):.1f} ms)"
        )

        for kind in collectors:
            telemetry = telemetries[kind]
            flush_s = _bounded(telemetry, "force_flush", FLUSH_TIMEOUT_MS)
            shutdown_s = _bounded(telemetry, "shutdown", SHUTDOWN_TIMEOUT_MS)
            assert flush_s < FLUSH_TIMEOUT_MS / 1000 + SLACK_S, f"{kind}: flush took {flush_s:.2f}s"
            assert shutdown_s < SHUTDOWN_TIMEOUT_MS / 1000 + SLACK_S, (
                f"{kind}: shutdown took {shutdown_s:.2f}s"
            )
    finally:
        for telemetry in telemetries.values():
            telemetry.shutdown(timeout_millis=SHUTDOWN_TIMEOUT_MS)  # no-op once shut down


def test_sustained_load_against_a_hanging_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    """20,000 runs through the handler with the batch span processor while the collector hangs:
    nothing raises, resident memory stays flat, run state and spans held are bounded by the
    registry and the export queue, and every span the full queue refused is counted and logged."""
    with dead_collector("hanging") as endpoint:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        # Longer than the test: the stuck export never returns, so exactly what entered the
        # queue (plus the one batch handed to the exporter) is kept and the rest is dropped.
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "300")
        monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", str(QUEUE_SIZE))  # the SDK defaults
        monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", str(BATCH_SIZE))
        with capture_logs() as logs:
            telemetry = configure_telemetry(set_global=False, export_interval_ms=1_000)
            handler = handler_for(telemetry)

            # Baselines: whatever other tests left alive is not this handler's doing.
            spans_before, runs_before = live_instances(ReadableSpan), live_instances(OpenRun)
            for index in range(WARM_UP_RUNS):  # fills the span queue and the metric queue
                handler_run(handler, index)
            gc.collect()
            rss_before = rss_mb()
            for index in range(WARM_UP_RUNS, WARM_UP_RUNS + LOAD_RUNS):
                handler_run(handler, index)
            gc.collect()
            rss_after = rss_mb()

            total_spans = 3 * (WARM_UP_RUNS + LOAD_RUNS)
            dropped = telemetry.dropped_spans
            spans_held = live_instances(ReadableSpan) - spans_before
            shutdown_s = _bounded(telemetry, "shutdown", SHUTDOWN_TIMEOUT_MS)

    growth = rss_after - rss_before
    assert growth < RSS_GROWTH_BOUND_MB, (
        f"RSS grew {growth:.1f} MB over {LOAD_RUNS} runs ({rss_before:.1f} -> {rss_after:.1f})"
    )
    assert handler.open_runs == 0
    assert live_instances(OpenRun) <= runs_before
    # Spans still referenced: the queue and the batch stuck in the exporter, nothing per run.
    assert spans_held <= QUEUE_SIZE + 2 * BATCH_SIZE + 16, spans_held
    # Kept = admitted to the queue (its bound) + what the worker handed to the stuck exporter.
    kept = total_spans - dropped
    assert QUEUE_SIZE <= kept <= QUEUE_SIZE + 2 * BATCH_SIZE, (kept, total_spans)
    assert shutdown_s < SHUTDOWN_TIMEOUT_MS / 1000 + SLACK_S

    failures = [e for e in logs if e["event"] == "symfonic_otel.internal_failure"]
    kinds = [e["kind"] for e in failures]
    # Once, not once per span. Shutdown aborts the stuck export, so its batch is lost (and
    # logged) too; an earlier test's exporter may still log its own export failure here.
    assert kinds.count("span_queue_full") == 1
    assert set(kinds) <= {"span_queue_full", "span_export_failed"}
    [summary] = [e for e in logs if e["event"] == "symfonic_otel.telemetry_shutdown"]
    # Before shutdown only the full queue lost spans; the summary adds what shutdown could not
    # deliver, and says the shutdown was not clean.
    assert summary["dropped_spans_queue_full"] == dropped
    assert summary["dropped_spans"] >= dropped
    assert summary["clean"] is False
    assert summary["log_level"] == "warning"
