"""Threads counting into one per-tenant store at once, with a snapshot taken beside them: every
increment is in the totals, new series included (the store's lock, not the interpreter's,
keeps a read-add-write and a series' creation whole)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from symfonic_otel import semconv
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenants import ActiveTenants

RUNS = semconv.AGENT_RUNS.name
THREADS, ADDS, TENANTS = 8, 16_000, 40


@pytest.fixture
def switch_often() -> Iterator[None]:
    # Switch threads every microsecond: a missing lock then loses increments in every run.
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


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
