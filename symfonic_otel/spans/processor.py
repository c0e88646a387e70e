"""SilentBailSpanProcessor: silent bails per tenant from the GenAI spans of other instrumentations.

Installed on the ``TracerProvider`` that OpenLLMetry, OpenInference, OpenTelemetry's own GenAI
instrumentations or Pydantic AI export through, it reads each span as it ends, judges each agent
invocation on its own model calls (``runs``), and when the local root above it ends records the
runs through this package's metric emitter: ``symfonic.agent.runs``,
``symfonic.react.silent_bails`` and ``symfonic.agent.stop_reasons`` per tenant and per agent
name, with the same tenant budget, zero-seeding and label caps as the callback handler. It
starts no span, changes none, holds a few flags per open span with evidence (bounded by count
and age) and never raises into the SDK that calls it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Final

from opentelemetry import metrics
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import StatusCode

from symfonic_otel import semconv
from symfonic_otel._version import __version__
from symfonic_otel.core import loops
from symfonic_otel.core.handler_core import INTERNAL_ERROR
from symfonic_otel.emit import retention_marks
from symfonic_otel.emit.agents import AgentEmitters
from symfonic_otel.emit.budget import agent_label_values
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.emit.tenancy import resolve_tenant
from symfonic_otel.emit.tenants import DEFAULT_TENANT_IDLE_S, ActiveTenants
from symfonic_otel.logs import FailureLog
from symfonic_otel.options import is_positive_seconds, warn_if_over_limit
from symfonic_otel.read.sanitise import clean_label
from symfonic_otel.spans.reading import Kind, SpanReading, metadata_value, read_span
from symfonic_otel.spans.runs import fold
from symfonic_otel.spans.traces import AgentRun, Pending, SpanTable
from symfonic_otel.spans.verdict import judge

__all__ = ["SilentBailSpanProcessor"]

DEFAULT_MAX_TENANTS: Final = 10_000
DEFAULT_MAX_TRACES: Final = 10_000
DEFAULT_TRACE_TTL_S: Final = 3600.0
_EVENT_KIND: Final = "span_end"
# Exits whose run's trace outcome retention keeps (with bails and every outcome but completed).
_KEPT_STOPS: Final = frozenset(
    {semconv.STOP_REASON_LOOP_DETECTED, semconv.STOP_REASON_RECURSION_LIMIT}
)


class SilentBailSpanProcessor(SpanProcessor):
    # It only counts: exemplars may not name traces on its account (``export.trace_exemplars``).
    symfonic_exports_no_spans = True

    """Derives runs, silent bails and stop reasons per tenant from GenAI spans others emit.

    ``tracer_provider.add_span_processor(SilentBailSpanProcessor(meter_provider=...))``.

    * ``tenant_attributes``: span attributes holding the tenant, in order of preference (the
      first one found on any span of the trace wins); ``tenant_scope`` around the run still
      ranks first, ``tenant_id`` is the default, then ``"unknown"``.
    * ``tenant_metadata_key``: a key of the run's metadata as OpenInference records it (one
      JSON attribute ``metadata``), read when no tenant attribute is found, e.g. ``"tenant_id"``.
    * ``agent_name``: the agent label of runs whose spans name no agent (``gen_ai.agent.name``);
      a run that names one is labelled with it (sanitised, at most 16 names, then ``_OTHER``).
    * ``max_tenants``: tenants active at once; past it, ``"__overflow__"``.
    * ``tenant_idle_s``: a tenant idle this long gives back its slot and its series.
    * ``max_traces`` / ``trace_ttl_s``: open spans holding evidence (about one per open run and
      per open span around it), and for how long.

    Content is read only to tell a blank answer from a non-blank one; none is recorded.
    """

    def __init__(
        self,
        *,
        meter_provider: MeterProvider | None = None,
        tenant_attributes: Sequence[str] = semconv.SPAN_TENANT_ATTRIBUTES,
        tenant_id: str | None = None,
        tenant_metadata_key: str | None = None,
        agent_name: str = "symfonic",
        max_tenants: int = DEFAULT_MAX_TENANTS,
        max_traces: int = DEFAULT_MAX_TRACES,
        trace_ttl_s: float = DEFAULT_TRACE_TTL_S,
        tenant_idle_s: float = DEFAULT_TENANT_IDLE_S,
        loop_threshold: int = loops.DEFAULT_LOOP_THRESHOLD,
        runaway_calls: int = loops.DEFAULT_RUNAWAY_CALLS,
    ) -> None:
        name = type(self).__name__
        self._loop_limits = loops.limits(loop_threshold, runaway_calls)
        if isinstance(tenant_attributes, str) or not isinstance(tenant_attributes, Sequence):
            raise TypeError(
                f"{name}(tenant_attributes=...) takes a sequence of attribute names, "
                f"got {tenant_attributes!r}"
            )
        if not all(isinstance(key, str) and key for key in tenant_attributes):
            raise ValueError(
                f"{name}(tenant_attributes=...) must hold non-empty str names, "
                f"got {tenant_attributes!r}"
            )
        for option, text in (
            ("tenant_id", tenant_id),
            ("tenant_metadata_key", tenant_metadata_key),
        ):
            if text is not None and not isinstance(text, str):
                raise TypeError(f"{name}({option}=...) must be a str or None, got {text!r}")
        if not isinstance(agent_name, str) or not clean_label(agent_name):
            raise ValueError(f"{name}(agent_name=...) must be a non-empty str, got {agent_name!r}")
        if not is_positive_seconds(tenant_idle_s):
            raise ValueError(
                f"{name}(tenant_idle_s=...) must be a positive number of seconds, "
                f"got {tenant_idle_s!r}"
            )
        for option, value in (("max_tenants", max_tenants), ("max_traces", max_traces)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}({option}=...) must be an int >= 1, got {value!r}")
        if not is_positive_seconds(trace_ttl_s):
            raise ValueError(
                f"{name}(trace_ttl_s=...) must be a positive number of seconds, got {trace_ttl_s!r}"
            )
        self._tenant_keys = tuple(dict.fromkeys(tenant_attributes))
        self._tenant_default = tenant_id
        self._metadata_key = tenant_metadata_key or None
        meter = metrics.get_meter(semconv.SCOPE_NAME, __version__, meter_provider=meter_provider)
        # Tenants come and go as they do for the handler: a slot and its series are given back
        # once the tenant has been idle for ``tenant_idle_s``.
        self._tenants = ActiveTenants(max_tenants, float(tenant_idle_s))
        self._metrics = MetricEmitter(
            meter, clean_label(agent_name), self._tenants, meter_provider=meter_provider
        )
        self._agents = AgentEmitters(self._metrics)
        self._traces = SpanTable(max_traces, float(trace_ttl_s))
        self._failures = FailureLog()
        self._fold_lock = threading.Lock()
        self._ending_hook = False  # set once the SDK calls ``_on_ending``
        self._interrupted = threading.local()
        # Traces whose root never ends are judged at every metric collection too.
        self._metrics.recorder.on_collect(self.expire_traces)
        # Outcome retention waits for this processor's verdict at each local root it saw
        # start (bounded like the span table: the oldest forgotten first).
        self._roots_awaited: dict[int, None] = {}  # an ordered set of trace ids
        self._max_roots_awaited = max_traces
        retention_marks.register_judge(self)
        warn_if_over_limit(max_tenants, agent_names=agent_label_values())

    # --- the SDK's SpanProcessor interface ----------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        parent = span.parent
        if parent is None or parent.is_remote:
            try:
                awaited = self._roots_awaited
                awaited[span.context.trace_id] = None  # pragma: no mutate: values never read
                if len(awaited) > self._max_roots_awaited:
                    del awaited[next(iter(awaited))]
            except Exception:  # a bookkeeping slip only costs retention its wait
                pass

    def awaits_root(self, trace_id: int) -> bool:
        """Whether this processor saw ``trace_id``'s local root start and has not judged it."""
        return trace_id in self._roots_awaited

    def _on_ending(self, span: Span) -> None:
        """The SDK's hook just before ``on_end`` (every supported SDK calls it): the span is
        read here, because the SDK's loop over ``on_end`` stops at the first processor that
        raises, and one placed before this one would cost every run its count."""
        self._ending_hook = True
        try:
            self.on_end(span)
        except BaseException as interrupt:  # Ctrl-C while recording: raised from ``on_end``,
            self._interrupted.value = interrupt  # as before, after the others' ``_on_ending``

    def on_end(self, span: ReadableSpan) -> None:
        interrupt = getattr(self._interrupted, "value", None)
        if interrupt is not None:
            self._interrupted.value = None
            raise interrupt
        if self._ending_hook and not isinstance(span, Span):
            return  # read already in ``_on_ending`` (a second reading would find it ended)
        try:
            self._on_end(span)
        except Exception as exc:  # never into the SDK, never into the instrumented app
            self._failures.report("span_processor", exc)
            self._dropped(INTERNAL_ERROR)

    def shutdown(self) -> None:
        """Count the runs still held (they ended, the roots above them did not)."""
        _keep_traces(self._guarded_finish(self._traces.drain()))

    def force_flush(self, timeout_millis: int = 30000) -> bool:  # pragma: no mutate: unused
        return True

    # --- housekeeping -------------------------------------------------------------------------

    def expire_traces(self) -> int:
        """Count the runs held past the TTL now (also done at every metric collection)."""
        expired = self._traces.expired()
        _keep_traces(self._guarded_finish(expired))
        return len(expired)

    @property
    def open_traces(self) -> int:
        return len(self._traces)

    # --- internals ----------------------------------------------------------------------------

    def _on_end(self, span: ReadableSpan) -> None:
        context = span.context
        if context is None:
            return
        trace_id = context.trace_id
        key = (trace_id, context.span_id)
        parent = span.parent
        is_root = parent is None or parent.is_remote
        table = self._traces
        if table.ended(key):  # delivered again, or evicted while open: its runs were counted
            if is_root:  # its runs' traces were marked when counted: retention waits no more
                self._root_judged(trace_id, set())
            return
        scope = span.instrumentation_scope
        ours = scope is not None and scope.name == semconv.SCOPE_NAME
        if ours:  # this package's handler counts the runs of its own spans: they are not read
            reading: SpanReading | None = None  # pragma: no mutate: ``fold`` ignores it for ours
            tenant = None
            relevant = True
        else:
            # One copy: the SDK's attribute mapping answers a missing key by raising KeyError
            # underneath, and most keys looked up here are missing.
            attributes: Mapping[str, Any] = dict(span.attributes or {})
            reading = read_span(attributes, span.events, _failed(span), is_root)
            tenant = self._tenant_in(attributes)
            relevant = (
                tenant is not None
                or reading.kind is not Kind.OTHER
                or reading.step_cap
                or reading.tool_call is not None
            )
        with self._fold_lock:  # spans of one trace may end in several threads at once
            held = table.end(key, relevant)
            if held is None and not relevant:
                if is_root:
                    self._root_judged(trace_id, set())
                return
            times = (span.start_time or 0, span.end_time or 0)
            out = fold(held, reading, ours, tenant, key, times)
            parent_key = None if parent is None or is_root else (trace_id, parent.span_id)
            evicted: list[Pending] = []
            if parent_key is None:  # a local root: the runs under it are counted now
                evicted = [out]
            elif not table.ended(parent_key):
                evicted = table.hand_up(parent_key, out)
            # else: a span ending after its parent was judged opens no second run
        keep = self._guarded_finish(evicted)
        # Marked first: a trace retention dropped early (its bounds) counts the keep as late.
        _keep_traces(keep)  # this root's runs, and runs judged before their roots ended
        if parent_key is None:
            self._root_judged(trace_id, keep)

    def _root_judged(self, trace_id: int, keep: set[int]) -> None:
        """The verdict at a local root: retention, which may wait for it, hears it now."""
        self._roots_awaited.pop(trace_id, None)
        retention_marks.trace_judged(trace_id, trace_id in keep)

    def _tenant_in(self, attributes: Mapping[str, Any]) -> tuple[int, str] | None:
        for rank, key in enumerate(self._tenant_keys):
            value = attributes.get(key)
            if isinstance(value, str) and value:
                return rank, value
            if isinstance(value, int | float) and not isinstance(value, bool):
                return rank, str(value)
        if self._metadata_key is not None:
            value = metadata_value(
                attributes.get(semconv.OPENINFERENCE_METADATA), self._metadata_key
            )
            if value is not None:
                return len(self._tenant_keys), value
        return None

    def _guarded_finish(self, pendings: list[Pending]) -> set[int]:
        """Count the runs; the ids of the traces they must keep (a run bailed or failed)."""
        keep: set[int] = set()
        for pending in pendings:
            if pending.ours:
                continue  # our own handler counted these runs
            keep |= self._count_runs(pending.all_runs())
        return keep

    def _count_runs(self, runs: list[AgentRun]) -> set[int]:
        keep: set[int] = set()
        for run in runs:
            try:
                if self._finish(run):
                    keep.add(run.link[0])
            except Exception as exc:
                self._failures.report("span_processor", exc)
                self._dropped(INTERNAL_ERROR)
        return keep

    def _dropped(self, reason: str) -> None:
        try:
            self._metrics.dropped(_EVENT_KIND, reason)
        except Exception as inner:
            self._failures.report("drop_count", inner)

    def _finish(self, run: AgentRun) -> bool:
        verdict = judge(run)
        raw = resolve_tenant(run.tenant.value, default=self._tenant_default)
        tenant = self._tenants(raw)
        emitter: MetricEmitter = self._agents(run.name)
        emitter.seed_tenant(tenant)
        emitter.run_started()  # run_ended takes the run out of the active-runs gauge again
        emitter.run_ended(
            tenant,
            verdict.outcome,
            verdict.empty,
            verdict.duration_s,
            verdict.iterations,
            verdict.stop_reason,
            link=run.link,
        )
        if verdict.bail is not None:
            emitter.silent_bail(tenant, verdict.bail, run.link)
        looped = loops.ended_run(
            emitter,
            tenant,
            self._loop_limits,
            verdict.outcome,
            run.calls.count,
            run.link,
            run.calls.tools,
        )
        return (
            looped
            or verdict.bail is not None
            or verdict.outcome != "completed"
            or verdict.stop_reason in _KEPT_STOPS
        )


def _keep_traces(trace_ids: set[int]) -> None:
    for trace_id in trace_ids:
        retention_marks.keep_trace(trace_id)


def _failed(span: ReadableSpan) -> bool:
    status = span.status
    return status is not None and status.status_code is StatusCode.ERROR
