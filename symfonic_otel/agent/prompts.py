"""Prompts of the loop's extra completions (continuation, synthesis, revision) and the transcript.

The synthesis and revision completions run without tools; some providers reject tool-call and
tool-result blocks in a request that defines no tools, so the work done is restated as text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from symfonic_otel.agent.flatten import flatten_content_blocks, message_text

__all__ = [
    "CONTINUE_PROMPT",
    "REVISION_INSTRUCTION",
    "SYNTHESIS_INSTRUCTION",
    "dumps",
    "transcript",
]

CONTINUE_PROMPT: Final = (
    "Your previous reply was cut off by the output limit. Continue it exactly where it stopped, "
    "without repeating anything already written."
)
SYNTHESIS_INSTRUCTION: Final = (
    "The conversation below ended without a final answer to the user. Using only what it "
    "contains, write that answer now: summarise the work that was done and what it found, and "
    "say plainly what remains unknown. Tools are not available; reply with the answer only."
)
REVISION_INSTRUCTION: Final = (
    "Below are a conversation and a draft answer to its last user request. A check found claims "
    "in the draft that nothing in the conversation supports (listed below). Rewrite the answer "
    "so that it states only what the conversation supports: remove or clearly qualify the "
    "unsupported claims. Reply with the answer only."
)
_TRANSCRIPT_ITEM_CHARS: Final = 2000


def _clip(text: str) -> str:
    if len(text) <= _TRANSCRIPT_ITEM_CHARS:
        return text
    return text[:_TRANSCRIPT_ITEM_CHARS] + " [...]"


def dumps(value: object) -> str:
    """JSON for tool arguments and results, ``repr`` for what JSON cannot hold."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def transcript(messages: Sequence[BaseMessage]) -> str:
    """The conversation as plain text, each item clipped."""
    names: dict[str, str] = {}
    lines: list[str] = []
    for message in messages:
        if isinstance(message, AIMessage):
            text = message_text(message)
            if text and text.strip():
                lines.append(f"Assistant: {_clip(text)}")
            for call in message.tool_calls:
                call_id = call.get("id")
                if call_id:
                    names[call_id] = call["name"]
                args = _clip(dumps(call["args"]))
                lines.append(f"Assistant called tool {call['name']} with {args}")
        elif isinstance(message, ToolMessage):
            name = message.name or names.get(message.tool_call_id, "tool")
            body = flatten_content_blocks(message.content) or dumps(message.content)
            lines.append(f"Result of {name}: {_clip(body)}")
        elif isinstance(message, SystemMessage):
            lines.append(f"System: {_clip(flatten_content_blocks(message.content) or '')}")
        else:
            lines.append(f"User: {_clip(flatten_content_blocks(message.content) or '')}")
    return "\n".join(lines)
