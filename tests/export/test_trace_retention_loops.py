"""A looping run's trace is kept whole at ``healthy_trace_ratio=0.01``; its exemplar names it.

``configure_telemetry`` with outcome retention at 1 % sends traces to the repo's real OTLP
receiver and serves the Prometheus endpoint. Runs are played through the handler's own events:
healthy runs (one tool call, one model call, an answer) and looping runs (three identical tool
calls, detected while the run is still open, then an answer: a run that looks healthy at its
end). Every looping trace arrives with all its spans, most healthy traces do not, and the
looping-run counter's exemplar, scraped as OpenMetrics, names a trace the receiver holds.
"""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om

from symfonic_otel import OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent, ToolResultEvent
from symfonic_otel.export.setup import Telemetry
from tests.support.configured_handler import handler_on
from tests.support.retaining_telemetry import retaining_telemetry

OPENMETRICS = "application/openmetrics-text; version=1.0.0"
RUNS = 300
LOOP_EVERY = 25  # 12 looping runs among 300
SECRET = "repeated-argument-text"


pytestmark = pytest.mark.usefixtures("clean_otel_and_symfonic_env")


class ToolCallStart:
    """Symfonic's ToolCallStart shape, read duck-typed by the handler."""

    def __init__(self, run_id: str, call_id: str, name: str, arguments: Any) -> None:
        self.run_id = run_id
        self.tool_call_id = call_id
        self.tool_name = name
        self.arguments = arguments
        self.phase = "executing"


def _play(handler: OTelCallbackHandler, run_id: str, tenant: str, tool_calls: int) -> int:
    """One run; returns its trace id (read while the run is open)."""
    with tenant_scope(tenant):
        handler.agent_start(AgentStartEvent("q", run_id))
    run = handler._core.runs.get(run_id)
    assert run is not None
    trace_id = run.span.get_span_context().trace_id
    for i in range(tool_calls):
        call_id = f"{run_id}-{i}"
        handler.tool_call_start(ToolCallStart(run_id, call_id, "search", {"q": SECRET}))
        handler.tool_result(ToolResultEvent(call_id, "search", "ok", run_id=run_id))
    handler.llm_end(LLMEndEvent("gpt-4o", "answer", {}, run_id=run_id, node_name="react"))
    handler.agent_end(AgentEndEvent(run_id, "answer", 10.0, 1))
    return int(trace_id)


def _looping_exemplars(telemetry: Telemetry) -> dict[str, set[str]]:
    url = f"http://127.0.0.1:{telemetry.prometheus_port}/metrics"
    request = urllib.request.Request(url, headers={"Accept": OPENMETRICS})
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    found: dict[str, set[str]] = {}
    for family in parse_om(text):
        if family.name != "symfonic_agent_looping_runs":
            continue
        for sample in family.samples:
            if sample.exemplar is not None and sample.value > 0:
                tenant = sample.labels[semconv.TENANT_ID.replace(".", "_")]
                found.setdefault(tenant, set()).add(sample.exemplar.labels["trace_id"])
    return found


def test_looping_runs_are_exported_whole_at_one_percent_and_their_exemplar_names_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with retaining_telemetry(monkeypatch) as (receiver, telemetry):
        handler = handler_on(telemetry)
        looping: set[int] = set()
        healthy: set[int] = set()
        try:
            for i in range(RUNS):
                loops = i % LOOP_EVERY == 0
                tenant = "loopy" if loops else f"tenant-{i % 7}"
                trace_id = _play(handler, f"run-{i:04d}", tenant, 3 if loops else 1)
                (looping if loops else healthy).add(trace_id)
            exemplars = _looping_exemplars(telemetry)
        finally:
            assert telemetry.shutdown()
        received = receiver.spans()

    by_trace: dict[int, list[str]] = {}
    for span in received:
        by_trace.setdefault(int(span.trace_id, 16), []).append(span.name)
    # Every looping run's trace, whole: its run span and its three tool calls.
    for trace_id in looping:
        names = sorted(by_trace.get(trace_id, []))
        assert names.count("execute_tool search") == 3, names
        assert sum(name.startswith("invoke_agent") for name in names) == 1, names
    expected_spans = {len(by_trace[t]) for t in looping}
    assert len(expected_spans) == 1  # the same shape, nothing cut from any of them
    # Healthy runs mostly not: 1 % of 288, with room for the hash's luck.
    kept_healthy = healthy & set(by_trace)
    assert len(kept_healthy) <= 0.05 * len(healthy), len(kept_healthy)
    # The looping tenant's counter carries an exemplar, naming a trace the receiver holds.
    assert set(exemplars) == {"loopy"}, exemplars
    named = {int(trace_id, 16) for trace_id in exemplars["loopy"]}
    assert named and named <= looping and named <= set(by_trace)
    # With capture off, the repeated argument reached no span.
    for span in received:
        assert SECRET not in repr(span.attributes) and SECRET not in repr(span.events)
