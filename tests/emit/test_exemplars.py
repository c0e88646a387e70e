"""Exemplars: every latency and token value leads to the span it describes.

Values are applied at collection time, yet each carries its span's context, so the SDK's
default trace-based exemplar filter keeps it: read back from an ``InMemoryMetricReader``, from
``configure_telemetry``'s Prometheus endpoint in the OpenMetrics format, and from a real
Prometheus with exemplar storage scraping that endpoint.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from prometheus_client.parser import text_string_to_metric_families as parse_text

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    LLMEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
)
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.configured_handler import handler_on
from tests.support.prometheus_support import require_binary
from tests.support.recorded import reader_points
from tests.support.stored_exemplars import storing_exemplars, trace_ids

OPENMETRICS = "application/openmetrics-text; version=1.0.0"
NODE = semconv.NODE_NAME


def _turn(handler: OTelCallbackHandler, run_id: str = "r") -> None:
    """One run: two model calls at two nodes (two series), one tool call."""
    handler.agent_start(AgentStartEvent("q", run_id))
    for node, ms in (("react", 300.0), ("react_synthesize_fallback", 2000.0)):
        handler.llm_end(
            LLMEndEvent(
                "gpt-4o",
                "x",
                {"input_tokens": 50, "output_tokens": 5},
                run_id=run_id,
                node_name=node,
                duration_ms=ms,
            )
        )
    handler.tool_call_start(ToolCallStartEvent("t1", "search", run_id=run_id))
    handler.tool_result(ToolResultEvent("t1", "search", run_id=run_id))
    handler.agent_end(AgentEndEvent(run_id, "x", 2500.0, 2))


def _span_ids(spans: list[ReadableSpan], name: str) -> dict[int, ReadableSpan]:
    return {s.context.span_id: s for s in spans if s.name == name}


def _exemplar_spans(
    telemetry: InMemoryTelemetry, metrics: dict[str, Any], name: str
) -> list[tuple[dict[str, Any], int, int]]:
    """(point attributes, trace id, span id) of each exemplar of the histogram ``name``."""
    found = []
    for point in metrics[name].data.data_points:
        assert isinstance(point, HistogramDataPoint)
        for exemplar in point.exemplars:
            found.append((dict(point.attributes), exemplar.trace_id, exemplar.span_id))
    return found


def test_histogram_points_carry_their_spans_as_exemplars(telemetry: InMemoryTelemetry) -> None:
    _turn(telemetry.handler())
    metrics = telemetry.metrics()  # one collection: exemplars are those of this interval
    spans = telemetry.spans()
    chats = _span_ids(spans, "chat gpt-4o")
    by_node = {s.attributes["symfonic.node.name"]: s for s in chats.values()}  # type: ignore[index]

    durations = _exemplar_spans(telemetry, metrics, "gen_ai.client.operation.duration")
    assert len(durations) == 2
    for attrs, trace_id, span_id in durations:
        span = by_node[attrs["symfonic.node.name"]]  # each point links to its own call
        assert (trace_id, span_id) == (span.context.trace_id, span.context.span_id)
    tokens = _exemplar_spans(telemetry, metrics, "gen_ai.client.token.usage")
    assert len(tokens) == 4  # input and output of each call
    for attrs, _, span_id in tokens:
        assert span_id == by_node[attrs["symfonic.node.name"]].context.span_id
    ((_, _, tool_span),) = _exemplar_spans(telemetry, metrics, "gen_ai.execute_tool.duration")
    assert tool_span == telemetry.span("execute_tool search").context.span_id
    ((_, _, run_span),) = _exemplar_spans(telemetry, metrics, "gen_ai.invoke_agent.duration")
    assert run_span == telemetry.span("invoke_agent symfonic").context.span_id
    # Exemplar values are the recorded ones, in the bucket they were counted in.
    point = next(
        p
        for p in metrics["gen_ai.client.operation.duration"].data.data_points
        if p.attributes["symfonic.node.name"] == "react"
    )
    assert [e.value for e in point.exemplars] == [pytest.approx(0.3)]


def test_unsampled_spans_give_no_exemplars() -> None:
    """The trace-based filter decides, as for a synchronous record: proof the context is real."""
    tracer_provider = TracerProvider(sampler=ALWAYS_OFF)
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    handler = OTelCallbackHandler(tracer_provider=tracer_provider, meter_provider=meter_provider)
    _turn(handler)
    histograms = reader_points(reader, "gen_ai.client.operation.duration")
    assert sum(p.count for p in histograms) == 2  # type: ignore[union-attr]
    assert all(not p.exemplars for p in histograms)
    meter_provider.shutdown()


@pytest.fixture
def served() -> Iterator[tuple[Telemetry, InMemorySpanExporter]]:
    spans = InMemorySpanExporter()
    telemetry = configure_telemetry(
        otlp=False,
        prometheus_port=0,
        set_global=False,
        span_processors=[SimpleSpanProcessor(spans)],
    )
    yield telemetry, spans
    telemetry.shutdown()


def _scrape(telemetry: Telemetry, accept: str | None) -> tuple[str, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{telemetry.prometheus_port}/metrics")
    if accept:
        request.add_header("Accept", accept)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.headers["Content-Type"], response.read().decode()


def test_openmetrics_scrape_serves_exemplars_over_http(
    served: tuple[Telemetry, InMemorySpanExporter],
) -> None:
    telemetry, exporter = served
    handler = OTelCallbackHandler(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    _turn(handler)
    content_type, body = _scrape(telemetry, OPENMETRICS)
    assert content_type.startswith("application/openmetrics-text")
    families = {family.name: family for family in parse_om(body)}  # parses as OpenMetrics
    spans = {f"{s.context.span_id:016x}": s for s in exporter.get_finished_spans()}
    linked: dict[str, list[str]] = {}
    for name in (
        "gen_ai_client_operation_duration_seconds",
        "gen_ai_client_token_usage",
        "gen_ai_execute_tool_duration_seconds",
        "gen_ai_invoke_agent_duration_seconds",
    ):
        for sample in families[name].samples:
            if sample.exemplar is None:
                continue
            assert sample.name == f"{name}_bucket"
            span = spans[sample.exemplar.labels["span_id"]]
            assert sample.exemplar.labels["trace_id"] == f"{span.context.trace_id:032x}"
            # The exemplar sits on the bucket its value was counted in.
            assert sample.exemplar.value <= float(sample.labels["le"])
            linked.setdefault(name, []).append(span.name)
    assert sorted(linked["gen_ai_client_operation_duration_seconds"]) == ["chat gpt-4o"] * 2
    assert sorted(linked["gen_ai_client_token_usage"]) == ["chat gpt-4o"] * 4
    assert linked["gen_ai_execute_tool_duration_seconds"] == ["execute_tool search"]
    assert linked["gen_ai_invoke_agent_duration_seconds"] == ["invoke_agent symfonic"]

    # The classic text format has no exemplars and is otherwise what it was.
    _turn(handler, "r2")
    content_type, text = _scrape(telemetry, None)
    assert content_type.startswith("text/plain")
    assert "trace_id" not in text
    names = {family.name for family in parse_text(text)}
    assert "gen_ai_client_operation_duration_seconds" in names


def test_each_series_carries_the_exemplar_of_its_own_span(
    served: tuple[Telemetry, InMemorySpanExporter],
) -> None:
    """Two series of one family (model calls at two nodes): each bucket's exemplar names a span
    of its own series, never one of the series served before it."""
    telemetry, exporter = served
    handler = OTelCallbackHandler(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    _turn(handler)
    _, body = _scrape(telemetry, OPENMETRICS)
    spans = {f"{s.context.span_id:016x}": s for s in exporter.get_finished_spans()}
    [family] = [f for f in parse_om(body) if f.name == "gen_ai_client_operation_duration_seconds"]
    nodes: list[tuple[str, object]] = []
    for sample in family.samples:
        if sample.exemplar is not None:
            span = spans[sample.exemplar.labels["span_id"]]
            nodes.append((sample.labels["symfonic_node_name"], (span.attributes or {})[NODE]))
    assert sorted(nodes) == [
        ("react", "react"),
        ("react_synthesize_fallback", "react_synthesize_fallback"),
    ]


def test_real_prometheus_stores_the_exemplars(
    served: tuple[Telemetry, InMemorySpanExporter], tmp_path: Path
) -> None:
    require_binary("prometheus")
    telemetry, exporter = served
    handler = handler_on(telemetry)
    with storing_exemplars(tmp_path, telemetry) as exemplars:
        _turn(handler)
        chats = {
            f"{s.context.trace_id:032x}"
            for s in exporter.get_finished_spans()
            if s.name == "chat gpt-4o"
        }
        series = exemplars.wait_for("gen_ai_client_operation_duration_seconds_bucket")
        assert trace_ids(series) and trace_ids(series) <= chats


def test_only_an_errored_runs_trace_is_its_agent_runs_exemplar(
    telemetry: InMemoryTelemetry,
) -> None:
    """Trace links on ``agent_runs`` lead to failures: a healthy series carries none."""
    handler = telemetry.handler()
    for run_id, outcome in (("ok", "completed"), ("bad", "error")):
        handler.agent_start(AgentStartEvent("q", run_id))
        handler.agent_end(
            AgentEndEvent(
                run_id,
                "x" if outcome == "completed" else None,
                10.0,
                1,
                outcome=outcome,  # type: ignore[arg-type]
                error_type="RuntimeError" if outcome == "error" else None,
            )
        )
    runs = {
        span.attributes[semconv.RUN_ID]: span  # type: ignore[index]
        for span in telemetry.spans()
        if span.name.startswith("invoke_agent")
    }
    linked: dict[str, list[int]] = {}
    for point in telemetry.metrics()[semconv.AGENT_RUNS.name].data.data_points:
        if point.value:
            outcome = str(point.attributes[semconv.RUN_OUTCOME])
            linked[outcome] = [e.trace_id for e in point.exemplars]
    assert linked == {"completed": [], "error": [runs["bad"].context.trace_id]}
