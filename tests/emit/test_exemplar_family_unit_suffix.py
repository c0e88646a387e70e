"""An application histogram whose name already ends with its unit (``queue.wait.seconds`` in
``s``) is one the exporter does not suffix again: its exemplars are found under that family
name and ride on its bucket, as they do for a name the unit is appended to."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from symfonic_otel.export.prometheus import LatestCollectionReader, ScrapeCollector


@contextmanager
def _served() -> Iterator[tuple[MeterProvider, TracerProvider, CollectorRegistry]]:
    families = CollectorRegistry(auto_describe=True)
    reader = LatestCollectionReader(families)
    served = CollectorRegistry()
    served.register(ScrapeCollector(families, reader))
    meter_provider, tracer_provider = MeterProvider(metric_readers=[reader]), TracerProvider()
    try:
        yield meter_provider, tracer_provider, served
    finally:
        meter_provider.shutdown()
        tracer_provider.shutdown()


@pytest.mark.parametrize(
    ("name", "unit", "value", "family", "bucket"),
    [
        ("queue.wait.seconds", "s", 0.3, "queue_wait_seconds", "5.0"),
        ("queue.wait", "s", 0.3, "queue_wait_seconds", "5.0"),
        ("payload.size.bytes", "By", 300, "payload_size_bytes", "500.0"),
        ("payload.size", "By", 300, "payload_size_bytes", "500.0"),
    ],
)
def test_the_exemplar_rides_on_the_family_the_exporter_names(
    name: str, unit: str, value: float, family: str, bucket: str
) -> None:
    with _served() as (meter_provider, tracer_provider, served):
        histogram = meter_provider.get_meter("app").create_histogram(name, unit=unit)
        with tracer_provider.get_tracer("app").start_as_current_span("work") as span:
            histogram.record(value)
        found = {
            (metric.name, sample.labels["le"]): sample.exemplar.labels["span_id"]
            for metric in served.collect()
            for sample in metric.samples
            if sample.name.endswith("_bucket") and sample.exemplar is not None
        }
    assert found == {(family, bucket): f"{span.get_span_context().span_id:016x}"}
