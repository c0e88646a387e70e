"""The demo's summary, read back from the OpenTelemetry SDK's own metric and span data.

Nothing here counts on the side: every figure comes from the ``MetricsData`` a reader collected
(percentiles interpolated from histogram buckets the way Prometheus' ``histogram_quantile``
does), and the trace tree from the finished spans of one run.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    MetricsData,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from rich.console import Console
from rich.table import Table
from rich.tree import Tree

from symfonic_otel import semconv

__all__ = ["MetricView", "RunSpanSampler", "histogram_quantile", "render_summary"]


@dataclass
class _Histogram:
    bounds: tuple[float, ...] = ()
    counts: list[int] = field(default_factory=list)
    count: int = 0
    total: float = 0.0

    def merge(self, point: HistogramDataPoint) -> None:
        if not self.counts:
            self.bounds = tuple(point.explicit_bounds)
            self.counts = [0] * len(point.bucket_counts)
        for index, value in enumerate(point.bucket_counts):
            self.counts[index] += value
        self.count += point.count
        self.total += point.sum


def histogram_quantile(q: float, bounds: Sequence[float], counts: Sequence[int]) -> float:
    """Prometheus' estimate: linear interpolation inside the bucket holding the q-th rank."""
    total = sum(counts)
    if total == 0:
        return math.nan
    rank = q * total
    cumulative = 0
    for index, count in enumerate(counts):
        if cumulative + count >= rank and count > 0:
            if index >= len(bounds):  # the +Inf bucket: the highest finite bound
                return bounds[-1] if bounds else math.nan
            lower = bounds[index - 1] if index > 0 else 0.0
            return lower + (bounds[index] - lower) * (rank - cumulative) / count
        cumulative += count
    return bounds[-1] if bounds else math.nan


class MetricView:
    """Sums and merged histograms over one ``MetricsData``, grouped by attribute keys."""

    def __init__(self, data: MetricsData | None) -> None:
        self._points: dict[str, list[Any]] = defaultdict(list)
        if data is None:
            return
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    self._points[metric.name].extend(metric.data.data_points)

    def sums(self, name: str, by: Sequence[str]) -> dict[tuple[Any, ...], float]:
        result: dict[tuple[Any, ...], float] = defaultdict(float)
        for point in self._points.get(name, ()):
            if isinstance(point, NumberDataPoint):
                attrs = point.attributes or {}
                result[tuple(attrs.get(key) for key in by)] += point.value
        return dict(result)

    def total(self, name: str, where: Mapping[str, Any] | None = None) -> float:
        total = 0.0
        for point in self._points.get(name, ()):
            attrs = point.attributes or {}
            if where and any(attrs.get(k) != v for k, v in where.items()):
                continue
            if isinstance(point, NumberDataPoint):
                total += point.value
            elif isinstance(point, HistogramDataPoint):
                total += point.count
        return total

    def histograms(self, name: str, by: Sequence[str]) -> dict[tuple[Any, ...], _Histogram]:
        result: dict[tuple[Any, ...], _Histogram] = defaultdict(_Histogram)
        for point in self._points.get(name, ()):
            if isinstance(point, HistogramDataPoint):
                attrs = point.attributes or {}
                result[tuple(attrs.get(key) for key in by)].merge(point)
        return dict(result)


class RunSpanSampler(SpanExporter):
    """Keeps the finished spans of one chosen run (bounded), for the trace tree."""

    def __init__(self, max_spans: int = 64) -> None:
        self.run_id: str | None = None
        self.spans: list[ReadableSpan] = []
        self._max = max_spans

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            attrs = span.attributes or {}
            if (
                self.run_id is not None
                and attrs.get(semconv.RUN_ID) == self.run_id
                and len(self.spans) < self._max
            ):
                self.spans.append(span)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def _pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:5.1f} %" if whole else "    - "


def _seconds(value: float) -> str:
    return "-" if math.isnan(value) else f"{value * 1000:,.0f} ms"


