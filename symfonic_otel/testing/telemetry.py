"""In-memory OpenTelemetry SDK providers, for asserting exactly what a handler recorded."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    Metric,
    NumberDataPoint,
    Sum,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span

from symfonic_otel.emit.budget import cardinality_view
from symfonic_otel.handler import OTelCallbackHandler

PointValue = int | float | HistogramDataPoint


class _OpenSpanTracker(SimpleSpanProcessor):
    """Exports each span on end and remembers which started spans have not ended yet."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        super().__init__(exporter)
        self._open: dict[int, str] = {}

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        context = span.get_span_context()
        self._open[context.span_id] = getattr(span, "name", "?")

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is not None:
            self._open.pop(span.context.span_id, None)
        super().on_end(span)

    @property
    def unended(self) -> list[str]:
        return list(self._open.values())


class InMemoryTelemetry:
    """SDK tracer and meter providers that keep everything in memory.

    ``handler()`` builds an ``OTelCallbackHandler`` wired to them; ``spans()`` and ``points()``
    read back what was recorded; ``unended_spans`` and ``open_runs`` tell what was left open.
    """

    def __init__(self, resource: Resource | None = None) -> None:
        resource = resource or Resource.create({"service.name": "symfonic-otel-test"})
        self.exporter = InMemorySpanExporter()
        self._tracker = _OpenSpanTracker(self.exporter)
        self.tracer_provider = TracerProvider(resource=resource)
        self.tracer_provider.add_span_processor(self._tracker)
        self.reader = InMemoryMetricReader()
        # The same per-instrument cardinality limit as ``configure_telemetry``.
        self.meter_provider = MeterProvider(
            resource=resource, metric_readers=[self.reader], views=[cardinality_view()]
        )
        self._handlers: weakref.WeakSet[OTelCallbackHandler] = weakref.WeakSet()

    def handler(self, **kwargs: Any) -> OTelCallbackHandler:
        handler = OTelCallbackHandler(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **kwargs
        )
        self._handlers.add(handler)
        return handler

    def track(self, handler: OTelCallbackHandler) -> OTelCallbackHandler:
        """Include a handler built elsewhere in the ``open_runs`` check."""
        self._handlers.add(handler)
        return handler

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def span(self, name: str) -> ReadableSpan:
        """The one finished span called ``name``; fails when there are none or several."""
        found = [s for s in self.spans() if s.name == name]
        if len(found) != 1:
            names = [s.name for s in self.spans()]
            raise AssertionError(f"expected one span {name!r}, found {len(found)} in {names}")
        return found[0]

    @property
    def unended_spans(self) -> list[str]:
        return self._tracker.unended

    @property
    def open_runs(self) -> int:
        return sum(handler.open_runs for handler in self._handlers)

    def metrics(self) -> dict[str, Metric]:
        data = self.reader.get_metrics_data()
        found: dict[str, Metric] = {}
        if data is None:
            return found
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    found[metric.name] = metric
        return found

    def points(
        self, name: str, *, include_zeros: bool = False
    ) -> list[tuple[dict[str, Any], PointValue]]:
        """(attributes, value) per data point; histograms give their data point as the value.

        Counter series still at zero (the handler creates a tenant's series at zero when it
        first sees the tenant) are left out unless ``include_zeros``: the result is what was
        counted.
        """
        metric = self.metrics().get(name)
        if metric is None:
            return []
        monotonic = isinstance(metric.data, Sum) and metric.data.is_monotonic
        result: list[tuple[dict[str, Any], PointValue]] = []
        for point in metric.data.data_points:
            attributes = dict(point.attributes or {})
            if isinstance(point, NumberDataPoint):
                if monotonic and point.value == 0 and not include_zeros:
                    continue
                result.append((attributes, point.value))
            elif isinstance(point, HistogramDataPoint):
                result.append((attributes, point))
        return result

    def value(self, name: str, where: Mapping[str, Any] | None = None) -> float:
        """Sum of counter values (histograms: observation counts) whose attributes match."""
        total = 0.0
        for attributes, value in self.points(name):
            if where and any(attributes.get(k) != v for k, v in where.items()):
                continue
            total += value.count if isinstance(value, HistogramDataPoint) else value
        return total

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
