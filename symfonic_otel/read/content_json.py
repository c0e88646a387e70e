"""Captured content as GenAI-semconv JSON: messages, instructions, tools, tool I/O, documents.

Shared by the core handler (Symfonic's LLMStart / LLMPreCall) and the LangChain adapter, so both
render the same shapes. Only called with content capture on. Every builder returns ``(json_text,
truncated)``: each text is cut at the capture limit (``content.MAX_CONTENT_CHARS``, as everywhere
else) and each attribute holds at most ``MAX_ATTRIBUTE_CHARS`` characters of text, so one long
conversation cannot make a span unexportable. A message list over budget keeps its most recent
messages (in order); structured values (tool arguments, results) keep their shape with long strings
cut and wide or deep containers elided. Media referenced by URL are semconv ``uri`` parts; inline
binary data (images, audio, files) is recorded by type only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from symfonic_otel.read import content_blocks as blocks
from symfonic_otel.read.content import MAX_CONTENT_CHARS, truncate

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

MAX_ATTRIBUTE_CHARS: Final = 4 * MAX_CONTENT_CHARS
# Containers inside tool arguments / results: items kept per level, levels kept.
_MAX_ITEMS: Final = 64
_MAX_DEPTH: Final = 6
_MAX_MESSAGES: Final = 256
_MAX_DOCUMENTS: Final = 64
_MAX_TOOLS: Final = 128
_ROLES: Final = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "AIMessageChunk": "assistant",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}
_REASONING_BLOCKS: Final = frozenset({"thinking", "reasoning"})
# Content blocks recorded through another field (tool calls: Anthropic's ``tool_use``, OpenAI
# Responses' ``function_call``, LangChain's own) or carrying no text to keep.
_SKIPPED_BLOCKS: Final = frozenset(
    {"tool_use", "tool_call", "tool_call_chunk", "function_call", "redacted_thinking"}
)
# Text one server tool part may take: a web search's pages must not crowd out the answer.
_SERVER_PART_CHARS: Final = 1024
# Tool calls as content blocks: read from there only when the message has no ``tool_calls``.
_CALL_BLOCKS: Final = frozenset({"tool_use", "function_call"})


class Budget:
    """Characters of text one attribute may still take; remembers whether anything was cut."""

    __slots__ = ("remaining", "total", "truncated")

    def __init__(self, total: int = MAX_ATTRIBUTE_CHARS) -> None:
        self.total = total
        self.remaining = total
        self.truncated = False

    def text(self, value: str) -> str:
        limit = min(MAX_CONTENT_CHARS, self.remaining)
        if limit <= 0:
            self.truncated = self.truncated or bool(value)
            return ""
        cut, was_cut = truncate(value, limit)
        self.remaining -= min(len(value), limit)
        self.truncated = self.truncated or was_cut
        return cut

    @property
    def spent(self) -> bool:
        return self.remaining <= 0


def _dumps(payload: object) -> str:
    return json.dumps(payload, ensure_ascii=False, default=str)


def value(item: object, budget: Budget, depth: int = 0) -> Any:
    """A JSON-able copy of ``item`` with strings cut and containers bounded."""
    if item is None or isinstance(item, bool | int | float):
        return item
    if isinstance(item, str):
        return budget.text(item)
    if depth >= _MAX_DEPTH:
        budget.truncated = True
        return "…"
    dump = getattr(item, "model_dump", None)  # Pydantic models (structured tool results)
    if callable(dump) and not isinstance(item, type):
        try:
            item = dump(mode="json")
        except Exception:
            return budget.text(repr(item))
    if isinstance(item, Mapping):
        out: dict[str, Any] = {}
        for index, (key, member) in enumerate(item.items()):
            if index >= _MAX_ITEMS or budget.spent:
                budget.truncated = True
                break
            name = budget.text(str(key))  # before the member: it may spend the rest
            out[name] = value(member, budget, depth + 1)
        return out
    if isinstance(item, list | tuple | set | frozenset):
        items: list[Any] = []
        for index, member in enumerate(item):
            if index >= _MAX_ITEMS or budget.spent:
                budget.truncated = True
                break
            items.append(value(member, budget, depth + 1))
        return items
    return budget.text(str(item))


def value_json(item: object) -> tuple[str, bool]:
    """Tool arguments or results: a JSON text as given stays one string value, re-encoded."""
    budget = Budget()
    return _dumps(value(item, budget)), budget.truncated


# --- messages -----------------------------------------------------------------------------


def _field(message: object, name: str) -> Any:
    if isinstance(message, Mapping):
        return message.get(name)
    return getattr(message, name, None)


def _role(message: object) -> str:
    if isinstance(message, tuple) and len(message) == 2:
        raw: object = message[0]
    else:
        raw = _field(message, "type") or _field(message, "role")
        if raw == "chat":  # ChatMessage: the role is its own field
            raw = _field(message, "role")
    text = raw if isinstance(raw, str) else ""
    return _ROLES.get(text, text[:64] or "user")


def _content(message: object) -> object:
    if isinstance(message, tuple) and len(message) == 2:
        return message[1]
    if isinstance(message, str):
        return message
    return _field(message, "content")


def _parts(content: object, budget: Budget, calls: bool = False) -> list[dict[str, Any]]:
    """Text, reasoning, tool-result and server-tool parts of a message's content (and its tool
    calls when ``calls``: history in a provider's own shape); other blocks by type only."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": budget.text(content)}] if content else []
    if not isinstance(content, list | tuple):
        return [{"type": "text", "content": budget.text(str(content))}]
    parts: list[dict[str, Any]] = []
    for block in content[:_MAX_ITEMS]:
        if isinstance(block, str):  # merged stream chunks may leave an empty one: no text
            if block:
                parts.append({"type": "text", "content": budget.text(block)})
            continue
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        kind = kind if isinstance(kind, str) else ""
        if kind == "text":
            text = block.get("text")
            parts.append({"type": "text", "content": budget.text(str(text or ""))})
        elif kind in _REASONING_BLOCKS:
            parts.extend(
                {"type": "reasoning", "content": budget.text(text)}
                for text in blocks.reasoning_texts(block, kind)
            )
        elif kind in _CALL_BLOCKS and calls:  # Anthropic's / Responses' call, no tool_calls
            parts.append(_block_call(block, budget))
        elif kind == "tool_result":  # Anthropic's, in a user message
            part = {"type": "tool_call_response"}
            if block.get("tool_use_id") is not None:
                part["id"] = str(block.get("tool_use_id"))[:256]
            part["response"] = value(block.get("content"), budget)
            parts.append(part)
        elif kind == "refusal":  # OpenAI Responses: the refusal is the message's content
            text = block.get("refusal")
            parts.append({"type": "refusal", "content": budget.text(str(text or ""))})
        elif (media := blocks.media_uri(block, kind)) is not None:
            modality, uri, mime = media
            part = {"type": "uri", "modality": modality, "uri": budget.text(uri)}
            if mime is not None:
                part["mime_type"] = mime[:128]
            parts.append(part)
        elif blocks.is_server_tool(kind):
            parts.append(_server_tool_part(block, kind, budget))
        elif kind not in _SKIPPED_BLOCKS:
            parts.append({"type": kind[:64] or "unknown"})
    return parts


