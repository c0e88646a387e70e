"""The adapter's name for ``symfonic_otel.content_json``, which the core handler shares."""

from __future__ import annotations

from symfonic_otel.content_json import (
    MAX_ATTRIBUTE_CHARS,
    Budget,
    documents_json,
    input_messages_json,
    output_messages_json,
    prompts_json,
    tool_definitions_json,
    value_json,
)

__all__ = [
    "MAX_ATTRIBUTE_CHARS",
    "Budget",
    "documents_json",
    "input_messages_json",
    "output_messages_json",
    "prompts_json",
    "tool_definitions_json",
    "value_json",
]
