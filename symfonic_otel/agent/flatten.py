"""Reduce a model message's content to the text a user should read.

Chat models return either a plain string or a list of content blocks (text, thinking, tool use,
server tool results, ...). Only text blocks are answer text: thinking and tool blocks are not for
the user. The loop keeps the original content in history untouched (providers want it back) and
flattens only to build ``final_response`` and event outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from symfonic_otel.events import ContentType

__all__ = ["content_type", "flatten_content_blocks", "message_text"]


def flatten_content_blocks(content: Any) -> str | None:
    """Text of ``content``: a string as is, the ``type == "text"`` blocks of a list joined.

    Bare strings inside a list count as text (LangChain treats them so). Returns ``None`` when
    there is no text at all (empty string, no text block, ``None``).
    """
    if isinstance(content, str):
        return content or None
    if not isinstance(content, list):
        return None
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text":
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
    joined = "".join(parts)
    return joined or None


def message_text(message: Any) -> str | None:
    """Answer text of a model message: flattened content, else an OpenAI refusal string.

    OpenAI's structured-output refusals arrive with empty content and the text in
    ``additional_kwargs["refusal"]``; that text is what the user must see.
    """
    text = flatten_content_blocks(getattr(message, "content", None))
    if text is not None:
        return text
    extra = getattr(message, "additional_kwargs", None)
    if isinstance(extra, Mapping):
        refusal = extra.get("refusal")
        if isinstance(refusal, str) and refusal:
            return refusal
    return None


def content_type(content: object) -> ContentType:
    """The ``content_type`` a ``ReactLoopEndEvent`` reports: ``str``, ``list`` or ``NoneType``."""
    if isinstance(content, str):
        return "str"
    if isinstance(content, list):
        return "list"
    return "NoneType"
