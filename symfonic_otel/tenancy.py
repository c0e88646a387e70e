"""Which tenant a run belongs to: ``tenant_scope`` > baggage ``tenant.id`` > handler default."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import baggage

from symfonic_otel import semconv

MAX_TENANT_LENGTH = 64

_scoped_tenant: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "symfonic_otel_tenant", default=None
)


@contextmanager
def tenant_scope(tenant_id: str) -> Iterator[str]:
    """Attribute every agent run started inside the block to ``tenant_id``.

    Works across ``await`` and in threads started with ``contextvars.copy_context``. The value is
    sanitised when a run starts, not here, so the scope itself never fails.
    """
    if not isinstance(tenant_id, str):
        raise TypeError(f"tenant_scope(tenant_id=...) takes a str, got {type(tenant_id).__name__}")
    token = _scoped_tenant.set(tenant_id)
    try:
        yield tenant_id
    finally:
        _scoped_tenant.reset(token)


def current_tenant(default: str | None = None) -> str | None:
    """The raw tenant in effect here, before sanitising: scope, then baggage, then default."""
    scoped = _scoped_tenant.get()
    if scoped:
        return scoped
    from_baggage = baggage.get_baggage(semconv.BAGGAGE_TENANT_KEY)
    if from_baggage:
        return str(from_baggage)
    return default


def sanitise_tenant(raw: object) -> str:
    """Printable, trimmed, at most 64 characters; anything unusable becomes ``unknown``."""
    if raw is None:
        return semconv.TENANT_UNKNOWN
    text = raw if isinstance(raw, str) else str(raw)
    cleaned = "".join(ch if ch.isprintable() else "_" for ch in text.strip())
    cleaned = cleaned[:MAX_TENANT_LENGTH].strip()
    return cleaned or semconv.TENANT_UNKNOWN
