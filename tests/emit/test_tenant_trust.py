"""The tenant trust model: no client can choose its tenant unless the application says so.

Baggage is taken from a real W3C ``baggage`` request header, extracted with OpenTelemetry's own
propagator, exactly as the HTTP server instrumentations do for every inbound request.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from opentelemetry import context
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.propagate import extract

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.testing.telemetry import InMemoryTelemetry


@contextmanager
def inbound_request(headers: dict[str, str]) -> Iterator[None]:
    """The context an HTTP server instrumentation attaches for a request with ``headers``."""
    token = context.attach(extract(headers))
    try:
        yield
    finally:
        context.detach(token)


def _run(handler: OTelCallbackHandler, run_id: str, *, tenant_id: str | None = None) -> str:
    """One run; returns the tenant its span and its metrics were recorded under."""
    handler.agent_start(AgentStartEvent("q", run_id), tenant_id=tenant_id)
    handler.agent_end(AgentEndEvent(run_id, "ok", 1.0, 1))
    return run_id


def _tenant_of(memory: InMemoryTelemetry, run_id: str) -> str:
    [span] = [
        s for s in memory.spans() if s.attributes and s.attributes.get(semconv.RUN_ID) == run_id
    ]
    assert span.attributes is not None
    return str(span.attributes[semconv.TENANT_ID])


def test_the_propagator_really_extracts_the_header() -> None:
    """The premise: a client header becomes baggage in the request context."""
    from opentelemetry import baggage

    with inbound_request({"baggage": "tenant.id=globex,other=1"}):
        assert baggage.get_baggage("tenant.id") == "globex"
    assert W3CBaggagePropagator().fields == {"baggage"}


def test_client_baggage_is_ignored_by_default(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(tenant_id="acme")
    with inbound_request({"baggage": "tenant.id=globex"}):
        _run(handler, "forged")
        _run(telemetry.handler(), "forged-no-default")
    assert _tenant_of(telemetry, "forged") == "acme"
    assert _tenant_of(telemetry, "forged-no-default") == "unknown"
    tenants = {a["tenant.id"] for a, _ in telemetry.points("symfonic.agent.runs")}
    assert "globex" not in tenants


def test_junk_baggage_cannot_push_real_tenants_into_overflow(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(max_tenants=3)
    for index in range(20):
        with inbound_request({"baggage": f"tenant.id=junk-{index}"}):
            _run(handler, f"junk-{index}")
    for tenant in ("acme", "initech"):
        with tenant_scope(tenant):
            _run(handler, tenant)
    assert _tenant_of(telemetry, "acme") == "acme"
    assert _tenant_of(telemetry, "initech") == "initech"


def test_trusted_baggage_ranks_between_explicit_sources_and_the_default(
    telemetry: InMemoryTelemetry,
) -> None:
    """``tenant_from_baggage=True``: scope > adapter tenant > baggage > handler default."""
    handler = telemetry.handler(tenant_id="default-co", tenant_from_baggage=True)
    _run(handler, "plain")
    with inbound_request({"baggage": "tenant.id=from-gateway"}):
        _run(handler, "baggage")
        _run(handler, "metadata", tenant_id="from-metadata")
        with tenant_scope("from-scope"):
            _run(handler, "scope", tenant_id="from-metadata")
    assert [_tenant_of(telemetry, run) for run in ("plain", "baggage", "metadata", "scope")] == [
        "default-co",
        "from-gateway",
        "from-metadata",
        "from-scope",
    ]


def test_an_empty_trusted_baggage_tenant_is_no_tenant(telemetry: InMemoryTelemetry) -> None:
    """Empty is no tenant, not a tenant called "": the handler default applies."""
    from opentelemetry import baggage

    handler = telemetry.handler(tenant_id="default-co", tenant_from_baggage=True)
    token = context.attach(baggage.set_baggage(semconv.BAGGAGE_TENANT_KEY, ""))
    try:
        _run(handler, "empty")
    finally:
        context.detach(token)
    assert _tenant_of(telemetry, "empty") == "default-co"


def test_adapter_tenant_beats_the_handler_default(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(tenant_id="default-co")
    _run(handler, "a", tenant_id="from-metadata")
    _run(handler, "b", tenant_id="")  # empty is no tenant, not a tenant called ""
    assert [_tenant_of(telemetry, r) for r in ("a", "b")] == ["from-metadata", "default-co"]


@pytest.mark.parametrize("reserved", ["__overflow__", "unknown", "_OTHER", "  unknown  "])
@pytest.mark.parametrize("source", ["scope", "metadata", "baggage", "default"])
def test_reserved_values_are_never_taken_verbatim(
    telemetry: InMemoryTelemetry, reserved: str, source: str
) -> None:
    handler = telemetry.handler(
        tenant_id=reserved if source == "default" else None, tenant_from_baggage=True
    )
    if source == "scope":
        with tenant_scope(reserved):
            _run(handler, "r")
    elif source == "metadata":
        _run(handler, "r", tenant_id=reserved)
    elif source == "baggage":
        with inbound_request({"baggage": f"tenant.id={reserved.strip()}"}):
            _run(handler, "r")
    else:
        _run(handler, "r")
    tenant = _tenant_of(telemetry, "r")
    assert tenant == f"tenant:{reserved.strip()}"
    assert tenant not in {"__overflow__", "unknown", "_OTHER"}


def test_calls_outside_a_run_use_the_same_trust_model(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(tenant_id="acme")
    with inbound_request({"baggage": "tenant.id=globex"}):
        handler.llm_end(LLMEndEvent(model="gpt-4o", output="x", usage={}))
        handler.llm_end(LLMEndEvent(model="gpt-4o", output="x", usage={}), tenant_id="initech")
    tenants = sorted(str((s.attributes or {})[semconv.TENANT_ID]) for s in telemetry.spans())
    assert tenants == ["acme", "initech"]


def test_tenant_from_baggage_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="tenant_from_baggage"):
        OTelCallbackHandler(tenant_from_baggage="yes")  # type: ignore[arg-type]
