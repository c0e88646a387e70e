"""Loop measurements: looping runs and repeated tool calls per tenant, call counts per run.

``symfonic.agent.looping_runs`` and ``symfonic.agent.repeated_tool_calls`` are per-tenant
counters in the package's own store (``tenant_counters``), like the other per-tenant counters;
a tenant taking a slot gets its two looping-run series at zero, so ``increase()`` counts its
first looping run. The two semconv histograms (``gen_ai.invoke_agent.inference_calls`` and
``gen_ai.invoke_agent.tool_calls``) carry the agent and the run's outcome, no tenant unless the
handler was built with ``tenant_histograms=True``. Where the reader hook serves them
(``call_histograms``) a run's end queues its counts there; elsewhere they go into the SDK's
histograms through the deferred recorder.

A run's repeated tool calls are not counted one by one: the run is queued at its first repeat
since the last report, and every collection (which is when any reader can see a count) adds
what each queued run repeated since (``report_repeats``), so the counter equals the calls past
the first of every run, in the collection after they happened, while the run still runs.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Final, Protocol

from symfonic_otel import semconv
from symfonic_otel.emit.call_histograms import CallHistograms
from symfonic_otel.emit.instruments import Instruments
from symfonic_otel.emit.recorder import DeferredRecorder, SpanLink
from symfonic_otel.emit.tenant_counters import TenantCounters

_LOOPING: Final = semconv.LOOPING_RUNS.name
_REPEATED: Final = semconv.REPEATED_TOOL_CALLS.name
_TENANT: Final = semconv.TENANT_ID
_AGENT: Final = semconv.GEN_AI_AGENT_NAME
_CACHE_CAP: Final = 4096
# Runs waiting for the next collection to report their repeats; past it the recording thread
# reports (memory stays flat when no reader collects).
REPEATS_CAP: Final = 4096


class Repeats(Protocol):
    """What a run's repeat counts are read from (``core.loops.RunLoops``)."""

    repeated: int
    reported: int
    queued: bool


class _Emitter(Protocol):
    """What loop measurements use of their ``MetricEmitter``."""

    @property
    def counters(self) -> TenantCounters: ...
    @property
    def recorder(self) -> DeferredRecorder: ...
    @property
    def instruments(self) -> Instruments: ...
    @property
    def agent_attrs(self) -> dict[str, Any]: ...
    @property
    def tenant_histograms(self) -> bool: ...
    @property
    def call_histograms(self) -> CallHistograms | None: ...