def _server_tool_part(block: Mapping[str, Any], kind: str, budget: Budget) -> dict[str, Any]:
    """A tool the provider ran itself, or its result, as semconv's server tool call parts."""
    field, call_id, name, details = blocks.server_tool(block, kind)
    part: dict[str, Any] = {"type": field}
    if call_id is not None:
        part["id"] = call_id
    if name is not None:
        part["name"] = budget.text(name)
    # Each gets a share of the budget (a web search's pages, a generated image...), so the
    # text after it stays.
    share = Budget(min(_SERVER_PART_CHARS, budget.remaining))
    part[field] = value(details, share)
    budget.remaining -= share.total - share.remaining
    budget.truncated = budget.truncated or share.truncated
    return part


def _block_call(block: Mapping[str, Any], budget: Budget) -> dict[str, Any]:
    call_id = block.get("id") if block.get("type") == "tool_use" else block.get("call_id")
    name = str(block.get("name") or "")
    part: dict[str, Any] = {"type": "tool_call", "name": budget.text(name)}
    if call_id is not None:
        part["id"] = str(call_id)[:256]
    part["arguments"] = value(block.get("input", block.get("arguments")), budget)
    return part


def _tool_calls(message: object, budget: Budget) -> list[dict[str, Any]]:
    calls = _field(message, "tool_calls")
    if not isinstance(calls, list | tuple):
        return []
    parts: list[dict[str, Any]] = []
    for call in calls[:_MAX_ITEMS]:
        if not isinstance(call, Mapping):
            continue
        part: dict[str, Any] = {"type": "tool_call", "name": budget.text(str(call.get("name")))}
        if call.get("id") is not None:
            part["id"] = str(call.get("id"))[:256]
        part["arguments"] = value(call.get("args"), budget)
        parts.append(part)
    return parts


def message_dict(message: object, budget: Budget) -> dict[str, Any]:
    """One LangChain message (object, role dict or ``(role, text)`` tuple) as semconv JSON."""
    role = _role(message)
    if role == "tool":
        call_id = _field(message, "tool_call_id")
        part: dict[str, Any] = {"type": "tool_call_response"}
        if call_id is not None:
            part["id"] = str(call_id)[:256]
        part["response"] = value(_content(message), budget)
        return {"role": role, "parts": [part]}
    calls = role == "assistant" and not _field(message, "tool_calls")
    parts = _parts(_content(message), budget, calls)
    if role == "assistant":
        extra = _field(message, "additional_kwargs")
        extra = extra if isinstance(extra, Mapping) else {}
        # langchain-ollama, langchain-deepseek...: the reasoning beside the content.
        reasoning = blocks.nonblank(extra.get("reasoning_content"))
        if reasoning is not None and not any(p["type"] == "reasoning" for p in parts):
            parts.insert(0, {"type": "reasoning", "content": budget.text(reasoning)})
        refusal = blocks.nonblank(extra.get("refusal"))  # OpenAI: the refusal, with no content
        if refusal is not None and not any(p["type"] == "refusal" for p in parts):
            parts.append({"type": "refusal", "content": budget.text(refusal)})
        parts.extend(_tool_calls(message, budget))
    return {"role": role, "parts": parts}


