"""What each temporality preference exports for the per-tenant counters, on a real OTLP receiver.

The per-tenant counters are observable counters reporting each tenant's running totals; a tenant
idle past ``tenant_idle_s`` is evicted and, when it returns, starts again at zero. One scenario,
played with a test clock, then exported at four points in time:

1. ``acme`` runs three times (two silent bails), ``beta`` once;
2. 50 s later ``beta`` runs again (``acme`` idle, still within its idle time);
3. 60 s later ``beta`` runs again; ``acme`` (idle 110 s > 100 s) has been evicted;
4. ``acme`` returns with one silent bail.

The SDK's own ``delta`` exporter subtracts the last total it saw, so the returning tenant's first
point is negative. ``configure_telemetry`` keeps observable counters cumulative under ``delta``
(as the SDK's ``lowmemory`` does): the returning tenant is an ordinary counter reset.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, Final

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from structlog.testing import capture_logs

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.emit.tenant_counters import TENANT_COUNTER_NAMES
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from tests.emit.test_tenant_churn import Clock, _run
from tests.export.test_otlp_scale import _configure, clean_otel_env
from tests.support.otlp_receiver import HttpOtlpReceiver, ReceivedPoint, points_of

__all__ = ["clean_otel_env"]  # the autouse fixture: no OTEL_ variable leaks in

PREFERENCE: Final = "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"
TENANT: Final = semconv.TENANT_ID
IDLE_S: Final = 100.0
BAIL: Final = "tool_calls_with_no_text"
WARNING: Final = "symfonic_otel.delta_keeps_observable_counters_cumulative"
Exports = list[list[ReceivedPoint]]


@pytest.fixture
def receiver() -> Iterator[HttpOtlpReceiver]:
    with HttpOtlpReceiver(max_request_bytes=4 * 1024 * 1024) as server:
        yield server


def _play(telemetry: Telemetry, receiver: HttpOtlpReceiver) -> tuple[Exports, int]:
    """The scenario above: the points of each of the four exports, and the runs played."""
    clock = Clock()
    handler = OTelCallbackHandler(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        capture_content=False,
        tenant_idle_s=IDLE_S,
        clock=clock,
    )
    exports: Exports = []
    seen = 0

    def export() -> None:
        nonlocal seen
        assert telemetry.force_flush(timeout_millis=30_000)
        requests = receiver.metric_requests()
        exports.append(points_of(requests[seen:]))
        seen = len(requests)

    _run(handler, "acme", "a1", bail=True)
    _run(handler, "acme", "a2", bail=True)
    _run(handler, "acme", "a3")
    _run(handler, "beta", "b1")
    export()
    clock.now += 50
    _run(handler, "beta", "b2")
    export()
    clock.now += 60
    _run(handler, "beta", "b3")
    export()
    _run(handler, "acme", "a4", bail=True)
    export()
    return exports, 7


def _of(points: list[ReceivedPoint], name: str, tenant: str) -> list[ReceivedPoint]:
    return [p for p in points if p.name == name and p.attributes.get(TENANT) == tenant]


def _bails(points: list[ReceivedPoint], tenant: str) -> list[float | None]:
    """The tenant's silent-bail counter for the scenario's reason (others are seeded at 0)."""
    return [
        p.value
        for p in _of(points, semconv.SILENT_BAILS.name, tenant)
        if p.attributes.get(semconv.REACT_TERMINATION_REASON) == BAIL
    ]


def _series(points: list[ReceivedPoint]) -> dict[tuple[str, frozenset[Any]], float]:
    return {
        (p.name, frozenset(p.attributes.items())): p.value or 0.0
        for p in points
        if p.name in TENANT_COUNTER_NAMES
    }


def test_the_sdk_delta_exporter_sends_a_returning_tenant_one_negative_point(
    monkeypatch: pytest.MonkeyPatch, receiver: HttpOtlpReceiver
) -> None:
    """Today's SDK behaviour, pinned: if an SDK release stops doing this, this test says so."""
    monkeypatch.setenv(PREFERENCE, "delta")
    plain = OTLPMetricExporter(endpoint=f"{receiver.endpoint}/v1/metrics")  # the SDK's own
    reader = PeriodicExportingMetricReader(plain, export_interval_millis=3_600_000)
    telemetry = configure_telemetry(otlp=False, set_global=False, metric_readers=[reader])
    with telemetry:
        exports, _ = _play(telemetry, receiver)

    assert [_bails(points, "acme") for points in exports] == [[2], [0], [], [-1]]
    sums = [p for points in exports for p in points if p.name in TENANT_COUNTER_NAMES]
    assert sums and {p.temporality for p in sums} == {"DELTA"}
    assert all(p.is_monotonic for p in sums)
    # Every per-tenant counter of the returning tenant goes negative or stays at zero.
    returned = [p for p in exports[3] if p.attributes.get(TENANT) == "acme"]
    assert returned and all((p.value or 0) <= 0 for p in returned)
    assert any((p.value or 0) < 0 for p in returned if p.name == semconv.LLM_TOKENS.name)


