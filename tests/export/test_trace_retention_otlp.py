"""Outcome retention over the wire: at 1 % of healthy traces, every failing run still arrives whole.

``configure_telemetry(healthy_trace_ratio=0.01)`` exports to a real OTLP receiver; 2,000 runs of
20 tenants play through the handler (10 % bails, half of them recovered by a synthesis fallback,
5 % errors, 2 % loops, 2 % fabrication detections, the rest healthy). What arrives is read off
the wire: every failing run's trace with every span it has at ratio 1.0, a few healthy ones,
never a partial trace. The default (ratio 1.0) exports every run.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter, defaultdict
from collections.abc import Iterator

import pytest

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from tests.support.otlp_receiver import GrpcOtlpReceiver, ReceivedSpan
from tests.support.retention_runs import FAILING, HEALTHY, PlannedRun, plan, play_all

RUNS = 2_000


pytestmark = pytest.mark.usefixtures("clean_otel_and_symfonic_env")


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[GrpcOtlpReceiver]:
    with GrpcOtlpReceiver() as server:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", server.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
        yield server


def _play(runs: list[PlannedRun], **options: object) -> Telemetry:
    telemetry = configure_telemetry(set_global=False, **options)  # type: ignore[arg-type]
    handler = OTelCallbackHandler(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    random.seed(33)  # the SDK's trace ids: the same healthy runs are chosen at every run
    asyncio.run(play_all(handler, runs))
    assert telemetry.shutdown()
    return telemetry


def _traces(spans: list[ReceivedSpan]) -> dict[str, tuple[str, list[ReceivedSpan]]]:
    """trace id -> (run id, its spans)."""
    by_trace: dict[str, list[ReceivedSpan]] = defaultdict(list)
    for span in spans:
        by_trace[span.trace_id].append(span)
    out = {}
    for trace_id, members in by_trace.items():
        (run_id,) = {
            s.attributes[semconv.RUN_ID] for s in members if s.name.startswith("invoke_agent")
        }
        out[trace_id] = (run_id, members)
    return out


def _shape(spans: list[ReceivedSpan]) -> Counter[str]:
    return Counter(span.name for span in spans)


def test_the_default_exports_every_run(receiver: GrpcOtlpReceiver) -> None:
    runs = plan(200)
    telemetry = _play(runs)
    assert telemetry.retention is None  # nothing held, nothing in front of the export
    traces = _traces(receiver.spans())
    assert sorted(run_id for run_id, _ in traces.values()) == sorted(r.run_id for r in runs)


def test_at_one_percent_every_failing_run_arrives_whole_and_a_few_healthy_ones(
    receiver: GrpcOtlpReceiver,
) -> None:
    # What each kind of run exports when everything is kept: the reference for "whole".
    one_each = [PlannedRun(kind, f"ref-{kind}", "tenant-00") for kind in (*FAILING, HEALTHY)]
    _play(one_each)
    reference = {
        run_id.removeprefix("ref-"): _shape(spans)
        for run_id, spans in _traces(receiver.spans()).values()
    }
    assert len(reference) == len(FAILING) + 1
    assert all(sum(shape.values()) >= 2 for shape in reference.values()), reference
    received_before = len(receiver.trace_requests())

    runs = plan(RUNS)
    telemetry = _play(runs, healthy_trace_ratio=0.01)
    retention = telemetry.retention
    assert retention is not None and retention.held_spans == 0 and retention.held_traces == 0
    kinds = {run.run_id: run.kind for run in runs}
    arrived = _traces(
        [s for r in receiver.trace_requests()[received_before:] for s in _spans_of(r)]
    )

    by_kind: Counter[str] = Counter()
    for run_id, spans in arrived.values():
        kind = kinds[run_id]
        by_kind[kind] += 1
        # Never a partial trace: the very spans the run makes when everything is kept.
        assert _shape(spans) == reference[kind], (run_id, _shape(spans), reference[kind])
    planned = Counter(kinds.values())
    for kind in FAILING:
        assert by_kind[kind] == planned[kind], (kind, by_kind, planned)
    healthy_share = by_kind[HEALTHY] / planned[HEALTHY]
    assert 0.002 <= healthy_share <= 0.03, (by_kind[HEALTHY], planned[HEALTHY])
    # Every tenant's failing runs are there, under that tenant.
    tenants = {run.run_id: run.tenant for run in runs}
    failing_by_tenant = Counter(run.tenant for run in runs if run.kind in FAILING)
    arrived_by_tenant: Counter[str] = Counter()
    for run_id, spans in arrived.values():
        (run_span,) = [s for s in spans if s.name.startswith("invoke_agent")]
        assert run_span.attributes[semconv.TENANT_ID] == tenants[run_id]
        if kinds[run_id] in FAILING:
            arrived_by_tenant[tenants[run_id]] += 1
    assert arrived_by_tenant == failing_by_tenant and len(failing_by_tenant) == 20

    decisions = retention.decisions
    failing = sum(planned[kind] for kind in FAILING)
    assert decisions.get(("kept", "outcome")) == failing
    assert decisions.get(("kept", "ratio"), 0) == by_kind[HEALTHY]
    assert decisions.get(("dropped", "ratio")) == planned[HEALTHY] - by_kind[HEALTHY]
    assert not any(basis == "capacity" for _, basis in decisions)
    dropped = retention.dropped_spans[semconv.RETENTION_DROP_UNSAMPLED]
    assert dropped == (planned[HEALTHY] - by_kind[HEALTHY]) * sum(reference[HEALTHY].values())
    assert telemetry.dropped_spans == 0


def _spans_of(request: object) -> list[ReceivedSpan]:
    from tests.support.otlp_receiver import spans_of

    return spans_of([request])  # type: ignore[list-item]
