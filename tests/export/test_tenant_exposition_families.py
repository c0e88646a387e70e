"""What each format of the per-tenant exposition carries: the classic text never an exemplar
(its grammar has none; only OpenMetrics puts one after a value), a counter with no series no
family at all (no HELP / TYPE lines of its own), and a family whose label keys grow renders
every line already rendered again with the new key (empty), as the OTel Prometheus exporter
renders them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from prometheus_client.parser import text_string_to_metric_families

from symfonic_otel import semconv
from symfonic_otel.emit.tenant_counters import TenantCounters
from symfonic_otel.emit.tenant_hub import hub_for
from symfonic_otel.emit.tenants import ActiveTenants
from symfonic_otel.export.tenant_exposition import TenantExposition

TRACE_ID, SPAN_ID = 0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331
BAILS = {semconv.TENANT_ID: "acme", "reason": "tool_calls_with_no_text"}
TENANTS = ("acme", "globex", "initech")


@pytest.fixture
def store() -> TenantCounters:
    return TenantCounters(ActiveTenants(), detail_cap=10)


@pytest.fixture
def exposition(store: TenantCounters) -> Iterator[TenantExposition]:
    provider = MeterProvider()
    hub = hub_for(provider)
    hub.add_store(store)
    yield TenantExposition(hub)
    provider.shutdown()


def _text(exposition: TenantExposition, openmetrics: bool) -> str:
    return "".join(exposition.chunks(openmetrics))


def test_only_openmetrics_puts_the_exemplar_after_the_value(
    store: TenantCounters, exposition: TenantExposition
) -> None:
    store.add(semconv.SILENT_BAILS.name, "acme", BAILS, 1, link=(TRACE_ID, SPAN_ID))
    [classic] = [line for line in _text(exposition, False).splitlines() if "acme" in line]
    [open_metrics] = [line for line in _text(exposition, True).splitlines() if "acme" in line]
    assert classic.endswith("} 1.0")
    assert "#" not in classic
    assert open_metrics.startswith(classic + " # {")
    assert f'trace_id="{TRACE_ID:032x}"' in open_metrics


@pytest.mark.parametrize("openmetrics", [False, True])
def test_a_counter_without_series_has_no_family_lines(
    store: TenantCounters, exposition: TenantExposition, openmetrics: bool
) -> None:
    store.add(semconv.SILENT_BAILS.name, "acme", BAILS, 1)
    text = _text(exposition, openmetrics)
    types = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")]
    assert [name.removesuffix("_total") for name in types] == ["symfonic_react_silent_bails"]
    store.drop("acme")  # the tenant went idle: its families go with its series
    assert _text(exposition, openmetrics) == ""


def _label_sets(exposition: TenantExposition) -> dict[str, dict[str, str]]:
    text = "".join(exposition.chunks(False))
    [family] = list(text_string_to_metric_families(text))
    return {sample.labels["tenant_id"]: sample.labels for sample in family.samples}


def test_every_rendered_line_takes_a_key_that_arrives_later(
    store: TenantCounters, exposition: TenantExposition
) -> None:
    for tenant in TENANTS:
        store.add(semconv.SILENT_BAILS.name, tenant, {semconv.TENANT_ID: tenant}, 1)
    before = _label_sets(exposition)
    assert all("reason" not in labels for labels in before.values())

    store.add(
        semconv.SILENT_BAILS.name,
        "hooli",
        {semconv.TENANT_ID: "hooli", "reason": "tool_calls_with_no_text"},
        1,
    )
    after = _label_sets(exposition)

    assert sorted(after) == sorted([*TENANTS, "hooli"])
    keys = {tenant: sorted(labels) for tenant, labels in after.items()}
    assert all(found == keys["hooli"] for found in keys.values()), keys
    assert [after[tenant]["reason"] for tenant in TENANTS] == ["", "", ""]
    assert after["hooli"]["reason"] == "tool_calls_with_no_text"
