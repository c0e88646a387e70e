"""No span is lost silently: the real OTLP exporters, gRPC and HTTP, against the test receiver.

Hostile events travel in the same batches as good runs; before this package validated its input,
one such event made the OTLP encoder reject a whole batch (up to 512 spans of every tenant). Here
every good run's spans and every hostile event's spans must arrive, and anything the exporter
cannot deliver must be counted and reported.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from symfonic_otel import semconv
from symfonic_otel.events import AgentStartEvent
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from tests.support.configured_handler import handler_on, shut_one_of_two
from tests.support.hostile_events import CASES, TIMING_CASES, good_run, play
from tests.support.otlp_receiver import (
    GrpcOtlpReceiver,
    HttpOtlpReceiver,
    OtlpReceiver,
    ReceivedPoint,
    points_of,
    refused_endpoint,
)

GOOD_RUNS = 100


pytestmark = pytest.mark.usefixtures("clean_otel_env")


@pytest.fixture(params=["grpc", "http/protobuf"])
def receiver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    server: OtlpReceiver = GrpcOtlpReceiver() if request.param == "grpc" else HttpOtlpReceiver()
    with server:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", server.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", server.protocol)
        yield server


def _configure(**kwargs: Any) -> Telemetry:
    kwargs.setdefault("set_global", False)
    kwargs.setdefault("export_interval_ms", 60_000)  # only flushes and shutdown export
    return configure_telemetry(**kwargs)


def _last_points(receiver: OtlpReceiver, name: str) -> list[ReceivedPoint]:
    """Points of ``name`` in the last metrics export (cumulative: the final totals)."""
    requests = receiver.metric_requests()
    for request in reversed(requests):
        points = [p for p in points_of([request]) if p.name == name]
        if points:
            return points
    return []


def _total(points: list[ReceivedPoint], **where: Any) -> float:
    return sum(
        p.value or 0.0
        for p in points
        if all(p.attributes.get(key) == value for key, value in where.items())
    )


def _run_ids(receiver: OtlpReceiver) -> list[str]:
    return [str(s.attributes.get(semconv.RUN_ID)) for s in receiver.spans()]


def test_every_span_arrives_when_hostile_events_share_the_batches(receiver: OtlpReceiver) -> None:
    with capture_logs() as logs:
        telemetry = _configure()
        handler = handler_on(telemetry, capture_content=True)
        hostile_ids: dict[str, str] = {}
        names = sorted(CASES)
        for index in range(GOOD_RUNS):
            good_run(handler, f"good-{index:03d}")
            if index % 5 == 0 and names:  # hostile runs spread across the batches
                name = names.pop()
                hostile_ids[name] = play(handler, CASES[name], f"hostile-{name}")
        for name in names:
            hostile_ids[name] = play(handler, CASES[name], f"hostile-{name}")
        clean = telemetry.shutdown(timeout_millis=10_000)

    expected = 2 * GOOD_RUNS + sum(case.spans for case in CASES.values())
    spans = receiver.spans()
    assert len(spans) == expected, (len(spans), expected)
    ids = _run_ids(receiver)
    for index in range(GOOD_RUNS):
        assert ids.count(f"good-{index:03d}") == 2, index
    for name, case in CASES.items():
        # Long or invalid ids arrive as their digest form; find them by their readable prefix.
        prefix = f"hostile-{name}"
        arrived = [i for i in ids if i.startswith(prefix)]
        assert len(arrived) == case.spans, (name, arrived)
        assert all(len(i.encode()) <= 128 for i in arrived)
    assert telemetry.dropped_spans == 0
    assert clean is True
    [summary] = [e for e in logs if e["event"] == "symfonic_otel.telemetry_shutdown"]
    assert (summary["clean"], summary["dropped_spans"]) == (True, 0)
    # What was malformed is counted, and the runs of every event are in the metrics.
    drops = _last_points(receiver, semconv.DROPPED_EVENTS.name)
    assert _total(drops, **{semconv.TELEMETRY_DROP_REASON: "malformed"}) == len(TIMING_CASES)
    assert _total(drops, **{semconv.TELEMETRY_DROP_REASON: "internal_error"}) == 0
    runs = _last_points(receiver, semconv.AGENT_RUNS.name)
    assert _total(runs) == GOOD_RUNS + len(CASES)


def test_an_unencodable_span_costs_only_itself_and_is_counted(receiver: OtlpReceiver) -> None:
    """A span of another instrumentation that no encoder accepts (a negative start time) sits
    in a batch of good spans: the good ones arrive, the bad one is counted as unencodable."""
    with capture_logs() as logs:
        telemetry = _configure()
        tracer = telemetry.tracer_provider.get_tracer("someone-else")
        for index in range(50):
            with tracer.start_as_current_span(f"good {index}"):
                pass
            if index == 25:
                tracer.start_span("bad clock", start_time=-5).end(end_time=10)
        clean = telemetry.shutdown(timeout_millis=10_000)

    names = sorted(s.name for s in receiver.spans())
    assert names == sorted(f"good {index}" for index in range(50))
    assert telemetry.span_losses == {
        semconv.SPAN_DROP_QUEUE_FULL: 0,
        semconv.SPAN_DROP_EXPORT_FAILED: 0,
        semconv.SPAN_DROP_UNENCODABLE: 1,
    }
    assert clean is False
    [summary] = [e for e in logs if e["event"] == "symfonic_otel.telemetry_shutdown"]
    assert summary["clean"] is False and summary["dropped_spans_unencodable"] == 1
    assert summary["log_level"] == "warning"
    # The loss reaches the backend too: the final metric export, after the traces flushed.
    lost = _last_points(receiver, semconv.DROPPED_SPANS.name)
    assert _total(lost, **{semconv.TELEMETRY_DROP_REASON: semconv.SPAN_DROP_UNENCODABLE}) == 1
    assert {p.attributes[semconv.TELEMETRY_DROP_REASON] for p in lost} == {
        semconv.SPAN_DROP_QUEUE_FULL,
        semconv.SPAN_DROP_EXPORT_FAILED,
        semconv.SPAN_DROP_UNENCODABLE,
    }


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_spans_a_dead_collector_never_got_are_counted(
    monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", refused_endpoint())
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "0.2")  # gives up after one refusal
    with capture_logs() as logs:
        telemetry = _configure()
        handler = handler_on(telemetry)
        for index in range(10):
            good_run(handler, f"lost-{index}")
        telemetry.tracer_provider.force_flush(5_000)
        clean = telemetry.shutdown(timeout_millis=5_000)
    assert telemetry.span_losses[semconv.SPAN_DROP_EXPORT_FAILED] == 20
    assert telemetry.dropped_spans == 20
    assert clean is False
    [summary] = [e for e in logs if e["event"] == "symfonic_otel.telemetry_shutdown"]
    assert summary["clean"] is False
    assert summary["dropped_spans_export_failed"] == 20


def test_runs_past_their_ttl_close_without_new_traffic(
    receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expiry runs at each metric collection: no AgentStart needed to sweep stale runs."""
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    telemetry = _configure(export_interval_ms=200)
    try:
        handler = handler_on(telemetry, run_ttl_s=0.3)
        for index in range(3):
            handler.agent_start(AgentStartEvent("q", f"stale-{index}"))
        # No further event of any kind; the periodic reader's collections do the sweep.
        assert receiver.wait_for(
            lambda r: (
                sum(s.attributes.get(semconv.RUN_OUTCOME) == "abandoned" for s in r.spans()) == 3
            ),
            timeout=10,
        )
        assert handler.open_runs == 0
        assert receiver.wait_for(
            lambda r: _total(_last_points(r, semconv.ORPHANED_RUNS.name)) == 3, timeout=10
        )
        assert receiver.wait_for(
            lambda r: _total(_last_points(r, semconv.ACTIVE_RUNS.name)) == 0, timeout=10
        )
    finally:
        telemetry.shutdown(timeout_millis=5_000)