def _runs_table(view: MetricView) -> Table:
    runs = view.sums(semconv.AGENT_RUNS.name, [semconv.RUN_OUTCOME])
    total = sum(runs.values())
    empty = view.total(semconv.AGENT_RUNS.name, {semconv.RESPONSE_EMPTY: True})
    table = Table(title="Runs by outcome", title_justify="left")
    table.add_column("outcome")
    table.add_column("runs", justify="right")
    table.add_column("share", justify="right")
    for (outcome,), count in sorted(runs.items(), key=lambda item: str(item[0])):
        table.add_row(str(outcome), f"{count:.0f}", _pct(count, total))
    table.add_row("[bold]all[/bold]", f"{total:.0f}", "")
    table.add_row("empty final response", f"{empty:.0f}", _pct(empty, total))
    return table


def _bail_table(view: MetricView) -> Table:
    runs = view.sums(semconv.AGENT_RUNS.name, [semconv.TENANT_ID])
    bails = view.sums(semconv.SILENT_BAILS.name, [semconv.TENANT_ID])
    reasons = view.sums(
        semconv.SILENT_BAILS.name, [semconv.TENANT_ID, semconv.REACT_TERMINATION_REASON]
    )
    table = Table(title="Silent bails per tenant", title_justify="left")
    for column in ("tenant", "runs", "silent bails", "rate", "tool calls, no text", "empty"):
        table.add_column(column, justify="left" if column == "tenant" else "right")
    ranked = sorted(
        runs, key=lambda key: (-(bails.get(key, 0) / runs[key] if runs[key] else 0), str(key))
    )
    for key in ranked:
        (tenant,) = key
        bailed = bails.get(key, 0.0)
        table.add_row(
            str(tenant),
            f"{runs[key]:.0f}",
            f"{bailed:.0f}",
            _pct(bailed, runs[key]),
            f"{reasons.get((tenant, 'tool_calls_with_no_text'), 0):.0f}",
            f"{reasons.get((tenant, 'no_content_no_tool_calls'), 0):.0f}",
        )
    return table


def _synthesis_table(view: MetricView) -> Table:
    calls = view.sums(semconv.SYNTHESIS_FALLBACKS.name, [semconv.SYNTHESIS_RECOVERED])
    cost = view.total(semconv.LLM_COST.name, {semconv.NODE_NAME: semconv.NODE_SYNTHESIZE_FALLBACK})
    all_cost = view.total(semconv.LLM_COST.name)
    total = sum(calls.values())
    recovered = calls.get((True,), 0.0)
    table = Table(title="Synthesis fallbacks (react_synthesize_fallback)", title_justify="left")
    for column in ("calls", "recovered", "recovery ratio", "cost USD", "share of all cost"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{total:.0f}",
        f"{recovered:.0f}",
        _pct(recovered, total),
        f"{cost:.4f}",
        _pct(cost, all_cost),
    )
    return table


def _fabrication_table(view: MetricView) -> Table:
    detections = view.sums(
        semconv.FABRICATION_DETECTIONS.name,
        [semconv.FABRICATION_MODE, semconv.FABRICATION_ACTION],
    )
    confidence = view.histograms(
        semconv.FABRICATION_CONFIDENCE.name,
        [semconv.FABRICATION_MODE, semconv.FABRICATION_ACTION],
    )
    table = Table(title="Fabrication detections", title_justify="left")
    for column in ("mode", "action", "detections", "mean max confidence"):
        table.add_column(column, justify="right" if column != "mode" else "left")
    for key in sorted(detections, key=str):
        hist = confidence.get(key)
        mean = hist.total / hist.count if hist and hist.count else math.nan
        table.add_row(str(key[0]), str(key[1]), f"{detections[key]:.0f}", f"{mean:.2f}")
    return table


