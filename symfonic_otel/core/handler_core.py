"""What every event flow of the handler shares: emitters, registries, tenants and loss counting.

``OTelCallbackHandler`` builds one ``HandlerCore``; the run flow (``run_flow``: runs, pauses,
checks), the call flow (``call_flow``: model calls) and the step flow (``step_flow``: tools,
nodes, other calls) read events into records and hand them to the emitters through it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span

from symfonic_otel.core.loops import DEFAULT_LIMITS, LoopLimits
from symfonic_otel.core.runs import OpenRun, RunRegistry
from symfonic_otel.core.steps import OpenCall, OpenCalls
from symfonic_otel.emit.agents import AgentEmitters
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.emit.models import ModelCatalogue
from symfonic_otel.emit.spans import SpanEmitter
from symfonic_otel.emit.tenancy import resolve_tenant
from symfonic_otel.emit.tenants import ActiveTenants
from symfonic_otel.logs import FailureLog, run_id_of
from symfonic_otel.read import extract as ex
from symfonic_otel.read.sanitise import run_key

EMPTY_CONTEXT: Final = Context()
# Why an event did not become (all of) its telemetry: ``symfonic.telemetry.drop_reason``.
UNKNOWN_RUN: Final = "unknown_run"
UNKNOWN_CALL: Final = "unknown_call"  # a tool result or node end whose start never came
DUPLICATE: Final = "duplicate"
MALFORMED: Final = "malformed"
INTERNAL_ERROR: Final = "internal_error"


@dataclass(slots=True, eq=False)
class HandlerCore:
    spans: SpanEmitter
    metrics: MetricEmitter
    models: ModelCatalogue
    runs: RunRegistry
    calls: OpenCalls
    failures: FailureLog
    tenants: ActiveTenants
    tenant_default: str | None
    tenant_from_baggage: bool
    max_run_ms: float
    node_spans: bool
    agents: AgentEmitters
    loop_limits: LoopLimits = DEFAULT_LIMITS

    def agent_metrics(self, name: object, tenant: str) -> MetricEmitter:
        """The emitter of a run the framework names ``name`` (None: the handler's own name),
        with the tenant's zero series under that name."""
        emitter = self.agents(name)
        if emitter is not self.metrics:
            emitter.seed_tenant(tenant)
        return emitter

    def tenant(self, explicit: object) -> str:
        raw = resolve_tenant(
            explicit, default=self.tenant_default, from_baggage=self.tenant_from_baggage
        )
        tenant = self.tenants(raw)
        self.metrics.seed_tenant(tenant)
        return tenant

    def drop(self, event_kind: str, reason: str) -> None:
        try:
            self.metrics.dropped(event_kind, reason)
        except Exception as exc:  # the meter itself failing must not escape either
            self.failures.report("drop_count", exc)

    def guard(self, kind: str, work: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        """Run one of the handler's entry points: a failure is logged and counted, never
        raised into the agent."""
        try:
            work(*args, **kwargs)
        except Exception as exc:
            self.failures.report(kind, exc, run_id=run_id_of(args[0]) if args else None)
            self.drop(kind, INTERNAL_ERROR)

    def open_span(self, kind: str, work: Callable[..., Span | None], *args: Any) -> Span | None:
        """``guard`` for the entry points that return the span they started."""
        try:
            return work(*args)
        except Exception as exc:
            self.failures.report(kind, exc)
            self.drop(kind, INTERNAL_ERROR)
            return None

    def run(self, run_id: str) -> OpenRun | None:
        return self.runs.get(run_id) if run_id else None

    def model_run(self, run_id: str, kind: str) -> OpenRun | None:
        """The open run a model-call step event belongs to; an unknown run is counted as a
        drop, while no run id at all is a standalone call (nothing to wait for, no loss)."""
        run = self.run(run_id)
        if run is None and run_id:
            self.drop(kind, UNKNOWN_RUN)
        return run

    def parent_in(self, run: OpenRun) -> Context:
        """Where a run's model, tool and node spans go: its innermost open node, else the run."""
        steps = run.steps
        if steps is not None and self.node_spans:
            node = steps.innermost_node()
            if node is not None:
                return trace.set_span_in_context(node, EMPTY_CONTEXT)
        return run.context

    def end_time(self, span: Any, end_time_ns: int | None) -> int | None:
        """An explicit end time, when it is encodable and not before the span's start."""
        end, _ = ex.explicit_time(end_time_ns)
        start = getattr(span, "start_time", None)
        if end is not None and isinstance(start, int) and end < start:
            return None
        return end

    def close_steps(self, run: OpenRun) -> None:
        """End the tool and node spans still open when their run ends, marked unfinished."""
        if run.steps is not None:
            self.end_unfinished(run.steps.drain())

    def end_unfinished(self, calls: list[OpenCall]) -> None:
        for call in calls:
            self.spans.end_step(call.span, None, None, unfinished=True)


def key(run_id: object) -> str:
    """A caller's run id as the registry keys it (capped; any type)."""
    if run_id is None:
        return ""
    text = run_id if isinstance(run_id, str) else str(run_id)
    return run_key(text) if text else ""