def input_messages_json(
    messages: Sequence[Any], instructions: str = ""
) -> tuple[str | None, str | None, bool]:
    """(system instructions, input messages, truncated) of the messages a model was sent.

    Leading system messages are the instructions (``gen_ai.system_instructions``); a system
    message later in the history stays in it, as semconv asks. ``instructions`` is a system
    prompt given apart from the messages (Symfonic's ``LLMStartEvent.system_prompt``): it comes
    first, unless a leading system message already says exactly that.
    """
    lead = 0
    while lead < len(messages) and _role(messages[lead]) == "system":
        lead += 1
    budget = Budget()
    system: str | None = None
    if instructions and any(_content(m) == instructions for m in messages[:lead]):
        instructions = ""
    if lead or instructions:
        parts: list[dict[str, Any]] = _parts(instructions, budget)
        for message in messages[:lead]:
            parts.extend(_parts(_content(message), budget))
        system = _dumps(parts)
    rest = messages[lead:]
    kept: list[dict[str, Any]] = []
    for message in reversed(rest[-_MAX_MESSAGES:]):  # newest first, so the budget keeps them
        if budget.spent:
            budget.truncated = True
            break
        kept.append(message_dict(message, budget))
    if len(rest) > _MAX_MESSAGES:
        budget.truncated = True
    kept.reverse()
    return system, (_dumps(kept) if rest else None), budget.truncated


def prompts_json(prompts: Sequence[Any]) -> tuple[str, bool]:
    """A completion model's prompts as user messages."""
    budget = Budget()
    payload = [
        {"role": "user", "parts": [{"type": "text", "content": budget.text(str(prompt))}]}
        for prompt in prompts[:_MAX_MESSAGES]
    ]
    return _dumps(payload), budget.truncated


def output_messages_json(generations: Iterable[Any], finish_reason: str | None) -> tuple[str, bool]:
    """One assistant message per generation (choice), with its tool calls."""
    budget = Budget()
    payload: list[dict[str, Any]] = []
    for generation in list(generations)[:_MAX_ITEMS]:
        message = getattr(generation, "message", None)
        if message is not None:
            entry = message_dict(message, budget)
            entry["role"] = "assistant"
        else:
            text = getattr(generation, "text", "")
            entry = {"role": "assistant", "parts": _parts(str(text or ""), budget)}
        entry["finish_reason"] = finish_reason or ""
        payload.append(entry)
    return _dumps(payload), budget.truncated


# --- tool definitions, retrieved documents ---------------------------------------------------


def _definition(tool: object, budget: Budget) -> dict[str, Any] | None:
    if not isinstance(tool, Mapping):
        return None
    spec: Mapping[str, Any] = tool
    function = tool.get("function")
    if isinstance(function, Mapping):  # OpenAI: {"type": "function", "function": {...}}
        spec = function
    name = spec.get("name")
    if not isinstance(name, str):
        return None
    kind = tool.get("type")
    out: dict[str, Any] = {
        "type": kind if isinstance(kind, str) and kind else "function",
        "name": budget.text(name),
        "description": budget.text(str(spec.get("description") or "")),
    }
    parameters = spec.get("parameters")
    if parameters is None:  # Anthropic: input_schema; Symfonic's LLMPreCallEvent: schema
        parameters = spec.get("input_schema", spec.get("schema"))
    if parameters is not None:
        out["parameters"] = value(parameters, budget)
    return out


def tool_definitions_json(tools: Sequence[Any]) -> tuple[str | None, bool]:
    """The tools bound to a model call (OpenAI, Anthropic, Symfonic or plain ``name`` dicts)."""
    budget = Budget()
    definitions = [d for d in (_definition(t, budget) for t in tools[:_MAX_TOOLS]) if d]
    if len(tools) > _MAX_TOOLS:
        budget.truncated = True
    return (_dumps(definitions) if definitions else None), budget.truncated


def documents_json(documents: Sequence[Any]) -> tuple[str, bool]:
    """Retrieved documents: id, score when the retriever put one in the metadata, content."""
    budget = Budget()
    payload: list[dict[str, Any]] = []
    for document in documents[:_MAX_DOCUMENTS]:
        entry: dict[str, Any] = {}
        doc_id = getattr(document, "id", None)
        if doc_id is not None:
            entry["id"] = str(doc_id)[:256]
        metadata = getattr(document, "metadata", None)
        if isinstance(metadata, Mapping):
            for key in ("score", "relevance_score", "_similarity_score"):
                score = metadata.get(key)
                if isinstance(score, int | float) and not isinstance(score, bool):
                    entry["score"] = float(score)
                    break
        entry["content"] = budget.text(str(getattr(document, "page_content", "") or ""))
        payload.append(entry)
    if len(documents) > _MAX_DOCUMENTS:
        budget.truncated = True
    return _dumps(payload), budget.truncated
