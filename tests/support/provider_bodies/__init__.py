"""Provider response bodies for the adapter tests, written after each provider's API reference.

The facts the tests rely on are the ones real replies carry (stop values, usage shapes, block
order); the text is ours. ``anthropic_bodies`` and ``openai_bodies`` say which shapes each
follows. Every call returns a fresh copy: tests edit bodies to make their case.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from . import anthropic_bodies as anthropic
from . import openai_bodies as openai

__all__ = ["provider_body", "provider_body_bytes"]

_JSON: dict[str, Callable[[], dict[str, Any]]] = {
    "anthropic_stop_sequence.json": anthropic.anthropic_stop_sequence,
    "anthropic_max_tokens_cache_write.json": anthropic.anthropic_max_tokens_cache_write,
    "anthropic_thinking_text_tool_use.json": anthropic.anthropic_thinking_text_tool_use,
    "anthropic_end_turn_after_tool.json": anthropic.anthropic_end_turn_after_tool,
    "anthropic_pause_turn.json": anthropic.anthropic_pause_turn,
    "openai_tool_calls.json": openai.openai_tool_calls,
    "openai_stop_after_tool.json": openai.openai_stop_after_tool,
    "openai_refusal_field.json": openai.openai_refusal_field,
}
_STREAMS: dict[str, Callable[[], bytes]] = {
    "anthropic_stream_text_two_tool_use.sse": anthropic.anthropic_stream_text_two_tool_use,
    "anthropic_stream_thinking_text.sse": anthropic.anthropic_stream_thinking_text,
    "openai_stream_tool_calls.sse": openai.openai_stream_tool_calls,
    "openai_stream_stop_after_tool.sse": openai.openai_stream_stop_after_tool,
}


def provider_body(name: str) -> Any:
    """A JSON body, built fresh."""
    return _JSON[name]()


def provider_body_bytes(name: str) -> bytes:
    """A body as the server sends it: a stream's bytes, or a JSON body serialised."""
    if name in _STREAMS:
        return _STREAMS[name]()
    return json.dumps(provider_body(name)).encode()
