"""What each temporality preference exports for the per-tenant counters, on a real OTLP receiver.

The per-tenant counters are this package's own totals, handed to every reader at collection; a
tenant idle past ``tenant_idle_s`` is evicted and, when it returns, starts a new series at zero.
One scenario, played with a test clock, then exported at four points in time:

1. ``acme`` runs three times (two silent bails), ``beta`` once;
2. 50 s later ``beta`` runs again (``acme`` idle, still within its idle time);
3. 60 s later ``beta`` runs again; ``acme`` (idle 110 s > 100 s) has been evicted;
4. ``acme`` returns with one silent bail.

Each reader gets what it asks of a counter. Cumulative: every live series with its own start
time, a returning tenant a reset. Delta (``delta`` and ``lowmemory`` alike): true increments
since the reader's previous collection, only for series that changed, never negative.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, Final

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.emit.tenant_counters import TENANT_COUNTER_NAMES
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from tests.emit.test_tenant_churn import _run
from tests.export.test_otlp_scale import _configure
from tests.support.manual_clock import Clock
from tests.support.otlp_receiver import HttpOtlpReceiver, ReceivedPoint, points_of

pytestmark = pytest.mark.usefixtures("clean_otel_env")  # no OTEL_ variable leaks in

PREFERENCE: Final = "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"
TENANT: Final = semconv.TENANT_ID
IDLE_S: Final = 100.0
BAIL: Final = "tool_calls_with_no_text"
WARNING: Final = "symfonic_otel.delta_keeps_observable_counters_cumulative"  # until 0.1
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


def _never_decreasing(series: list[dict[tuple[str, frozenset[Any]], float]]) -> None:
    """A series never falls from one export to the next (a returning tenant is a new series)."""
    for before, after in itertools.pairwise(series):
        for key, value in after.items():
            if key in before and value < before[key]:
                pytest.fail(f"{key} fell from {before[key]} to {value} in consecutive exports")


def _deltas_add_up(exports: Exports) -> None:
    """Delta points are increments: none negative, none zero, summing to the cumulative total."""
    points = [p for batch in exports for p in batch if p.name in TENANT_COUNTER_NAMES]
    assert points and {p.temporality for p in points} == {"DELTA"}
    assert all(p.is_monotonic and (p.value or 0) > 0 for p in points)
    assert [_bails(batch, "acme") for batch in exports] == [[2], [], [], [1]]
    beta_runs = [
        sum(p.value or 0 for p in _of(batch, semconv.AGENT_RUNS.name, "beta")) for batch in exports
    ]
    assert beta_runs == [1, 1, 1, 0]


@pytest.mark.parametrize("preference", ["delta", " DELTA ", "lowmemory"])
def test_the_sdks_own_delta_exporter_gets_increments_and_never_a_negative_point(
    monkeypatch: pytest.MonkeyPatch, receiver: HttpOtlpReceiver, preference: str
) -> None:
    """A reader of the user's own, added to the providers: no code of ours in its export path."""
    monkeypatch.setenv(PREFERENCE, preference)
    plain = OTLPMetricExporter(endpoint=f"{receiver.endpoint}/v1/metrics")  # the SDK's own
    reader = PeriodicExportingMetricReader(plain, export_interval_millis=3_600_000)
    telemetry = configure_telemetry(otlp=False, set_global=False, metric_readers=[reader])
    with telemetry:
        exports, _ = _play(telemetry, receiver)
    _deltas_add_up(exports)


@pytest.mark.parametrize("preference", ["lowmemory", "delta", " DELTA "])
def test_per_tenant_counters_arrive_as_deltas_of_changed_series_and_histograms_delta(
    monkeypatch: pytest.MonkeyPatch, receiver: HttpOtlpReceiver, preference: str
) -> None:
    monkeypatch.setenv(PREFERENCE, preference)
    telemetry, _ = _configure(monkeypatch, receiver)
    with telemetry:
        exports, runs = _play(telemetry, receiver)

    _deltas_add_up(exports)
    histograms = [p for points in exports for p in points if p.kind == "histogram"]
    assert histograms and {p.temporality for p in histograms} == {"DELTA"}
    assert not any(TENANT in p.attributes for p in histograms)
    # Histograms are deltas: each run lands in exactly one export.
    durations = [p for p in histograms if p.name == semconv.AGENT_DURATION.name]
    assert sum(p.count or 0 for p in durations) == runs
    # The third interval changed beta's series only: acme's are not sent at all.
    assert {p.attributes.get(TENANT) for p in exports[2] if p.name in TENANT_COUNTER_NAMES} == {
        "beta"
    }


@pytest.mark.parametrize("preference", ["cumulative", None])
def test_cumulative_sends_every_live_series_with_its_own_start_and_a_return_is_a_reset(
    monkeypatch: pytest.MonkeyPatch, receiver: HttpOtlpReceiver, preference: str | None
) -> None:
    if preference is not None:
        monkeypatch.setenv(PREFERENCE, preference)
    telemetry, _ = _configure(monkeypatch, receiver)
    with telemetry:
        exports, _ = _play(telemetry, receiver)

    per_tenant = [p for points in exports for p in points if p.name in TENANT_COUNTER_NAMES]
    assert per_tenant and {p.temporality for p in per_tenant} == {"CUMULATIVE"}
    series = [_series(points) for points in exports]
    _never_decreasing(series)
    assert {dict(attrs).get(TENANT) for _, attrs in series[2]} == {"beta"}
    assert [_bails(points, "acme") for points in exports] == [[2], [2], [], [1]]
    beta_runs = [
        sum(p.value or 0 for p in _of(points, semconv.AGENT_RUNS.name, "beta"))
        for points in exports
    ]
    assert beta_runs == [1, 2, 3, 3]
    # Each series keeps its own start: the returning tenant's is later than its first life's.
    starts = {
        export: {
            p.start_time_unix_nano
            for p in _of(points, semconv.SILENT_BAILS.name, "acme")
            if p.attributes.get(semconv.REACT_TERMINATION_REASON) == BAIL
        }
        for export, points in enumerate(exports)
        if _of(points, semconv.SILENT_BAILS.name, "acme")
    }
    assert starts[0] == starts[1] and max(starts[3]) > max(starts[0])


def test_delta_warns_nothing_any_more(monkeypatch: pytest.MonkeyPatch) -> None:
    from structlog.testing import capture_logs

    monkeypatch.setenv(PREFERENCE, "delta")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    with capture_logs() as logs:
        configure_telemetry(set_global=False).shutdown(timeout_millis=100)
    assert not [entry for entry in logs if entry["event"] == WARNING]
