"""An exemplar whose value sits on a bucket boundary belongs to that bucket; its timestamp is
in seconds since the epoch."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry.sdk.metrics import AlwaysOnExemplarFilter, ExemplarFilter, MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.export.prometheus import LatestCollectionReader, ScrapeCollector

# --- exemplars: a value on a bucket boundary belongs to that bucket ---------------------------


def _exemplar_buckets(registry: CollectorRegistry, family: str) -> dict[str, float]:
    """``le`` of each bucket sample of ``family`` that carries an exemplar, with its value."""
    found = {}
    for metric in registry.collect():
        if metric.name != family:
            continue
        for sample in metric.samples:
            if sample.name.endswith("_bucket") and sample.exemplar is not None:
                found[sample.labels["le"]] = sample.exemplar.value
    return found


@contextmanager
def _served_providers(
    exemplar_filter: ExemplarFilter | None = None,
) -> Iterator[tuple[MeterProvider, TracerProvider, CollectorRegistry]]:
    """SDK providers whose metrics a registry serves as Prometheus would scrape."""
    families = CollectorRegistry(auto_describe=True)
    reader = LatestCollectionReader(families)
    served = CollectorRegistry()
    served.register(ScrapeCollector(families, reader))
    meter_provider = MeterProvider(metric_readers=[reader], exemplar_filter=exemplar_filter)
    tracer_provider = TracerProvider()
    try:
        yield meter_provider, tracer_provider, served
    finally:
        meter_provider.shutdown()
        tracer_provider.shutdown()


@contextmanager
def _scraped_handler() -> Iterator[tuple[OTelCallbackHandler, CollectorRegistry]]:
    """A handler on SDK providers whose metrics a registry serves as Prometheus would scrape."""
    with _served_providers() as (meter_provider, tracer_provider, served):
        yield (
            OTelCallbackHandler(tracer_provider=tracer_provider, meter_provider=meter_provider),
            served,
        )


@pytest.mark.parametrize("seconds", [2.56, 2.5600001, 0.01])
def test_exemplar_on_a_bucket_boundary_sits_on_that_bucket(seconds: float) -> None:
    with _scraped_handler() as (handler, served):
        handler.agent_start(AgentStartEvent("q", "r"))
        handler.agent_end(AgentEndEvent("r", "a", seconds * 1000.0, 1))
        buckets = _exemplar_buckets(served, "gen_ai_invoke_agent_duration_seconds")
    # Prometheus buckets are ``le``: a value equal to a bound is counted in that bound's bucket.
    bound = next(b for b in semconv.AGENT_DURATION_BUCKETS if seconds <= b)
    assert buckets == {str(bound): pytest.approx(seconds)}


def test_histogram_exemplar_timestamps_are_seconds_since_the_epoch() -> None:
    """OpenMetrics exemplar timestamps are in seconds: one 1000x off lands in the future."""
    before = time.time()
    with _scraped_handler() as (handler, served):
        handler.agent_start(AgentStartEvent("q", "r"))
        handler.agent_end(AgentEndEvent("r", "a", 1500.0, 1))
        stamps = [
            sample.exemplar.timestamp
            for metric in served.collect()
            if metric.name == "gen_ai_invoke_agent_duration_seconds"
            for sample in metric.samples
            if sample.exemplar is not None
        ]
    after = time.time()
    assert len(stamps) == 1
    assert before - 1 <= float(stamps[0]) <= after + 1  # type: ignore[arg-type]


# --- exemplars: every histogram the endpoint serves, not only the package's ---------------------


def _series_exemplars(registry: CollectorRegistry, family: str) -> dict[str, dict[str, str]]:
    """The ``n`` label of each series of ``family`` -> ``le`` -> span id of its exemplar."""
    found: dict[str, dict[str, str]] = {}
    for metric in registry.collect():
        if metric.name != family:
            continue
        for sample in metric.samples:
            if sample.name.endswith("_bucket"):
                exemplars = found.setdefault(sample.labels["n"], {})
                if sample.exemplar is not None:
                    exemplars[sample.labels["le"]] = sample.exemplar.labels["span_id"]
    return found


@pytest.mark.parametrize(
    ("scope", "version", "schema_url", "attributes"),
    [
        ("app", None, None, None),
        ("app", "1.2.0", "https://opentelemetry.io/schemas/1.21.0", {"team": "core", "shard": 2}),
    ],
)
def test_an_application_histogram_gets_exemplars_on_each_series_that_has_one(
    scope: str, version: str | None, schema_url: str | None, attributes: dict[str, Any] | None
) -> None:
    """A unitless histogram of the application, on the same provider, from a meter with or
    without a version, schema URL and attributes: series with non-string attribute values
    (served JSON-encoded), series with different label names (the others' labels read ``""``),
    and a series recorded outside any span, which has no exemplar and hides no other's."""
    with _served_providers() as (meter_provider, tracer_provider, served):
        meter = meter_provider.get_meter(scope, version, schema_url, attributes)
        wait = meter.create_histogram("app.wait")  # no unit
        wait.record(300, {"n": 3})  # no span: no exemplar
        with tracer_provider.get_tracer("app").start_as_current_span("work") as span:
            wait.record(3, {"n": 1, "ok": True, "ratio": 0.5, "tags": ("a", "b")})
            wait.record(30, {"n": 2, "raw": b"bytes"})
        span_id = f"{span.get_span_context().span_id:016x}"
        series = _series_exemplars(served, "app_wait")
    assert series == {"1": {"5.0": span_id}, "2": {"50.0": span_id}, "3": {}}


def test_with_every_value_sampled_only_values_in_a_span_get_an_exemplar() -> None:
    """The always-on exemplar filter keeps values recorded outside any span too: they name no
    trace, so they give no exemplar, and the bucket above them still gets its span's."""
    with _served_providers(AlwaysOnExemplarFilter()) as (meter_provider, tracer_provider, served):
        wait = meter_provider.get_meter("app").create_histogram("app.wait")
        wait.record(3, {"n": 1})  # the lower bucket, no span
        with tracer_provider.get_tracer("app").start_as_current_span("work") as span:
            wait.record(300, {"n": 1})
        span_id = f"{span.get_span_context().span_id:016x}"
        series = _series_exemplars(served, "app_wait")
    assert series == {"1": {"500.0": span_id}}
