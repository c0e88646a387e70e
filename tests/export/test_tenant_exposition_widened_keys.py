"""A family's label keys grow when a series with a new key arrives: every line already rendered
is rendered again with that key (empty), not only some of them, so each series of the family
carries the same labels, as the OTel Prometheus exporter renders them."""

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
