"""Provider content blocks read as plain values, for ``content_json`` to render.

What the LangChain adapters put in a message's content beyond text: reasoning in each
provider's spelling, and the tools a provider ran itself with their results. Nothing here is
budgeted (``content_json`` cuts what it renders); containers are looked at boundedly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from itertools import islice
from typing import Any, Final

__all__ = ["is_server_tool", "media_uri", "nonblank", "reasoning_texts", "server_tool"]

_MAX_ITEMS: Final = 64
_MAX_DEPTH: Final = 3
# Anthropic's server-side tools (web search, code execution, web fetch) and MCP connector tools;
# their results are ``web_search_tool_result``, ``mcp_tool_result``... linked by ``tool_use_id``.
# LangChain's standard blocks (``output_version="v1"``): ``server_tool_call`` / ``_result``.
_SERVER_TOOL_CALLS: Final = frozenset({"server_tool_use", "mcp_tool_use", "server_tool_call"})
_SERVER_TOOL_KEYS: Final = frozenset(
    {"type", "id", "tool_use_id", "tool_call_id", "name", "index", "extras", "partial_json"}
)
# The OpenAI Responses API's built-in tools: one item per call, its results inside it.
_RESPONSES_TOOL_CALLS: Final = frozenset(
    {"web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call"}
    | {"mcp_call"}
)


# Media block type -> semconv modality (OpenAI's ``image_url`` / ``input_audio``, LangChain's
# standard ``image`` / ``audio`` / ``video`` / ``file``, Anthropic's ``document``).
_MODALITIES: Final[Mapping[str, str]] = {
    "image_url": "image",
    "image": "image",
    "input_image": "image",
    "audio": "audio",
    "input_audio": "audio",
    "video": "video",
    "file": "document",
    "document": "document",
}


def media_uri(block: Mapping[str, Any], kind: str) -> tuple[str, str, str | None] | None:
    """(modality, URI, MIME type) of a media block that references its data by URL; None for
    inline data (base64, ``data:`` URLs), which is recorded by type only."""
    modality = _MODALITIES.get(kind)
    if modality is None:
        return None
    url: object = block.get("url")
    nested = block.get("image_url", block.get("source"))
    if url is None and isinstance(nested, Mapping):  # OpenAI {"url": ...}, Anthropic's source
        url = nested.get("url")
    elif url is None:
        url = nested  # OpenAI's bare string form
    if not isinstance(url, str) or not url or url.startswith("data:"):
        return None
    mime = block.get("mime_type")
    return modality, url, mime if isinstance(mime, str) and mime else None


def nonblank(text: object) -> str | None:
    return text if isinstance(text, str) and text.strip() else None


def reasoning_texts(block: Mapping[str, Any], kind: str) -> list[str]:
    """The text of a reasoning block: Anthropic's ``thinking``, LangChain's ``reasoning``, or
    OpenAI Responses' ``summary`` parts (none when the reasoning is only encrypted)."""
    text = block.get(kind) or block.get("text")
    if text:
        return [str(text)]
    summary = block.get("summary")
    if isinstance(summary, list) and kind == "reasoning":
        return [
            item["text"]
            for item in summary[:_MAX_ITEMS]
            if isinstance(item, Mapping) and isinstance(item.get("text"), str)
        ]
    return [""]


def is_server_tool(kind: str) -> bool:
    return (
        kind in _SERVER_TOOL_CALLS or kind in _RESPONSES_TOOL_CALLS or kind.endswith("_tool_result")
    )


def server_tool(
    block: Mapping[str, Any], kind: str
) -> tuple[str, str | None, str | None, dict[str, object]]:
    """(part type, call id, tool name for a call / None for a result, details) of a server
    tool block; the details are semconv's ``Generic*`` shape: ``type`` plus the block's own
    fields, without encrypted payloads."""
    call = kind in _SERVER_TOOL_CALLS or kind in _RESPONSES_TOOL_CALLS
    name = str(block.get("name") or kind.removesuffix("_call"))
    extras = block.get("extras")
    named = extras.get("block_type") if isinstance(extras, Mapping) else None  # v1: the original
    result_type = named if isinstance(named, str) and named else kind
    details: dict[str, object] = {"type": name[:64] if call else result_type[:64]}
    for key, member in islice(block.items(), _MAX_ITEMS):
        if key not in _SERVER_TOOL_KEYS and not str(key).startswith("encrypted"):
            details[key] = _public(member, 0)
    partial = block.get("partial_json")  # streamed by langchain-anthropic: the input, as JSON
    if call and not details.get("input") and isinstance(partial, str) and partial:
        try:
            details["input"] = json.loads(partial)
        except ValueError:
            details["input"] = partial
    raw_id = block.get("id") if call else block.get("tool_use_id", block.get("tool_call_id"))
    call_id = str(raw_id)[:256] if raw_id is not None else None
    if call:
        return "server_tool_call", call_id, name, details
    return "server_tool_call_response", call_id, None, details


def _public(item: object, depth: int) -> object:
    """``item`` without ``encrypted_*`` members (opaque provider state, no use in a trace)."""
    if depth >= _MAX_DEPTH:
        return item
    if isinstance(item, Mapping):
        members = islice(item.items(), _MAX_ITEMS)
        return {k: _public(v, depth + 1) for k, v in members if not str(k).startswith("encrypted")}
    if isinstance(item, list | tuple):
        return [_public(member, depth + 1) for member in item[:_MAX_ITEMS]]
    return item
