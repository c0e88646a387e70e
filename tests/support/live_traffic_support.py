"""Live tests' traffic and pages: agent rounds on a background thread, the tenants paged.

``traffic`` runs ``work`` in a loop (``pause_s`` apart) until the block ends, keeping the first
error for the test to assert on; ``paged`` lists the tenants of the given alerts in the given
states on a real Prometheus.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.prometheus_support import PrometheusServer


@contextmanager
def traffic(work: Callable[[], None], pause_s: float = 0.2) -> Iterator[list[BaseException]]:
    errors: list[BaseException] = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                work()
            except BaseException as exc:  # surfaced by the test, not lost in the thread
                errors.append(exc)
                return
            stop.wait(pause_s)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield errors
    finally:
        stop.set()
        thread.join(timeout=30)


def paged(prom: PrometheusServer, pages: set[str], states: tuple[str, ...]) -> set[str]:
    return {
        alert["labels"].get("tenant_id", "")
        for alert in prom.alerts()
        if alert["labels"].get("alertname") in pages and alert.get("state") in states
    }


def watch_pages(
    workdir: Path,
    port: int,
    rules: Path,
    pages: set[str],
    work: Callable[[], None],
    pause_s: float,
    bailers: set[str],
) -> tuple[set[str], set[str]]:
    """Run ``work`` as traffic scraped from ``port`` by a real Prometheus with ``rules`` until
    every tenant of ``bailers`` is paged; returns the tenants that fired and the ones that were
    ever pending or firing."""
    fired: set[str] = set()
    ever: set[str] = set()
    with (
        PrometheusServer(
            workdir / "prometheus", scrape_targets=[f"127.0.0.1:{port}"], rule_files=[rules]
        ) as prom,
        traffic(work, pause_s) as errors,
    ):
        assert prom.wait_for(lambda: prom.query("up == 1"), timeout_s=30), prom.log_tail()

        def all_fired() -> bool:
            ever.update(paged(prom, pages, ("pending", "firing")))
            fired.update(paged(prom, pages, ("firing",)))
            return errors != [] or bailers <= fired

        assert prom.wait_for(all_fired, timeout_s=120, interval_s=1.0), (
            f"fired: {sorted(fired)}; alerts: {prom.alerts()}"
        )
        assert errors == []
    return fired, ever
