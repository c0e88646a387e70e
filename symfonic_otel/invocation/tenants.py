"""The tenant a framework names in a run's own metadata (below ``tenant_scope``, which wins)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = ["tenant_in"]

_TENANT_KEY: Final = "tenant_id"


def tenant_in(metadata: object) -> str | None:
    """The ``tenant_id`` of a framework's run metadata or state mapping, if it names one."""
    value = metadata.get(_TENANT_KEY) if isinstance(metadata, Mapping) else None
    return value if isinstance(value, str) and value else None
