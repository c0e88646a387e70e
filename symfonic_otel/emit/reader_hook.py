"""The one place that reaches into the OTel SDK: a metric producer for every reader.

The specification's ``MetricProducer`` lets a reader merge metrics from outside the SDK's own
instruments; the Python SDK (through 1.45) has none (opentelemetry-python #4768). Until it does,
this module wraps the collect callback the MeterProvider gives each of its readers (the
measurement consumer's ``collect``, set through ``MetricReader._set_collect_callback``), so that
every collection, by any reader (periodic OTLP, the SDK's Prometheus reader, an in-memory
reader), returns the SDK's metrics plus the per-tenant counters and the run's two call
histograms (``call_histograms``). Readers added later get the wrapped callback too, since the
consumer's attribute is replaced. The call histograms are produced here only where no view
changes them (a view may rename, re-bucket, drop or filter an instrument, and every reader
aggregates them by default); elsewhere they stay SDK instruments.

``install`` checks that each private name is there before touching anything and reports
whether it succeeded; the caller falls back to observable counters when it did not. Once the
SDK has a producer, ``TenantPoints.produce`` plugs in as one and this module goes.

Private names used: ``MeterProvider._measurement_consumer`` (its ``collect`` and
``_reader_storages``), ``MeterProvider._sdk_config.resource``,
``MetricReader._set_collect_callback``, ``MetricReader._instrument_class_temporality`` and
``_instrument_class_aggregation``, ``MeterProvider._sdk_config.views`` and ``exemplar_filter``
(a view's ``_name``, ``_description``, ``_attribute_keys``, ``_aggregation``; an explicit bucket
aggregation's ``_boundaries`` and ``_record_min_max``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, Counter, Histogram
from opentelemetry.sdk.metrics.export import AggregationTemporality, MetricReader, MetricsData
from opentelemetry.sdk.metrics.view import DefaultAggregation, ExplicitBucketHistogramAggregation
from opentelemetry.sdk.resources import Resource

from symfonic_otel.emit.call_histograms import CallHistograms, absorb
from symfonic_otel.emit.tenant_points import SeriesSource, TenantPoints, merge
from symfonic_otel.logs import get_logger

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider

# A reader carrying this attribute (set True) renders the per-tenant counters itself (this
# package's Prometheus endpoint): its collections get the SDK's metrics only.
RENDERS_TENANT_COUNTERS = "symfonic_renders_tenant_counters"

Collect = Callable[..., MetricsData | None]


def available(provider: MeterProvider) -> bool:
    """Whether this SDK has every private name the hook needs."""
    consumer = getattr(provider, "_measurement_consumer", None)
    return (
        callable(getattr(consumer, "collect", None))
        and isinstance(getattr(consumer, "_reader_storages", None), Mapping)
        and isinstance(getattr(getattr(provider, "_sdk_config", None), "resource", None), Resource)
        and callable(getattr(MetricReader, "_set_collect_callback", None))
    )


def plain_histograms(provider: MeterProvider) -> bool:
    """Whether every reader of ``provider`` aggregates a histogram as the SDK does by default
    (no view renames, re-buckets, filters or drops one; no reader asks for another aggregation)."""
    config: Any = provider._sdk_config  # ``available`` checked it
    for view in getattr(config, "views", None) or ():
        if any(getattr(view, name, None) is not None for name in _VIEW_CHANGES) or not _as_default(
            getattr(view, "_aggregation", None)
        ):
            return False
    consumer: Any = getattr(provider, "_measurement_consumer", None)
    for reader in getattr(consumer, "_reader_storages", None) or ():
        chosen = getattr(reader, "_instrument_class_aggregation", None)
        # Keyed by the SDK's instrument classes (``_Histogram``, a subclass of ``Histogram``).
        if not isinstance(chosen, Mapping) or any(
            isinstance(kind, type) and issubclass(kind, Histogram) and not _as_default(aggregation)
            for kind, aggregation in chosen.items()
        ):
            return False
    return True


def _as_default(aggregation: object) -> bool:
    """Whether ``aggregation`` treats a histogram as the default does: explicit buckets at the
    instrument's advised boundaries, with min and max (what the OTLP exporter asks for)."""
    if isinstance(aggregation, ExplicitBucketHistogramAggregation):
        return aggregation._boundaries is None and aggregation._record_min_max is True
    return isinstance(aggregation, DefaultAggregation)


_VIEW_CHANGES = ("_name", "_description", "_attribute_keys")


class Hub(SeriesSource, Protocol):
    """What the hook serves: the per-tenant counters, and where it puts the call histograms."""

    call_histograms: CallHistograms | None


def install(provider: MeterProvider, hub: Hub) -> bool:
    """Make every reader of ``provider`` collect ``hub``'s counters too; False if it cannot.

    Where they can be produced here, ``hub.call_histograms`` is set: the handlers of this
    provider record their call histograms there rather than into the SDK."""
    if not available(provider):
        return False
    consumer: Any = provider._measurement_consumer
    original: Collect = consumer.collect
    resource: Resource = provider._sdk_config.resource
    points = TenantPoints(hub, resource)
    histograms: CallHistograms | None = None
    if plain_histograms(provider):
        histograms = CallHistograms(
            exemplars=not isinstance(
                getattr(provider._sdk_config, "exemplar_filter", None), AlwaysOffExemplarFilter
            ),
            trace_filter=lambda: getattr(hub, "trace_filter", None),
        )
        for reader in list(consumer._reader_storages):
            histograms.add_reader(reader, temporality(reader, Histogram))
    hub.call_histograms = histograms
    failures = [0]

    def collect(
        reader: MetricReader,
        timeout_millis: float = 10_000,  # pragma: no mutate: every SDK reader passes its own
    ) -> MetricsData | None:
        data = original(reader, timeout_millis=timeout_millis)
        try:
            calls = (
                histograms.metrics(reader, temporality(reader, Histogram))
                if histograms is not None
                else []
            )
            data, calls = absorb(data, calls)
            if getattr(reader, RENDERS_TENANT_COUNTERS, False):
                return merge(data, calls, resource)
            return points.produce(reader, temporality(reader), data, calls)
        except Exception as exc:  # the SDK's own metrics are never lost to ours
            failures[0] += 1
            if failures[0] == 1:
                get_logger().warning(
                    "symfonic_otel.tenant_counters_collection_failed", error=type(exc).__name__
                )
            return data

    consumer.collect = collect
    for reader in list(consumer._reader_storages):
        reader._set_collect_callback(collect)
    return True


def temporality(reader: MetricReader, instrument: type = Counter) -> AggregationTemporality:
    """What the reader asks of a synchronous ``instrument`` (a counter: the per-tenant
    counters' semantics; a histogram: the call histograms')."""
    preferred = getattr(reader, "_instrument_class_temporality", None)
    if isinstance(preferred, Mapping):
        for kind, value in preferred.items():
            if isinstance(kind, type) and issubclass(kind, instrument):
                return value  # type: ignore[no-any-return]
    return AggregationTemporality.CUMULATIVE
