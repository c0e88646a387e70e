"""Which raw tenant is in effect (scope, then the adapter's, then trusted baggage, then the
handler's default) and how it is made a safe label: an empty source is no source, and no value
can pose as a reserved label."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from opentelemetry import baggage, context

from symfonic_otel import tenant_scope
from symfonic_otel.emit.tenancy import resolve_tenant, sanitise_tenant


@contextmanager
def _baggage(value: str) -> Iterator[None]:
    token = context.attach(baggage.set_baggage("tenant.id", value))
    try:
        yield
    finally:
        context.detach(token)


def test_the_scope_beats_every_other_source() -> None:
    with tenant_scope("scoped"), _baggage("from-baggage"):
        assert resolve_tenant("adapter", default="dflt", from_baggage=True) == "scoped"


def test_the_adapter_tenant_beats_baggage_and_the_default() -> None:
    with _baggage("from-baggage"):
        assert resolve_tenant("adapter", default="dflt", from_baggage=True) == "adapter"


def test_baggage_is_read_only_when_trusted() -> None:
    with _baggage("from-baggage"):
        assert resolve_tenant(None, default="dflt", from_baggage=True) == "from-baggage"
        assert resolve_tenant(None, default="dflt") == "dflt"


def test_empty_sources_fall_through_to_the_next_one() -> None:
    with tenant_scope(""), _baggage(""):
        assert resolve_tenant("", default="dflt", from_baggage=True) == "dflt"
        assert resolve_tenant("", default="", from_baggage=True) is None


def test_a_non_string_adapter_tenant_is_ignored() -> None:
    assert resolve_tenant(42, default="dflt") == "dflt"


def test_the_scope_ends_with_its_block() -> None:
    with tenant_scope("outer"):
        with tenant_scope("inner"):
            assert resolve_tenant() == "inner"
        assert resolve_tenant() == "outer"
    assert resolve_tenant() is None


def test_the_scope_yields_its_tenant() -> None:
    with tenant_scope("acme") as tenant:
        assert tenant == "acme"


def test_a_non_string_scope_is_refused_with_its_type_named() -> None:
    message = r"tenant_scope\(tenant_id=\.\.\.\) takes a str, got int"
    with pytest.raises(TypeError, match=message), tenant_scope(7):  # type: ignore[arg-type]
        pass


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        (None, "unknown"),
        ("", "unknown"),
        ("\t \n", "unknown"),
        (123, "123"),
        ("a" * 64, "a" * 64),
        ("a" * 65, "a" * 64),
        ("a" * 63 + " tail", "a" * 63),  # cut at 64, then trimmed
        ("tab\there", "tab_here"),
        ("ünïcødé", "ünïcødé"),
        ("unknown", "tenant:unknown"),
        ("__overflow__", "tenant:__overflow__"),
        ("_OTHER", "tenant:_OTHER"),
        (" unknown ", "tenant:unknown"),
    ],
)
def test_a_raw_tenant_becomes_a_safe_label(raw: object, label: str) -> None:
    assert sanitise_tenant(raw) == label
