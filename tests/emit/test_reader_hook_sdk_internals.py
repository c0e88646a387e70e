"""The reader hook on an SDK whose private names moved: it touches nothing and says it failed.

``reader_hook.install`` relies on four private names of the SDK. When any one of them is gone
or has changed shape, it must answer False before changing anything (the hub then falls back to
observable counters); with all of them, every reader collects the per-tenant counters, within
its own collection timeout, and a source that fails costs only its own points (logged once). A
reader without its temporality preference is read as cumulative.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import Counter, MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    MetricReader,
)
from structlog.testing import capture_logs

from symfonic_otel import semconv
from symfonic_otel.emit import reader_hook
from symfonic_otel.emit.tenant_counters import Series, TenantCounters
from symfonic_otel.emit.tenant_hub import TenantHub
from symfonic_otel.emit.tenants import ActiveTenants
from symfonic_otel.semconv import InstrumentSpec

Moved = Callable[[pytest.MonkeyPatch, MeterProvider], None]
FAILED = "symfonic_otel.tenant_counters_collection_failed"


def _no_consumer(patch: pytest.MonkeyPatch, provider: MeterProvider) -> None:
    patch.delattr(provider, "_measurement_consumer")


def _collect_not_callable(patch: pytest.MonkeyPatch, provider: MeterProvider) -> None:
    patch.setattr(provider._measurement_consumer, "collect", None)


def _storages_not_a_mapping(patch: pytest.MonkeyPatch, provider: MeterProvider) -> None:
    consumer = provider._measurement_consumer
    patch.setattr(consumer, "_reader_storages", list(consumer._reader_storages))


def _no_sdk_config(patch: pytest.MonkeyPatch, provider: MeterProvider) -> None:
    patch.delattr(provider, "_sdk_config")


def _resource_not_a_resource(patch: pytest.MonkeyPatch, provider: MeterProvider) -> None:
    patch.setattr(provider._sdk_config, "resource", {"service.name": "checkout"})


def _no_collect_callback_setter(patch: pytest.MonkeyPatch, provider: MeterProvider) -> None:
    patch.delattr(MetricReader, "_set_collect_callback")


@pytest.mark.parametrize(
    "moved",
    [
        _no_consumer,
        _collect_not_callable,
        _storages_not_a_mapping,
        _no_sdk_config,
        _resource_not_a_resource,
        _no_collect_callback_setter,
    ],
)
def test_a_moved_private_name_means_no_hook_and_nothing_touched(moved: Moved) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    consumer = provider._measurement_consumer
    reader_callback = reader._collect
    try:
        with pytest.MonkeyPatch.context() as patch:
            moved(patch, provider)
            collect = getattr(consumer, "collect", None)
            assert reader_hook.available(provider) is False
            assert reader_hook.install(provider, TenantHub()) is False
            # Nothing touched: the consumer's collect and each reader's callback are as they were.
            assert getattr(consumer, "collect", None) == collect
            assert reader._collect == reader_callback
        assert reader_hook.available(provider) is True
    finally:
        provider.shutdown()


def test_with_every_private_name_each_reader_even_a_later_one_collects_the_counters() -> None:
    readers = [InMemoryMetricReader(), InMemoryMetricReader()]
    provider = MeterProvider(metric_readers=readers)
    hub = TenantHub()
    store = TenantCounters(ActiveTenants(), detail_cap=4)
    hub.add_store(store)
    try:
        assert reader_hook.install(provider, hub) is True
        later = InMemoryMetricReader()  # a reader added after the hook: it collects them too
        provider.add_metric_reader(later)
        store.add(semconv.AGENT_RUNS.name, "acme", {semconv.TENANT_ID: "acme"}, 3)
        for reader in [*readers, later]:
            data = reader.get_metrics_data()
            assert data is not None
            values = [
                getattr(point, "value", None)
                for resource_metrics in data.resource_metrics
                for scope_metrics in resource_metrics.scope_metrics
                for metric in scope_metrics.metrics
                if metric.name == semconv.AGENT_RUNS.name
                for point in metric.data.data_points
            ]
            assert values == [3]
    finally:
        provider.shutdown()


class _PlainReader(MetricReader):
    """A reader built on the base class with no temporality preference of its own recorded."""

    def _receive_metrics(self, *args: object, **kwargs: object) -> None:
        return None

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: object) -> None:
        return None


@pytest.mark.parametrize(
    ("preferred", "expected"),
    [
        ({}, AggregationTemporality.CUMULATIVE),
        ({Counter: AggregationTemporality.DELTA}, AggregationTemporality.DELTA),
    ],
    ids=["default", "delta-counters"],
)
def test_the_counters_follow_the_readers_counter_temporality(
    preferred: dict[type, AggregationTemporality], expected: AggregationTemporality
) -> None:
    reader = InMemoryMetricReader(preferred_temporality=preferred)
    assert reader_hook.temporality(reader) is expected


def test_a_reader_without_a_temporality_preference_is_read_as_cumulative() -> None:
    reader = _PlainReader()
    del reader._instrument_class_temporality
    assert reader_hook.temporality(reader) is AggregationTemporality.CUMULATIVE


class _Failing:
    """A series source that fails at every collection."""

    def families(self) -> Iterable[tuple[InstrumentSpec, list[Series]]]:
        raise RuntimeError("the source failed")


def test_a_failing_source_costs_only_its_own_points_and_is_logged_once() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    provider.get_meter("app").create_counter("app.requests").add(2)
    try:
        assert reader_hook.install(provider, _Failing())
        for collection in range(3):
            with capture_logs() as logs:
                data = reader.get_metrics_data()
                assert data is not None  # the SDK's own metrics, every time
                names = [
                    metric.name
                    for resource_metrics in data.resource_metrics
                    for scope_metrics in resource_metrics.scope_metrics
                    for metric in scope_metrics.metrics
                ]
                assert names == ["app.requests"]
            failed = [e for e in logs if e["event"] == FAILED]
            # Logged at the first failure, once.
            expected = [("warning", "RuntimeError")] if collection == 0 else []
            assert [(e["log_level"], e["error"]) for e in failed] == expected
    finally:
        provider.shutdown()


def test_the_readers_collection_timeout_reaches_the_sdks_callbacks() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    seen: list[float] = []

    def observe(options: CallbackOptions) -> Iterable[Observation]:
        seen.append(options.timeout_millis)
        return ()

    provider.get_meter("app").create_observable_gauge("app.queue", callbacks=[observe])
    try:
        assert reader_hook.install(provider, TenantHub())
        reader.collect(timeout_millis=500)
    finally:
        provider.shutdown()
    assert len(seen) == 1 and 0 < seen[0] <= 500
