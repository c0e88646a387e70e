"""Two scrapes of the Prometheus reader at once: each serves the exemplars of its own
collection (the scrape lock covers taking the latest collection too), so neither loses its
histogram's exemplars to the other.

The interleaving is forced: the first scrape is paused just before it takes its collection's
exemplars, while the second scrape runs.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.metrics import Histogram
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric

from symfonic_otel.export.prometheus import LatestCollectionReader, ScrapeCollector
from tests.support.paused_section import PausedBefore


@pytest.fixture
def served() -> Iterator[tuple[ScrapeCollector, Histogram]]:
    families = CollectorRegistry(auto_describe=True)
    reader = LatestCollectionReader(families)
    provider = MeterProvider(metric_readers=[reader])
    latency = provider.get_meter("test").create_histogram("latency", unit="s")
    yield ScrapeCollector(families, reader), latency
    provider.shutdown()


def _record(latency: Histogram) -> None:
    """A value with an exemplar (in a sampled span); a collection shows only new exemplars."""
    with TracerProvider().get_tracer("test").start_as_current_span("call"):
        latency.record(0.2)


def _exemplars(families: list[Metric]) -> list[object]:
    return [s.exemplar for f in families for s in f.samples if s.exemplar is not None]


def test_a_scrape_during_another_keeps_its_own_exemplars(
    served: tuple[ScrapeCollector, Histogram],
) -> None:
    collector, latency = served
    _record(latency)
    first = PausedBefore(ScrapeCollector.collect, "with_exemplars(families")
    with first.start(lambda: list(collector.collect())):
        _record(latency)  # the second scrape's own new value
        second = list(collector.collect())
        first_families = first.finish()
    assert len(_exemplars(first_families)) == 1
    assert len(_exemplars(second)) == 1