class LoopMetrics:
    """One emitter's loop measurements (the emitter's agent name on every series)."""

    __slots__ = (
        "__weakref__",
        "_agent",
        "_cache",
        "_calls",
        "_count",
        "_emitter",
        "_inference",
        "_per_tenant",
        "_record",
        "_repeats",
        "_report_lock",
        "_sink",
        "_tools",
    )

    def __init__(self, emitter: _Emitter) -> None:
        self._emitter = emitter
        # What every count needs, read once: an emitter's name, store and instruments are
        # fixed at its construction.
        self._agent: object = emitter.agent_attrs[_AGENT]
        self._count = emitter.counters.add
        self._record = emitter.recorder.record_pair
        self._inference = emitter.instruments.inference_calls
        self._tools = emitter.instruments.tool_calls
        self._per_tenant = emitter.tenant_histograms
        # Attribute sets without a tenant only (agent, outcome): per-tenant sets are built when
        # counted, so no cache here grows with the tenants a process has seen.
        self._cache: dict[tuple[object, ...], dict[str, Any]] = {}
        # The call histograms' sets by outcome (no tenant: one per outcome, bounded).
        self._calls: dict[str, dict[str, Any]] = {}
        histograms = emitter.call_histograms
        self._sink = histograms.record if histograms is not None else self._into_sdk
        self._repeats: deque[tuple[Repeats, str]] = deque()
        self._report_lock = threading.Lock()
        emitter.recorder.on_collect(self.report_repeats)

    def _attrs(self, key: tuple[object, ...], **labels: object) -> dict[str, Any]:
        # A miss only builds the same dict again, and the cap bounds memory one entry either
        # way: no metric tells the cache's lookups, stores or cap apart.
        attrs = self._cache.get(key)  # pragma: no mutate: a miss rebuilds an equal dict
        if attrs is None:
            if len(self._cache) >= _CACHE_CAP:  # pragma: no mutate: memory bound, +-1 entry
                self._cache.clear()
            attrs = {k: v for k, v in labels.items() if v is not None}
            attrs = {_KEYS[k]: v for k, v in attrs.items()}
            self._cache[key] = attrs  # pragma: no mutate: a miss rebuilds an equal dict
        return attrs

    def seed(self, tenant: str) -> None:
        """The tenant's looping-run series at zero (one per kind)."""
        for kind in semconv.LOOP_KINDS:
            self._count_looping(tenant, kind, 0, None)

    def looping_run(self, tenant: str, kind: str, link: SpanLink | None) -> None:
        """One run detected looping; ``link``, the run's span, is the series' exemplar."""
        self._count_looping(tenant, kind, 1, link)

    def _count_looping(self, tenant: str, kind: str, value: int, link: SpanLink | None) -> None:
        attrs = {_TENANT: tenant, _AGENT: self._agent, semconv.LOOP_KIND: kind}
        self._count(_LOOPING, tenant, attrs, value, None, link)

    def repeated_tool_calls(self, tenant: str, count: int) -> None:
        self._count(_REPEATED, tenant, {_TENANT: tenant, _AGENT: self._agent}, count)

    def repeating(self, run: Repeats, tenant: str) -> None:
        """``run`` repeated a call since its last report: report it at the next collection."""
        repeats = self._repeats
        repeats.append((run, tenant))
        if len(repeats) > REPEATS_CAP:  # pragma: no mutate: memory bound, +-1 entry
            self.report_repeats()

    def report_repeats(self) -> None:
        """Count what each queued run repeated since its last report (every collection)."""
        repeats = self._repeats
        per_tenant: dict[str, int] = {}  # one count per tenant per collection
        with self._report_lock:  # two collections at once: each repeat reported once
            while repeats:
                try:
                    run, tenant = repeats.popleft()
                except IndexError:  # pragma: no cover - a racing append is picked up next time
                    break  # pragma: no mutate: unreachable, only this locked loop pops
                # Before the read: a repeat from now on queues it again.
                run.queued = False  # pragma: no mutate: read only as `not queued`
                repeated = run.repeated
                new, run.reported = repeated - run.reported, repeated
                if new:
                    per_tenant[tenant] = per_tenant.get(tenant, 0) + new
            for tenant, new in per_tenant.items():
                self.repeated_tool_calls(tenant, new)

    def run_calls(
        self,
        tenant: str,
        outcome: str,
        inference_calls: int,
        tool_calls: int | None,
        link: SpanLink | None = None,
    ) -> None:
        """The run's model and tool calls (None: not known), recorded at its end."""
        if self._per_tenant:
            attrs = self._attrs(
                ("calls", tenant, outcome), tenant=tenant, agent=self._agent, outcome=outcome
            )
        else:
            attrs = self._calls.get(outcome) or self._outcome_attrs(outcome)
        self._sink(attrs, inference_calls, tool_calls, link)

    def _into_sdk(
        self,
        attrs: dict[str, Any],
        inference_calls: int,
        tool_calls: int | None,
        link: SpanLink | None = None,
    ) -> None:
        """Where the reader hook cannot serve them: the SDK's histograms, at collection."""
        if tool_calls is None:
            self._emitter.recorder.record(self._inference, inference_calls, attrs, link)
        else:
            self._record(self._inference, inference_calls, self._tools, tool_calls, attrs, link)

    def _outcome_attrs(self, outcome: str) -> dict[str, Any]:
        if len(self._calls) >= _CACHE_CAP:
            self._calls.clear()
        attrs = self._calls[outcome] = {_AGENT: self._agent, semconv.RUN_OUTCOME: outcome}
        return attrs


_KEYS: Final = {
    "tenant": semconv.TENANT_ID,
    "agent": semconv.GEN_AI_AGENT_NAME,
    "kind": semconv.LOOP_KIND,
    "outcome": semconv.RUN_OUTCOME,
}
