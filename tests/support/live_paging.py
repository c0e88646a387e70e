"""One live paging check's setup: the shipped silent-bail pages and rules (windows shortened),
telemetry with a Prometheus endpoint and a handler on it, and watching a real Prometheus page
the bailing tenants while work runs, and the framework live tests' one check: the page fires
for the capped tenant and never for its neighbour. The framework environments import this too
(it needs pytest, yaml and the package)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from symfonic_otel import OTelCallbackHandler
from symfonic_otel.export.handle import Telemetry
from symfonic_otel.export.setup import configure_telemetry
from tests.support.fleet_support import RULES, shortened_rules, silent_bail_pages
from tests.support.live_traffic_support import watch_pages
from tests.support.prometheus_support import require_binary

FACTOR = 30  # 1h -> 2 min, 5m -> 10 s, `for: 2m` -> 4 s
PAUSE_S = 0.2
BAILER, STEADY = "capped-tenant", "steady-tenant"


@dataclass(frozen=True)
class LivePaging:
    workdir: Path
    pages: set[str]
    rules: Path
    telemetry: Telemetry
    handler: OTelCallbackHandler

    def watch(
        self, work: Callable[[], None], pause_s: float, bailers: set[str]
    ) -> tuple[set[str], set[str]]:
        """``watch_pages`` on this setup: the tenants that fired, and those ever pending or
        firing, once every tenant of ``bailers`` is paged."""
        port = self.telemetry.prometheus_port or 0
        return watch_pages(self.workdir, port, self.rules, self.pages, work, pause_s, bailers)


@contextmanager
def live_paging(
    tmp_path: Path, factor: float, rules_name: str = "symfonic-rules.live.yml"
) -> Iterator[LivePaging]:
    """Skips without a ``prometheus`` binary; shuts the telemetry down at the end."""
    require_binary("prometheus")
    pages = set(silent_bail_pages(yaml.safe_load(RULES.read_text())))
    assert pages, "no shipped alert pages on the silent-bail rate"
    rules = tmp_path / rules_name
    rules.write_text(shortened_rules(RULES.read_text(), factor=factor))
    telemetry = configure_telemetry(set_global=False, otlp=False, prometheus_port=0)
    handler = OTelCallbackHandler(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    try:
        yield LivePaging(tmp_path, pages, rules, telemetry, handler)
    finally:
        telemetry.shutdown(timeout_millis=5_000)


def assert_pages_the_bailer_only(
    tmp_path: Path, rounds: Callable[[OTelCallbackHandler], Callable[[], None]]
) -> None:
    """Repeats the round ``rounds(handler)`` builds (tenant ``BAILER`` capped, ``STEADY``
    answering) until ``BAILER`` is paged; ``STEADY`` is never pending nor firing."""
    with live_paging(tmp_path, FACTOR) as live:
        fired, ever = live.watch(rounds(live.handler), PAUSE_S, {BAILER})
    assert BAILER in fired
    assert STEADY not in ever
