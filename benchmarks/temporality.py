"""What one OTLP export carries under each temporality preference, per tenant count.

    python benchmarks/temporality.py --tenants 1000,10000

Every tenant plays one run of the demo's workload shape (``tenant_load``); a collection starts
the interval; a tenth of the tenants then run once; the interval's collection is encoded as the
OTLP exporter would send it. Three readers of one MeterProvider see the same data:

* ``cumulative``: the default;
* ``sdk delta``: the SDK's ``delta`` preference;
* ``lowmemory``: counters and histograms delta, observable counters cumulative.

The per-tenant counters follow what a reader asks of a counter: under both delta preferences
they carry the interval's increments, for the series that changed only.

Printed per reader: points and encoded bytes, in all and for the per-tenant counters and the
histograms apart.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider, ObservableCounter
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    Metric,
    MetricsData,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.sdk.metrics.export import Histogram as HistogramData
from opentelemetry.sdk.trace import TracerProvider
from tenant_load import active_share, play_tenants, tenant_handler, tenant_ids

from symfonic_otel.emit.budget import cardinality_view
from symfonic_otel.emit.tenant_counters import TENANT_COUNTER_NAMES

DELTA, CUMULATIVE = AggregationTemporality.DELTA, AggregationTemporality.CUMULATIVE
PREFERENCES = {
    "cumulative": {},
    "sdk delta": {Counter: DELTA, Histogram: DELTA, ObservableCounter: DELTA},
    "lowmemory": {Counter: DELTA, Histogram: DELTA, ObservableCounter: CUMULATIVE},
}


def _only(data: MetricsData, keep: str) -> MetricsData:
    """``data`` with only the per-tenant counters, only the histograms, or everything."""

    def wanted(metric: Metric) -> bool:
        if keep == "tenant counters":
            return metric.name in TENANT_COUNTER_NAMES
        if keep == "histograms":
            return isinstance(metric.data, HistogramData)
        return True

    return MetricsData(
        resource_metrics=[
            ResourceMetrics(
                resource=rm.resource,
                scope_metrics=[
                    ScopeMetrics(
                        scope=sm.scope,
                        metrics=[m for m in sm.metrics if wanted(m)],
                        schema_url=sm.schema_url,
                    )
                    for sm in rm.scope_metrics
                ],
                schema_url=rm.schema_url,
            )
            for rm in data.resource_metrics
        ]
    )


def _size(data: MetricsData) -> tuple[int, int]:
    points = sum(
        len(m.data.data_points)
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    )
    return points, len(encode_metrics(data).SerializeToString())


def measure(tenants: int) -> list[str]:
    readers = {
        name: InMemoryMetricReader(preferred_temporality=temporality)  # type: ignore[arg-type]
        for name, temporality in PREFERENCES.items()
    }
    provider = MeterProvider(
        metric_readers=list(readers.values()),
        views=[cardinality_view(max(100_000, tenants * 40))],
    )
    handler = tenant_handler(TracerProvider(), provider, max_tenants=tenants)
    names = tenant_ids(tenants)
    play_tenants(handler, names)
    for reader in readers.values():
        reader.get_metrics_data()  # the interval starts here
    play_tenants(handler, active_share(names, 0.1), seed=11)
    rows = []
    for name, reader in readers.items():
        data = reader.get_metrics_data()
        assert data is not None
        cells = []
        for keep in ("all", "tenant counters", "histograms"):
            points, size = _size(_only(data, keep))
            cells.append(f"{points:,} pts, {size / 1e6:.2f} MB")
        rows.append(f"| {tenants:,} | {name} | " + " | ".join(cells) + " |")
    provider.shutdown()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", default="1000", help="comma-separated tenant counts")
    args = parser.parse_args()
    print("| tenants | preference | export | per-tenant counters | histograms |")
    print("|---|---|---|---|---|")
    for count in (int(part) for part in args.tenants.split(",")):
        for row in measure(count):
            print(row, flush=True)


if __name__ == "__main__":
    main()
