"""OpenTelemetry traces and metrics for LLM agents: silent bails, synthesis fallbacks, tenants."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from symfonic_otel._version import __version__
from symfonic_otel.emit.pricing import ModelPrice
from symfonic_otel.emit.tenancy import tenant_scope
from symfonic_otel.handler import OTelCallbackHandler

if TYPE_CHECKING:
    from symfonic_otel.export.setup import configure_telemetry
    from symfonic_otel.langchain import LangChainCallbackHandler

__all__ = [
    "LangChainCallbackHandler",
    "ModelPrice",
    "OTelCallbackHandler",
    "__version__",
    "configure_telemetry",
    "tenant_scope",
]


def __getattr__(name: str) -> Any:
    # Imported on first use: the LangChain adapter and the SDK setup pull in more than the core
    # handler needs.
    if name == "LangChainCallbackHandler":
        from symfonic_otel.langchain import LangChainCallbackHandler

        return LangChainCallbackHandler
    if name == "configure_telemetry":
        from symfonic_otel.export.setup import configure_telemetry

        return configure_telemetry
    raise AttributeError(f"module 'symfonic_otel' has no attribute {name!r}")