def test_open_runs_at_shutdown_reach_the_backend_as_abandoned(receiver: OtlpReceiver) -> None:
    with capture_logs() as logs:
        telemetry = _configure()
        handler = handler_on(telemetry, agent_name="support")
        for index in range(5):
            handler.agent_start(AgentStartEvent("q", f"open-{index}"))
        good_run(handler, "finished")
        assert telemetry.shutdown(timeout_millis=10_000) is True

    abandoned = [
        s for s in receiver.spans() if s.attributes.get(semconv.RUN_OUTCOME) == "abandoned"
    ]
    assert sorted(str(s.attributes[semconv.RUN_ID]) for s in abandoned) == [
        f"open-{index}" for index in range(5)
    ]
    assert _total(_last_points(receiver, semconv.ORPHANED_RUNS.name)) == 5
    assert _total(_last_points(receiver, semconv.ACTIVE_RUNS.name)) == 0
    runs = _last_points(receiver, semconv.AGENT_RUNS.name)
    assert _total(runs, **{semconv.RUN_OUTCOME: "abandoned"}) == 5
    [summary] = [e for e in logs if e["event"] == "symfonic_otel.telemetry_shutdown"]
    assert summary["abandoned_runs"] == 5
    assert handler.open_runs == 0


EXIT_SCRIPT = """
import sys
from symfonic_otel import OTelCallbackHandler
from symfonic_otel.events import AgentStartEvent
from symfonic_otel.export.setup import configure_telemetry

telemetry = configure_telemetry(set_global=False, export_interval_ms=60_000)
handler = OTelCallbackHandler(
    tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
)
for index in range(4):
    handler.agent_start(AgentStartEvent("q", f"at-exit-{index}"))
sys.exit(0)  # no shutdown call: the interpreter's exit hooks must do it, runs first
"""


