"""Threads counting into one per-tenant store at once, with a snapshot taken beside them: every
increment is in the totals, new series included (the store's lock, not the interpreter's,
keeps a read-add-write and a series' creation whole); new tenants admitted at once never take
more slots than the cap."""

from __future__ import annotations

import threading

from symfonic_otel import semconv
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenants import ActiveTenants

RUNS = semconv.AGENT_RUNS.name
THREADS, ADDS, TENANTS = 8, 16_000, 40


def test_threads_counting_and_snapshotting_at_once_lose_no_increment(switch_often: None) -> None:
    store = TenantCounters(ActiveTenants(), TENANTS)
    start = threading.Barrier(THREADS + 1)
    done = threading.Event()

    def count() -> None:
        start.wait()
        for i in range(ADDS):
            tenant = f"t{i % TENANTS}"  # each tenant's first count races the other threads'
            store.add(RUNS, tenant, {semconv.TENANT_ID: tenant}, 1)

    failures: list[BaseException] = []

    def snapshot() -> None:
        start.wait()
        while not done.is_set():
            try:
                store.snapshot(RUNS)
            except Exception as exc:  # a series created under the snapshot's feet
                failures.append(exc)
                return

    workers = [threading.Thread(target=count) for _ in range(THREADS)]
    reader = threading.Thread(target=snapshot)
    for thread in (*workers, reader):
        thread.start()
    for thread in workers:
        thread.join()
    done.set()
    reader.join()

    assert failures == []
    totals = {s.attributes[semconv.TENANT_ID]: s.total for s in store.snapshot(RUNS)}
    assert len(totals) == TENANTS
    assert totals == {f"t{i}": THREADS * ADDS / TENANTS for i in range(TENANTS)}


def test_new_tenants_arriving_at_once_at_the_cap_never_take_more_than_the_cap(
    switch_often: None,
) -> None:
    """The tenant label's cardinality bound holds under a burst: of 16 new tenants admitted at
    once with 5 slots, exactly 5 get a slot and the rest are ``__overflow__``, round after
    round."""
    cap, arriving, rounds = 5, 16, 1500
    slots = [ActiveTenants(cap) for _ in range(rounds)]
    labels: list[list[str]] = [[] for _ in range(rounds)]
    start = threading.Barrier(arriving)

    def admit(worker: int) -> None:
        for round_ in range(rounds):
            start.wait()
            labels[round_].append(slots[round_](f"t{worker}"))

    threads = [threading.Thread(target=admit, args=(n,)) for n in range(arriving)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    admitted = [[x for x in round_ if x != semconv.OVERFLOW_VALUE] for round_ in labels]
    assert [len(round_) for round_ in admitted if len(round_) != cap] == []
