"""Test helpers for users' own tests and ours: a scripted chat model and in-memory telemetry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from symfonic_otel.testing.scripted import ScriptedChatModel
    from symfonic_otel.testing.telemetry import InMemoryTelemetry

__all__ = ["InMemoryTelemetry", "ScriptedChatModel"]


def __getattr__(name: str) -> Any:
    # Lazy: the chat model needs langchain-core, the telemetry helper the OTel SDK.
    if name == "ScriptedChatModel":
        from symfonic_otel.testing.scripted import ScriptedChatModel

        return ScriptedChatModel
    if name == "InMemoryTelemetry":
        from symfonic_otel.testing.telemetry import InMemoryTelemetry

        return InMemoryTelemetry
    raise AttributeError(f"module 'symfonic_otel.testing' has no attribute {name!r}")