OWN_PROVIDERS_SCRIPT = """
import sys
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from symfonic_otel import OTelCallbackHandler
from symfonic_otel.events import AgentStartEvent

if sys.argv[1] == "grpc":
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
else:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

tracers = TracerProvider()  # the SDK's own exit hook flushes these
tracers.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
meters = MeterProvider(
    metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter(), 60_000)]
)
handler = OTelCallbackHandler(tracer_provider=tracers, meter_provider=meters)
for index in range(4):
    handler.agent_start(AgentStartEvent("q", f"at-exit-{index}"))
"""


@pytest.mark.parametrize("setup", ["configure_telemetry", "own providers"])
def test_process_exit_closes_open_runs_before_the_final_flush(
    receiver: OtlpReceiver, setup: str
) -> None:
    import subprocess
    import sys

    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
    env["OTEL_EXPORTER_OTLP_PROTOCOL"] = receiver.protocol
    script = EXIT_SCRIPT if setup == "configure_telemetry" else OWN_PROVIDERS_SCRIPT
    done = subprocess.run(
        [sys.executable, "-c", script, receiver.protocol],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    abandoned = sorted(
        str(s.attributes[semconv.RUN_ID])
        for s in receiver.spans()
        if s.attributes.get(semconv.RUN_OUTCOME) == "abandoned"
    )
    assert abandoned == [f"at-exit-{index}" for index in range(4)]
    assert _total(_last_points(receiver, semconv.ORPHANED_RUNS.name)) == 4
    assert _total(_last_points(receiver, semconv.ACTIVE_RUNS.name)) == 0


def test_shutdown_leaves_handlers_of_other_providers_alone(receiver: OtlpReceiver) -> None:
    first, second = _configure(), _configure()
    try:
        theirs = shut_one_of_two(first, second)
    finally:
        second.shutdown(timeout_millis=5_000)
    assert theirs.open_runs == 0


def test_expiry_at_collection_is_cheap_when_nothing_expired() -> None:
    """The sweep runs at every collection: with thousands of live runs it only looks at the
    oldest, so a collection does not slow down with open runs."""
    from symfonic_otel.testing.telemetry import InMemoryTelemetry

    memory = InMemoryTelemetry()
    handler = memory.handler(max_open_runs=20_000)
    for index in range(10_000):
        handler.agent_start(AgentStartEvent("q", f"r{index}"))
    started = time.perf_counter()
    for _ in range(20):
        assert handler.expire_runs() == 0
    assert (time.perf_counter() - started) / 20 < 0.005
    handler.close_open_runs()
    memory.shutdown()
