"""The per-tenant store against a model: random records, tenants leaving and returning, and
collections by a delta and a cumulative reader, every point checked.

The model is a dict of totals per live series. One or two handlers' stores share the provider, each
with its own active tenants: a tenant idle for more than ``idle_s`` at a collection leaves that
store; a series goes once no store holds it, and one that comes back starts at zero. The delta
reader prefers delta for counters only and the cumulative one for counters only (each asks the
opposite of the other instrument kinds), so a store following another kind's temporality fails.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider, UpDownCounter
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    InMemoryMetricReader,
    NumberDataPoint,
    Sum,
)

from symfonic_otel import semconv
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenant_hub import hub_for
from symfonic_otel.emit.tenants import ActiveTenants

DELTA = AggregationTemporality.DELTA
CUMULATIVE = AggregationTemporality.CUMULATIVE
IDLE_S = 10.0
NAMES = (semconv.AGENT_RUNS.name, semconv.LLM_TOKENS.name)
TENANTS = ("acme", "globex")

Key = tuple[str, frozenset[tuple[str, Any]]]

record = st.tuples(
    st.just("record"),
    st.sampled_from((0, 0, 1)),  # which handler's store (two share the provider)
    st.sampled_from(TENANTS),
    st.sampled_from(NAMES),
    st.sampled_from(("a", "b")),
    st.integers(min_value=1, max_value=5),
)
wait = st.tuples(st.just("wait"), st.sampled_from((1.0, 6.0, IDLE_S, IDLE_S + 1)))
collect = st.tuples(st.just("collect"), st.sampled_from(("delta", "cumulative")))
operations = st.lists(st.one_of(record, record, wait, collect), min_size=1, max_size=40)


@dataclass
class Model:
    totals: dict[Key, float] = field(default_factory=dict)
    # (store, tenant) -> clock of its last count there.
    last_seen: dict[tuple[int, str], float] = field(default_factory=dict)
    # (store, series) -> [its total in that store, whether a collection has read it].
    parts: dict[tuple[int, Key], list[Any]] = field(default_factory=dict)
    # What the delta reader has been sent of each live series.
    sent: dict[Key, float] = field(default_factory=dict)
    # A series' start time as the cumulative reader saw it, and the lowest start of its next life.
    start: dict[Key, int] = field(default_factory=dict)
    floor: dict[Key, int] = field(default_factory=dict)
    delta_window_floor: int = 0  # taken before the previous delta collection
    # (store, series) -> a clock reading taken just after that store's part of it began.
    part_ns: dict[tuple[int, Key], int] = field(default_factory=dict)

    def record(self, store: int, tenant: str, key: Key, value: float, now: float) -> None:
        self.part_ns.setdefault((store, key), time.time_ns())
        self.totals[key] = self.totals.get(key, 0.0) + value
        self.parts.setdefault((store, key), [0.0, False])[0] += value
        self.last_seen[(store, tenant)] = now

    def expire(self, now: float) -> None:
        """A collection: a tenant idle in a store leaves that store, its parts with it.

        A part no collection read is never reported (as a tenant's counts are when it leaves
        before any collection); one that was read stays in its series' sum. The series goes once
        no store holds it.
        """
        gone = {held for held, seen in self.last_seen.items() if now - seen > IDLE_S}
        for held in gone:
            del self.last_seen[held]
        for (store, key), (total, read) in list(self.parts.items()):
            if (store, dict(key[1])[semconv.TENANT_ID]) not in gone:
                continue
            del self.parts[(store, key)]
            del self.part_ns[(store, key)]
            if not read:
                self.totals[key] -= total
        for part in self.parts.values():
            part[1] = True
        live = {key for _, key in self.parts}
        for key in [key for key in self.totals if key not in live]:
            del self.totals[key]
            self.sent.pop(key, None)
            self.start.pop(key, None)
            self.floor[key] = -1  # set after the collection that dropped it (below)


def _points(reader: InMemoryMetricReader, temporality: AggregationTemporality) -> dict[Key, Any]:
    found: dict[Key, NumberDataPoint] = {}
    data = reader.get_metrics_data()
    for resource_metrics in data.resource_metrics if data else ():
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name not in NAMES:
                    continue
                assert isinstance(metric.data, Sum) and metric.data.is_monotonic
                assert metric.data.aggregation_temporality is temporality, metric.name
                for point in metric.data.data_points:
                    key = (metric.name, frozenset(point.attributes.items()))
                    assert key not in found, f"{key} twice in one collection"
                    found[key] = point
    return found


def _check_cumulative(model: Model, points: dict[Key, NumberDataPoint]) -> None:
    assert {key: p.value for key, p in points.items()} == model.totals
    for key, point in points.items():
        assert point.start_time_unix_nano <= point.time_unix_nano
        known = model.start.setdefault(key, point.start_time_unix_nano)
        assert point.start_time_unix_nano == known, f"{key}: start moved within one life"
        assert point.start_time_unix_nano > model.floor.get(key, -1), f"{key}: start not new"
        # Counting since its oldest live part began: a later part's start would date counts
        # the series already holds after they happened.
        began = min(ns for (_, held), ns in model.part_ns.items() if held == key)
        assert point.start_time_unix_nano <= began, f"{key}: start after its counts"


def _check_delta(model: Model, points: dict[Key, NumberDataPoint], before: int) -> None:
    assert set(points) <= set(model.totals), "a point for a series that is gone"
    for key, total in model.totals.items():
        point = points.get(key)
        sent = model.sent.get(key, 0.0)
        if point is None:
            assert sent == total, f"{key}: {total - sent} never sent"
            continue
        assert point.value > 0, f"{key}: delta {point.value}"
        assert sent + point.value == total, f"{key}: sent {sent} + {point.value} != {total}"
        model.sent[key] = total
        # The window starts where the previous collection's ended (or the series began).
        assert model.delta_window_floor <= point.start_time_unix_nano <= point.time_unix_nano
        assert point.start_time_unix_nano > model.floor.get(key, -1)
    model.delta_window_floor = before


# A tenant that leaves at the other reader's collection and returns before the next delta one,
# with a total lower than, equal to and higher than its last life's.
RETURNS = [
    [
        ("record", 0, "acme", NAMES[0], "a", 3),
        ("collect", "delta"),
        ("wait", IDLE_S + 1),
        ("collect", "cumulative"),
        ("record", 0, "acme", NAMES[0], "a", value),
    ]
    for value in (1, 3, 5)
]
# The same, then two more delta collections, one after a new count and one after none: each
# sends only what is new since the previous one, in the series' new life.
RETURNS_THEN_DELTAS = [
    *RETURNS[1],
    ("collect", "delta"),
    ("record", 0, "acme", NAMES[0], "a", 2),
    ("collect", "delta"),
    ("collect", "delta"),
]
# The tenant goes idle in one handler while it keeps counting in the other: the sum keeps what
# the idle one had counted, under the same start time.
IDLE_IN_ONE = [
    ("record", 0, "acme", NAMES[0], "a", 5),
    ("record", 1, "acme", NAMES[0], "a", 3),
    ("collect", "delta"),
    ("collect", "cumulative"),
    ("wait", 8.0),
    ("record", 0, "acme", NAMES[0], "a", 1),
    ("wait", 4.0),
    ("collect", "delta"),
    ("collect", "cumulative"),
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations, st.sampled_from((1, 2)))
@example(RETURNS[0], 1)
@example(RETURNS[1], 1)
@example(RETURNS[2], 1)
@example(RETURNS[0], 2)
@example(RETURNS_THEN_DELTAS, 1)
@example(RETURNS_THEN_DELTAS, 2)
@example(IDLE_IN_ONE, 2)
def test_every_point_of_both_readers_matches_the_model(
    ops: list[tuple[Any, ...]], handlers: int
) -> None:
    clock = [0.0]
    delta = InMemoryMetricReader(
        preferred_temporality={Counter: DELTA, Histogram: CUMULATIVE, UpDownCounter: CUMULATIVE}
    )
    cumulative = InMemoryMetricReader(
        preferred_temporality={Counter: CUMULATIVE, Histogram: DELTA, UpDownCounter: DELTA}
    )
    provider = MeterProvider(metric_readers=[delta, cumulative])
    stores = [
        TenantCounters(ActiveTenants(max_tenants=100, idle_s=IDLE_S, clock=lambda: clock[0]), 10)
        for _ in range(handlers)
    ]
    for store in stores:
        hub_for(provider).add_store(store)
    model = Model()
    try:
        for op in [*ops, ("collect", "delta"), ("collect", "cumulative")]:
            if op[0] == "record":
                _, index, tenant, name, variant, value = op
                index %= handlers
                attributes = {semconv.TENANT_ID: tenant, "variant": variant}
                stores[index].add(name, tenant, attributes, value)
                model.record(index, tenant, (name, frozenset(attributes.items())), value, clock[0])
            elif op[0] == "wait":
                clock[0] += op[1]
            elif op[1] == "delta":
                model.expire(clock[0])
                before = time.time_ns()
                _check_delta(model, _points(delta, DELTA), before)
            else:
                model.expire(clock[0])
                _check_cumulative(model, _points(cumulative, CUMULATIVE))
            if op[0] == "collect":
                after = time.time_ns()
                for key, floor in model.floor.items():
                    if floor == -1:
                        model.floor[key] = after
        # Every count reached the delta reader exactly once.
        assert model.sent == model.totals
    finally:
        provider.shutdown()
