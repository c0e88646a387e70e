"""The ``gen_ai.agent.name`` label from the framework's own agent names, a bounded set.

An adapter or the span processor knows each run's agent (``researcher``, ``triage``): its
counters carry that name, so an operator with several agents sees which one bails. Names are
sanitised and admitted first come, first served, up to ``MAX_AGENT_NAMES`` per handler; later
names fold into ``_OTHER``. A run whose framework gives no name keeps the handler's
``agent_name``. Each name is a view of the handler's one ``MetricEmitter``: the same instruments,
tenant counters and label caps, labelled with that name (``budget.series_budget`` counts them).
"""

from __future__ import annotations

import threading
from typing import Any

from symfonic_otel import semconv
from symfonic_otel.emit import metric_attrs
from symfonic_otel.emit.labels import BoundedLabels
from symfonic_otel.emit.loop_metrics import LoopMetrics
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.emit.vocabulary import MAX_AGENT_NAMES, OTHER, label_or_other

__all__ = ["AgentEmitters"]

# Tenants a name's view remembers having seeded; past it, the memory starts over (seeding a
# tenant again adds zero to series it has: harmless).
_SEEDED_CAP = 4096


class _NamedEmitter(MetricEmitter):
    """The handler's emitter, labelled with another agent name."""

    def __init__(self, base: MetricEmitter, agent_name: str) -> None:  # no new instruments
        self.__dict__.update(base.__dict__)
        self._attrs = metric_attrs.AgentAttrs(agent_name)
        self.agent_attrs = {semconv.GEN_AI_AGENT_NAME: agent_name}
        self._cache: dict[tuple[object, ...], dict[str, Any]] = {}
        self._seeded: set[str] = set()
        self.loops = LoopMetrics(self)  # its own loop series, under this name

    def seed_tenant(self, tenant: str) -> None:
        """The tenant's zero series under this name, once per tenant (the handler's own check
        knows the tenant, not the names it ran under)."""
        # Seeding again only adds zero (the checks save the work), and the cap bounds memory
        # one entry either way: no series tells these mutations apart.
        if tenant in self._seeded and self.counters.knows(tenant):  # pragma: no mutate: see above
            return
        if len(self._seeded) >= _SEEDED_CAP:  # pragma: no mutate: see above
            self._seeded.clear()
        self._seeded.add(tenant)
        self._seed(tenant)


class AgentEmitters:
    """``emitters(name)``: the emitter whose series carry the agent ``name`` (bounded)."""

    __slots__ = ("_default", "_labels", "_lock", "_views")

    def __init__(self, emitter: MetricEmitter, cap: int = MAX_AGENT_NAMES) -> None:
        default = emitter.agent_attrs[semconv.GEN_AI_AGENT_NAME]
        self._default = emitter
        self._labels = BoundedLabels(cap, OTHER, label_or_other, always=(default,))
        self._views: dict[str, MetricEmitter] = {default: emitter}
        self._lock = threading.Lock()

    def __call__(self, name: object) -> MetricEmitter:
        if name is None or (isinstance(name, str) and not name.strip()):
            return self._default
        label = self._labels(name)
        view = self._views.get(label)  # pragma: no mutate: the locked lookup finds the same view
        if view is None:
            with self._lock:
                view = self._views.get(label)
                if view is None:
                    view = self._views[label] = _NamedEmitter(self._default, label)
        return view

    @property
    def default(self) -> MetricEmitter:
        return self._default

    def names(self) -> list[str]:
        """The agent labels in use (the handler's default first)."""
        return list(self._views)
