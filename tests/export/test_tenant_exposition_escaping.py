"""The per-tenant exposition through the strict parsers: hostile label values come back exactly,
and every series is rendered once whatever its place against a chunk's boundary.

Each character the formats escape (backslash, double quote, newline) sits at the start and at the
end of a value, alone and beside the others; unicode and text that looks like an escape sequence
too. The OpenMetrics text goes through prometheus_client's OpenMetrics parser (which rejects any
malformed line), the classic text through its text parser.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from prometheus_client.parser import text_string_to_metric_families as parse_text

from symfonic_otel import semconv
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenant_hub import hub_for
from symfonic_otel.emit.tenants import ActiveTenants
from symfonic_otel.export import tenant_exposition
from symfonic_otel.export.tenant_exposition import TenantExposition

FAMILY = "symfonic_react_silent_bails"
HOSTILE = [
    *(f"{c}acme" for c in ("\\", '"', "\n")),
    *(f"acme{c}" for c in ("\\", '"', "\n")),
    '\\"\n',
    "\n\\",
    "\\\\",
    "\\n",  # a backslash then an n: not a newline
    'a"b\\c\nd',
    "tenant-ü-租户-🚀",
    " ",
    "",
]


def _render(values: list[str], openmetrics: bool, *, exemplars: bool = True) -> str:
    provider = MeterProvider()
    store = TenantCounters(ActiveTenants(max_tenants=10_000), detail_cap=10)
    hub = hub_for(provider)
    hub.add_store(store)
    try:
        for index, value in enumerate(values):
            link = (index + 1, index + 1) if exemplars else None
            attributes = {semconv.TENANT_ID: value, "reason": value[::-1]}
            store.add(semconv.SILENT_BAILS.name, value, attributes, index + 1, link=link)
        text = "".join(TenantExposition(hub).chunks(openmetrics))
    finally:
        provider.shutdown()
    return text + "# EOF\n" if openmetrics else text


def _samples(text: str, openmetrics: bool) -> dict[str, tuple[float, object]]:
    families = list((parse_om if openmetrics else parse_text)(text))
    found: dict[str, tuple[float, object]] = {}
    for family in families:
        for sample in family.samples:
            assert sample.name == f"{FAMILY}_total"
            tenant = sample.labels["tenant_id"]
            assert sample.labels["reason"] == tenant[::-1]
            assert tenant not in found, f"{tenant!r} twice"
            found[tenant] = (sample.value, sample.exemplar)
    return found


@pytest.mark.parametrize("openmetrics", [False, True], ids=["text", "openmetrics"])
def test_hostile_label_values_come_back_exactly(openmetrics: bool) -> None:
    found = _samples(_render(HOSTILE, openmetrics), openmetrics)
    assert {tenant: value for tenant, (value, _) in found.items()} == {
        tenant: index + 1 for index, tenant in enumerate(HOSTILE)
    }
    if openmetrics:  # each exemplar on its own series: the span id is the series' index + 1
        for index, tenant in enumerate(HOSTILE):
            exemplar = found[tenant][1]
            assert exemplar is not None
            assert exemplar.labels["span_id"] == f"{index + 1:016x}"  # type: ignore[attr-defined]


@pytest.mark.parametrize("openmetrics", [False, True], ids=["text", "openmetrics"])
@pytest.mark.parametrize("offset", [-1, 0, 1], ids=["one-under", "at", "one-over"])
def test_every_series_once_at_a_chunk_boundary(
    monkeypatch: pytest.MonkeyPatch, openmetrics: bool, offset: int
) -> None:
    monkeypatch.setattr(tenant_exposition, "CHUNK_LINES", 4)
    for chunks in (1, 2):
        tenants = [f"t{index}" for index in range(4 * chunks + offset)]
        found = _samples(_render(tenants, openmetrics, exemplars=False), openmetrics)
        assert sorted(found) == sorted(tenants)


def test_a_label_key_that_appears_later_reaches_the_lines_rendered_before() -> None:
    provider = MeterProvider()
    store = TenantCounters(ActiveTenants(), detail_cap=10)
    hub = hub_for(provider)
    hub.add_store(store)
    exposition = TenantExposition(hub)
    try:
        store.add(semconv.SILENT_BAILS.name, "acme", {semconv.TENANT_ID: "acme"}, 1)
        first = _label_sets("".join(exposition.chunks(False)))
        store.add(semconv.SILENT_BAILS.name, "globex", {semconv.TENANT_ID: "globex", "x": "1"}, 1)
        second = _label_sets("".join(exposition.chunks(False)))
    finally:
        provider.shutdown()
    assert [labels.get("x") for labels in first] == [None]
    # Every series of a family carries every label key of the family, as the exporter renders.
    assert sorted(labels["x"] for labels in second) == ["", "1"]


def _label_sets(text: str) -> list[dict[str, str]]:
    return [sample.labels for family in parse_text(text) for sample in family.samples]


def test_a_second_scrape_shows_changed_totals_and_exemplars_in_seconds() -> None:
    """Lines are cached between scrapes: a changed total (fractional, as costs are) must show,
    under a label value with spaces, and the exemplar's timestamp is in seconds."""
    provider = MeterProvider()
    store = TenantCounters(ActiveTenants(), detail_cap=10)
    hub = hub_for(provider)
    hub.add_store(store)
    exposition = TenantExposition(hub)
    tenant = "a b c"
    attributes = {semconv.TENANT_ID: tenant, "reason": tenant[::-1]}
    name = semconv.SILENT_BAILS.name
    try:
        before = time.time()
        store.add(name, tenant, attributes, 1.25, link=(7, 7))
        first = _samples("".join(exposition.chunks(True)) + "# EOF\n", True)
        store.add(name, tenant, attributes, 2.5, link=(8, 8))
        second = _samples("".join(exposition.chunks(True)) + "# EOF\n", True)
        third = _samples("".join(exposition.chunks(True)) + "# EOF\n", True)  # unchanged
        text = _samples("".join(exposition.chunks(False)), False)
        after = time.time()
    finally:
        provider.shutdown()
    assert [found[tenant][0] for found in (first, second, third, text)] == [1.25, 3.75, 3.75, 3.75]
    exemplar: Any = second[tenant][1]
    assert exemplar.labels["span_id"] == f"{8:016x}" and exemplar.value == 2.5
    assert before <= float(exemplar.timestamp) <= after
