"""Two scrapes of the endpoint at once: the second waits for the first (the scrape lock covers
the per-tenant rendering too, whose family table and line cache one scrape at a time owns), so
every series keeps its labels in every later scrape.

The interleaving is forced: the first scrape is paused just before it makes a counter's family,
while the second scrape runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client import CollectorRegistry

from symfonic_otel import semconv
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenant_hub import hub_for
from symfonic_otel.emit.tenants import ActiveTenants
from symfonic_otel.export.prometheus import PrometheusEndpoint
from symfonic_otel.export.tenant_exposition import TenantExposition
from tests.support.paused_section import PausedBefore

BAILS = semconv.SILENT_BAILS.name


@pytest.fixture
def served() -> Iterator[tuple[TenantCounters, PrometheusEndpoint]]:
    provider = MeterProvider()
    store = TenantCounters(ActiveTenants(), detail_cap=10)
    hub_for(provider).add_store(store)
    endpoint = PrometheusEndpoint(CollectorRegistry(auto_describe=False))
    endpoint.bind(hub_for(provider))
    yield store, endpoint
    provider.shutdown()


def _scrape(endpoint: PrometheusEndpoint) -> str:
    return b"".join(endpoint.scrape(True)).decode()


def _bail_tenants(text: str) -> list[str | None]:
    """The tenant label of each silent-bail line (None where a line has none)."""
    lines = [line for line in text.splitlines() if line.startswith("symfonic_react_silent_bails")]
    found = [re.search(r'[{,]tenant_id="([^"]*)"', line) for line in lines]
    return sorted((m.group(1) if m else None for m in found), key=str)


def test_a_scrape_during_another_leaves_every_series_its_labels(
    served: tuple[TenantCounters, PrometheusEndpoint],
) -> None:
    store, endpoint = served
    for tenant in ("acme", "globex"):
        store.add(BAILS, tenant, {semconv.TENANT_ID: tenant, "reason": "no_text"}, 1)
    first = PausedBefore(TenantExposition.chunks, "family = self._families[spec.name]")
    with first.start(_scrape, endpoint):
        second = _scrape(endpoint)
        first_text = first.finish()
    later = _scrape(endpoint)
    for text in (first_text, second, later):
        assert _bail_tenants(text) == ["acme", "globex"], text
