"""What the installed OpenTelemetry SDK does with an attribute set an observable counter's
callback stops reporting: the facts the per-tenant counters rely on (and the one caveat the
tenancy docs give), so an SDK upgrade that changes them fails here first."""

from __future__ import annotations

import re
from collections.abc import Iterable

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import Counter, MeterProvider, ObservableCounter
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader
from prometheus_client import CollectorRegistry, generate_latest

State = dict[str, float]


def _values(reader: InMemoryMetricReader) -> State:
    data = reader.get_metrics_data()
    if data is None:
        return {}
    return {
        str((p.attributes or {})["tenant"]): p.value
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        for p in m.data.data_points
    }


def test_observable_sets_that_stop_being_reported_leave_the_export() -> None:
    cumulative = InMemoryMetricReader()
    delta = InMemoryMetricReader(
        preferred_temporality={
            ObservableCounter: AggregationTemporality.DELTA,
            Counter: AggregationTemporality.DELTA,
        }
    )
    prometheus = PrometheusMetricReader()
    registry = CollectorRegistry()
    registry.register(prometheus._collector)  # the reader's collector, as its HTTP server serves
    provider = MeterProvider(metric_readers=[cumulative, delta, prometheus])
    state: State = {}

    def observe(options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(value, {"tenant": tenant}) for tenant, value in state.items()]

    provider.get_meter("probe").create_observable_counter("probe", callbacks=[observe])

    def scrape() -> str:
        return generate_latest(registry).decode()

    state.update(a=3.0, b=5.0)
    assert _values(cumulative) == {"a": 3.0, "b": 5.0}
    assert _values(delta) == {"a": 3.0, "b": 5.0}
    assert 'tenant="b"' in scrape()
    del state["b"]  # b leaves
    state["a"] = 4.0
    assert _values(cumulative) == {"a": 4.0}
    assert _values(delta) == {"a": 1.0}
    assert 'tenant="b"' not in scrape()
    state["b"] = 1.0  # b returns, starting again at zero
    assert _values(cumulative) == {"a": 4.0, "b": 1.0}
    assert re.search(r'probe_total\{[^}]*tenant="b"\} 1\.0', scrape())
    # The caveat: a delta reader subtracts the total it last saw for the set.
    assert _values(delta) == {"a": 0.0, "b": -4.0}
    provider.shutdown()