def _latency_table(view: MetricView) -> Table:
    hists = view.histograms(semconv.CLIENT_OPERATION_DURATION.name, [semconv.NODE_NAME])
    table = Table(title="LLM latency per node (from histogram buckets)", title_justify="left")
    for column in ("node", "calls", "p50", "p95"):
        table.add_column(column, justify="left" if column == "node" else "right")
    for key in sorted(hists, key=str):
        hist = hists[key]
        table.add_row(
            str(key[0]) or "(none)",
            str(hist.count),
            _seconds(histogram_quantile(0.5, hist.bounds, hist.counts)),
            _seconds(histogram_quantile(0.95, hist.bounds, hist.counts)),
        )
    return table


def _telemetry_health(view: MetricView) -> str:
    orphaned = view.total(semconv.ORPHANED_RUNS.name)
    dropped = view.sums(semconv.DROPPED_EVENTS.name, [semconv.TELEMETRY_DROP_REASON])
    parts = [f"orphaned runs closed as abandoned: {orphaned:.0f}"]
    parts.extend(f"dropped {reason}: {count:.0f}" for (reason,), count in sorted(dropped.items()))
    return "Telemetry health — " + ", ".join(parts)


_TREE_LABELS = (
    (semconv.TENANT_ID, "tenant"),
    (semconv.NODE_NAME, "node"),
    (semconv.GEN_AI_USAGE_INPUT_TOKENS, "in"),
    (semconv.GEN_AI_USAGE_OUTPUT_TOKENS, "out"),
    (semconv.SYNTHESIS_RECOVERED, "recovered"),
    (semconv.RUN_OUTCOME, "outcome"),
    (semconv.RESPONSE_EMPTY, "empty"),
)


def _event_label(name: str, attrs: Mapping[str, Any]) -> str:
    reason = attrs.get(semconv.REACT_TERMINATION_REASON, attrs.get(semconv.FABRICATION_ACTION))
    return f"[italic]event[/italic] {name} {reason or ''}".rstrip()


def trace_tree(spans: Iterable[ReadableSpan]) -> Tree | None:
    """The run's spans as a tree: names, node names, tokens and span events (no timings)."""
    spans = sorted(spans, key=lambda s: (s.start_time or 0, s.name))
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    roots = [s for s in spans if s.parent is None or s.parent.span_id not in by_id]
    if not roots:
        return None
    children: dict[int, list[ReadableSpan]] = defaultdict(list)
    for span in spans:
        if span.parent is not None and span.parent.span_id in by_id:
            children[span.parent.span_id].append(span)

    def label(span: ReadableSpan) -> str:
        attrs = span.attributes or {}
        details = [f"{short}={attrs[key]!s}" for key, short in _TREE_LABELS if key in attrs]
        return f"[bold]{span.name}[/bold]  " + " ".join(details)

    def add(node: Tree, span: ReadableSpan) -> None:
        branch = node.add(label(span))
        for event in span.events:
            branch.add(_event_label(event.name, event.attributes or {}))
        for child in children.get(span.context.span_id if span.context else 0, []):
            add(branch, child)

    root = roots[0]
    tree = Tree(label(root))
    for event in root.events:
        tree.add(_event_label(event.name, event.attributes or {}))
    for child in children.get(root.context.span_id if root.context else 0, []):
        add(tree, child)
    return tree


def render_summary(
    console: Console,
    data: MetricsData | None,
    sample_spans: Sequence[ReadableSpan],
    *,
    partial: bool = False,
) -> None:
    view = MetricView(data)
    if partial:
        console.print("[yellow]Interrupted: partial summary of the runs so far.[/yellow]")
    for table in (
        _runs_table(view),
        _bail_table(view),
        _synthesis_table(view),
        _fabrication_table(view),
        _latency_table(view),
    ):
        console.print(table)
    console.print(_telemetry_health(view))
    tree = trace_tree(sample_spans)
    if tree is not None:
        console.print("\nOne run's trace:")
        console.print(tree)
