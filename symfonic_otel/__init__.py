"""OpenTelemetry traces and metrics for LLM agents: silent bails, synthesis fallbacks, tenants."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any, Final

from symfonic_otel._version import __version__

if TYPE_CHECKING:
    from symfonic_otel.emit.pricing import ModelPrice
    from symfonic_otel.emit.tenancy import tenant_scope
    from symfonic_otel.export.retention import OutcomeRetentionSpanProcessor
    from symfonic_otel.export.setup import configure_telemetry
    from symfonic_otel.export.trace_exemplars import KeptTraceExemplarFilter
    from symfonic_otel.handler import OTelCallbackHandler
    from symfonic_otel.langchain import LangChainCallbackHandler
    from symfonic_otel.spans import SilentBailSpanProcessor

__all__ = [
    "KeptTraceExemplarFilter",
    "LangChainCallbackHandler",
    "ModelPrice",
    "OTelCallbackHandler",
    "OutcomeRetentionSpanProcessor",
    "SilentBailSpanProcessor",
    "__version__",
    "configure_telemetry",
    "tenant_scope",
]

# Each public name is imported on first use, so ``import symfonic_otel`` (and the CLI, whose
# first import it is) costs next to nothing: the handler, the LangChain adapter and the SDK
# setup load only when asked for, and a Ctrl-C right after ``symfonic-otel`` starts lands in
# code that handles it rather than in a module import.
_PUBLIC: Final = {
    "KeptTraceExemplarFilter": "symfonic_otel.export.trace_exemplars",
    "LangChainCallbackHandler": "symfonic_otel.langchain",
    "ModelPrice": "symfonic_otel.emit.pricing",
    "OTelCallbackHandler": "symfonic_otel.handler",
    "OutcomeRetentionSpanProcessor": "symfonic_otel.export.retention",
    "SilentBailSpanProcessor": "symfonic_otel.spans",  # needs the SDK's SpanProcessor
    "configure_telemetry": "symfonic_otel.export.setup",
    "tenant_scope": "symfonic_otel.emit.tenancy",
}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'symfonic_otel' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
