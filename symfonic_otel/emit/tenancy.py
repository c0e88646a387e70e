"""Which tenant a run belongs to, and why no client can forge it by default.

Resolution happens once, at AgentStart, from the most trusted source that has a value:

1. ``tenant_scope(...)`` — set by the application around the agent call;
2. the tenant the adapter was given for the run (LangChain ``metadata["tenant_id"]``), also set
   by the application;
3. OpenTelemetry baggage ``tenant.id`` — only when the handler is built with
   ``tenant_from_baggage=True``. Baggage arrives in request headers, which any client can write,
   and OTel's HTTP server instrumentations extract it automatically: trust it only behind a
   gateway that sets it and strips what clients send;
4. the handler's ``tenant_id``;
5. ``"unknown"``.

Values are sanitised, and a value equal to one of the package's reserved labels is prefixed, so
a caller can never pose as the overflow bucket or as "no tenant".
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from opentelemetry import baggage

from symfonic_otel import semconv

MAX_TENANT_LENGTH: Final = 64
RESERVED_PREFIX: Final = "tenant:"
RESERVED_TENANTS: Final = frozenset(
    {semconv.OVERFLOW_VALUE, semconv.TENANT_UNKNOWN, semconv.OTHER_VALUE}
)

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


def resolve_tenant(
    explicit: object = None, *, default: str | None = None, from_baggage: bool = False
) -> str | None:
    """The raw tenant in effect here, before sanitising (see the module docstring's order)."""
    scoped = _scoped_tenant.get()
    if scoped:
        return scoped
    if isinstance(explicit, str) and explicit:
        return explicit
    if from_baggage:
        value = baggage.get_baggage(semconv.BAGGAGE_TENANT_KEY)
        if isinstance(value, str) and value:
            return value
    return default or None


def sanitise_tenant(raw: object) -> str:
    """Printable, trimmed, at most 64 characters; reserved values prefixed; empty is ``unknown``."""
    if raw is None:
        return semconv.TENANT_UNKNOWN
    text = raw if isinstance(raw, str) else str(raw)  # pragma: no mutate: callers pass str/None
    text = text[: MAX_TENANT_LENGTH * 4].strip()
    if not (text.isascii() and text.isprintable()):
        text = "".join(ch if ch.isprintable() else "_" for ch in text)
    cleaned = text[:MAX_TENANT_LENGTH].strip()
    if not cleaned:
        return semconv.TENANT_UNKNOWN
    if cleaned in RESERVED_TENANTS:
        return f"{RESERVED_PREFIX}{cleaned}"
    return cleaned