@pytest.mark.parametrize("preference", ["lowmemory", "delta", " DELTA "])
def test_per_tenant_counters_arrive_cumulative_and_histograms_delta(
    monkeypatch: pytest.MonkeyPatch, receiver: HttpOtlpReceiver, preference: str
) -> None:
    monkeypatch.setenv(PREFERENCE, preference)
    telemetry, _ = _configure(monkeypatch, receiver)
    with telemetry:
        exports, runs = _play(telemetry, receiver)

    per_tenant = [p for points in exports for p in points if p.name in TENANT_COUNTER_NAMES]
    assert per_tenant and {p.temporality for p in per_tenant} == {"CUMULATIVE"}
    assert all(p.is_monotonic for p in per_tenant)
    histograms = [p for points in exports for p in points if p.kind == "histogram"]
    assert histograms and {p.temporality for p in histograms} == {"DELTA"}
    assert not any(TENANT in p.attributes for p in histograms)

    # A series never decreases from one export to the next; the one exception is a reset: the
    # evicted tenant, absent from the third export, back at a lower total in the fourth.
    series = [_series(points) for points in exports]
    for before, after in itertools.pairwise(series):
        for key, value in after.items():
            if key in before and value < before[key]:
                pytest.fail(f"{key} fell from {before[key]} to {value} in consecutive exports")
    assert not any(dict(attrs).get(TENANT) == "acme" for _, attrs in series[2])
    assert {dict(attrs).get(TENANT) for _, attrs in series[2]} == {"beta"}

    # Every point the bailing tenant recorded arrives: 2 bails before, 1 after its return.
    assert [_bails(points, "acme") for points in exports] == [[2], [2], [], [1]]
    beta_runs = [
        sum(p.value or 0 for p in _of(points, semconv.AGENT_RUNS.name, "beta"))
        for points in exports
    ]
    assert beta_runs == [1, 2, 3, 3]
    # Histograms are deltas: each run lands in exactly one export.
    durations = [p for p in histograms if p.name == semconv.AGENT_DURATION.name]
    assert sum(p.count or 0 for p in durations) == runs


@pytest.mark.parametrize(
    ("preference", "warned"),
    [
        ("delta", True),
        (" Delta ", True),
        ("lowmemory", False),
        ("cumulative", False),
        (None, False),
    ],
)
def test_delta_logs_one_content_free_warning_recommending_lowmemory(
    monkeypatch: pytest.MonkeyPatch, preference: str | None, warned: bool
) -> None:
    if preference is not None:
        monkeypatch.setenv(PREFERENCE, preference)
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    with capture_logs() as logs:
        configure_telemetry(set_global=False, service_name="secret-service").shutdown(
            timeout_millis=100
        )
    lines = [entry for entry in logs if entry["event"] == WARNING]
    assert len(lines) == (1 if warned else 0)
    if warned:
        (line,) = lines
        assert line["log_level"] == "warning"
        assert "lowmemory" in line["hint"]
        assert "secret-service" not in repr(line)


def test_without_otlp_metrics_delta_warns_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PREFERENCE, "delta")
    with capture_logs() as logs:
        configure_telemetry(otlp=False, set_global=False).shutdown(timeout_millis=100)
    assert not [entry for entry in logs if entry["event"] == WARNING]
