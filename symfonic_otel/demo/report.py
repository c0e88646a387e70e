"""The demo's summary, read back from the OpenTelemetry SDK's own metric and span data.

Nothing here counts on the side: every figure comes from the ``MetricsData`` a reader collected
(percentiles interpolated from histogram buckets the way Prometheus' ``histogram_quantile``
does), and the trace tree from the finished spans of one run.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.metrics.export import MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from rich.console import Console
from rich.table import Table
from rich.tree import Tree

from symfonic_otel import semconv
from symfonic_otel.demo.metric_view import MetricView, histogram_quantile
from symfonic_otel.demo.notes import RunContext, count_notes

__all__ = ["MetricView", "RunSpanSampler", "histogram_quantile", "render_summary"]


class RunSpanSampler(SpanExporter):
    """Keeps the finished spans of a few candidate runs (bounded), for the trace tree.

    ``candidates`` maps run ids, best first, to what the run shows ("a loop cut recovered by
    synthesis"); the summary prints the best candidate that produced spans.
    """

    def __init__(self, max_spans: int = 64) -> None:
        self.candidates: dict[str, str] = {}
        self.spans_by_run: dict[str, list[ReadableSpan]] = {}
        self._max = max_spans

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        for span in spans:
            run_id = (span.attributes or {}).get(semconv.RUN_ID)
            if not isinstance(run_id, str) or run_id not in self.candidates:
                continue
            kept = self.spans_by_run.setdefault(run_id, [])
            if len(kept) < self._max:
                kept.append(span)
        return SpanExportResult.SUCCESS

    def best(self) -> tuple[str, str, list[ReadableSpan]] | None:
        """(run id, what it shows, its spans) of the best candidate that has spans; one that
        ended otherwise than planned (cancelled by Ctrl-C) only if no other has spans, and then
        titled by how it ended."""
        cut_short: tuple[str, str, list[ReadableSpan]] | None = None
        for run_id, description in self.candidates.items():
            spans = self.spans_by_run.get(run_id)
            if not spans:
                continue
            outcomes = [(s.attributes or {}).get(semconv.RUN_OUTCOME) for s in spans]
            outcome = next((o for o in outcomes if o is not None), None)
            if outcome in (None, "completed"):
                return run_id, description, spans
            if cut_short is None:
                cut_short = (run_id, f"a run that ended {outcome} before it finished", spans)
        return cut_short

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
    # Not an outcome: a flag on some of the runs above, so it is said under the table.
    table.caption = (
        f"of these, {empty:.0f} ({_pct(empty, total).strip()}) ended with an empty answer"
    )
    table.caption_justify = "left"
    table.min_width = len(table.caption) + 2
    return table


def _bail_table(view: MetricView) -> Table:
    runs = view.sums(semconv.AGENT_RUNS.name, [semconv.TENANT_ID])
    bails = view.sums(semconv.SILENT_BAILS.name, [semconv.TENANT_ID])
    reasons = view.sums(
        semconv.SILENT_BAILS.name, [semconv.TENANT_ID, semconv.REACT_TERMINATION_REASON]
    )
    table = Table(title="Silent bails per tenant", title_justify="left")
    columns = ("tenant", "runs", "silent bails", "rate", "tool calls, no text", "empty completion")
    for column in columns:
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


def _loop_table(view: MetricView) -> Table:
    """Looping runs per tenant (counted at detection) and repeated tool calls."""
    looping = view.sums(semconv.LOOPING_RUNS.name, [semconv.TENANT_ID, semconv.LOOP_KIND])
    repeated = view.sums(semconv.REPEATED_TOOL_CALLS.name, [semconv.TENANT_ID])
    table = Table(title="Looping runs per tenant", title_justify="left")
    for column in ("tenant", "looping runs", "repeated tool call", "call budget", "repeats"):
        table.add_column(column, justify="left" if column == "tenant" else "right")
    tenants = sorted({key[0] for key in looping} | {key[0] for key in repeated}, key=str)
    rows = []
    for tenant in tenants:
        kinds = [looping.get((tenant, kind), 0.0) for kind in semconv.LOOP_KINDS]
        rows.append((-sum(kinds), str(tenant), kinds, repeated.get((tenant,), 0.0)))
    for total, tenant, kinds, repeats in sorted(rows):
        table.add_row(tenant, f"{-total:.0f}", *(f"{k:.0f}" for k in kinds), f"{repeats:.0f}")
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


NEXT_STEP = (
    "\nNext: serve these metrics to a Prometheus and watch the noisy tenant's page fire:\n"
    "  symfonic-otel demo --duration 600 --prometheus-port 9464\n"
    'then follow the operator guide, "From install to a page" (docs/operators/index.md in the '
    "symfonic-otel documentation): export the dashboards and rules, point Prometheus at the "
    "demo, import the dashboards into Grafana."
)

_TREE_LABELS = (
    (semconv.TENANT_ID, "tenant"),
    (semconv.NODE_NAME, "node"),
    (semconv.GEN_AI_USAGE_INPUT_TOKENS, "in"),
    (semconv.GEN_AI_USAGE_OUTPUT_TOKENS, "out"),
    (semconv.SYNTHESIS_RECOVERED, "recovered"),
    (semconv.RUN_OUTCOME, "outcome"),
    (semconv.RESPONSE_EMPTY, "empty_answer"),
)


def _event_label(name: str, attrs: Mapping[str, Any]) -> str:
    reason = attrs.get(semconv.REACT_TERMINATION_REASON, attrs.get(semconv.FABRICATION_ACTION))
    return f"[italic]event[/italic] {name} {reason or ''}".rstrip()


def trace_tree(spans: Iterable[ReadableSpan]) -> Tree | None:
    """The run's spans as a tree: names, node names, tokens and span events (no timings).

    Under each span, its events and child spans in time order.
    """
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

    def fill(branch: Tree, span: ReadableSpan) -> None:
        """The span's events and child spans, in time order (an event after the calls before
        it: a loop's end under the calls that led to it)."""
        items: list[tuple[int, int, Any]] = [
            (event.timestamp or 0, 0, event) for event in span.events
        ]
        items.extend(
            (child.start_time or 0, 1, child)
            for child in children.get(span.context.span_id if span.context else 0, [])
        )
        for _, _, item in sorted(items, key=lambda entry: (entry[0], entry[1])):
            if isinstance(item, ReadableSpan):
                fill(branch.add(label(item)), item)
            else:
                branch.add(_event_label(item.name, item.attributes or {}))

    root = roots[0]
    tree = Tree(label(root))
    fill(tree, root)
    return tree


def render_summary(
    console: Console,
    data: MetricsData | None,
    sample: RunSpanSampler | Sequence[ReadableSpan],
    *,
    partial: bool = False,
    context: RunContext | None = None,
) -> None:
    view = MetricView(data)
    if partial:
        console.print("[yellow]Interrupted: partial summary of the runs so far.[/yellow]")
    for table in (
        _runs_table(view),
        _bail_table(view),
        _synthesis_table(view),
        _loop_table(view),
        _fabrication_table(view),
        _latency_table(view),
    ):
        console.print(table)
    console.print(_telemetry_health(view))
    if context is not None:
        console.print("\nHow to read these counts:")
        for note in count_notes(view, context):
            console.print(f"- {note}")
    _print_trace(console, sample)
    if context is not None and not partial:
        console.print(NEXT_STEP)


def _print_trace(console: Console, sample: RunSpanSampler | Sequence[ReadableSpan]) -> None:
    if isinstance(sample, RunSpanSampler):
        best = sample.best()
        if best is None:
            reason = (
                "no sample run was chosen"
                if not sample.candidates
                else "none of the sample runs finished before the demo stopped"
            )
            console.print(f"\nNo run's trace to show: {reason}.")
            return
        run_id, description, spans = best
        title = f"\nOne run's trace ({description}, run {run_id}):"
    else:
        spans, title = list(sample), "\nOne run's trace:"
    tree = trace_tree(spans)
    if tree is None:
        console.print("\nNo run's trace to show: the sample run recorded no spans.")
        return
    console.print(title)
    console.print(tree)
