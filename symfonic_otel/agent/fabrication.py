"""Fabrication check: find claims in a draft answer that nothing in the conversation supports.

A detector is ``detector(draft, messages) -> list[FabricationFinding]`` (sync or async). The
built-in ``heuristic_fabrication_detector`` is deliberately simple and cheap, and it has limits
you should know before acting on its findings:

* Action claims ("I have sent the email", "I booked ...") are matched by first-person past-tense
  phrases in English only. Such a claim is suspect when no tool ran successfully in the
  conversation (confidence 0.9), or when tools ran but none whose name relates to the verb
  (confidence 0.6). It cannot tell whether a tool that did run actually did what is claimed.
* URLs (confidence 0.7) and figures (confidence 0.5) in the draft are suspect when they appear
  in no tool result and no user or system message. Figures below 10 without decimals are
  ignored (list markers, small counts). A figure the model *computed* correctly from tool data
  (a sum, a percentage) is still reported; a figure restated in another format ("1.2M" for
  "1,200,000") is reported too. A URL the model knows from training is reported.
* It reads text only: images and structured tool outputs are seen through their string form.

Treat its findings as signals for observe mode and dashboards; use ``revise`` or ``refuse`` with
a detector tuned to your tools.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from symfonic_otel.agent.flatten import flatten_content_blocks

__all__ = [
    "PREVIEW_CHARS",
    "SAFE_ENVELOPE",
    "FabricationDetector",
    "FabricationFinding",
    "heuristic_fabrication_detector",
    "preview",
]

PREVIEW_CHARS: Final = 240
MAX_FINDINGS: Final = 16
SAFE_ENVELOPE: Final = (
    "I can't give a reliable answer to this: parts of my draft were not supported by the "
    "results of the tools I used. Please rephrase the request or ask me to check again."
)


def preview(text: str) -> tuple[str, bool]:
    """First ``PREVIEW_CHARS`` characters of ``text`` and whether it was longer."""
    return text[:PREVIEW_CHARS], len(text) > PREVIEW_CHARS


@dataclass(frozen=True, slots=True)
class FabricationFinding:
    """One suspect claim: its ``kind``, the ``claim`` text, a ``confidence`` in [0, 1]."""

    kind: str
    claim: str
    confidence: float
    evidence: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.confidence, bool) or not 0.0 <= float(self.confidence) <= 1.0:
            raise ValueError(
                f"FabricationFinding.confidence must be in [0, 1], got {self.confidence!r}"
            )

    def to_event_payload(self) -> dict[str, Any]:
        """JSON-serialisable form for ``FabricationDetectedEvent.findings`` (claim truncated)."""
        return {
            "kind": self.kind,
            "claim": self.claim[:PREVIEW_CHARS],
            "confidence": float(self.confidence),
            "evidence": None if self.evidence is None else self.evidence[:PREVIEW_CHARS],
        }


FabricationDetector = Callable[
    [str, list[BaseMessage]],
    list[FabricationFinding] | Awaitable[list[FabricationFinding]],
]

# --- the heuristic detector ----------------------------------------------------------------

_URL = re.compile(r"https?://[^\s<>()\[\]{}\"'`]+", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?")
_ACTION = re.compile(
    r"\b(?:I|we)(?:\s+have|\s+has|'ve|\s+just|\s+already|\s+successfully)*\s+"
    r"(sent|emailed|messaged|booked|reserved|scheduled|created|deleted|removed|updated|saved|"
    r"submitted|placed|ordered|paid|transferred|cancell?ed|refunded|uploaded|posted|published|"
    r"notified|filed|opened|closed|added|executed|ran|searched|looked up|checked|queried|"
    r"fetched|called|verified|confirmed)\b",
    re.IGNORECASE,
)
# Verbs any successful tool run can back (the model did look something up).
_GENERIC_VERBS: Final = frozenset(
    {
        "executed",
        "ran",
        "searched",
        "looked up",
        "checked",
        "queried",
        "fetched",
        "called",
        "verified",
        "confirmed",
    }
)
_STEMS: Final[Mapping[str, str]] = {
    "sent": "send",
    "emailed": "email",
    "messaged": "message",
    "booked": "book",
    "reserved": "reserv",
    "scheduled": "schedul",
    "created": "creat",
    "deleted": "delet",
    "removed": "remov",
    "updated": "updat",
    "saved": "sav",
    "submitted": "submit",
    "placed": "plac",
    "ordered": "order",
    "paid": "pay",
    "transferred": "transfer",
    "canceled": "cancel",
    "cancelled": "cancel",
    "refunded": "refund",
    "uploaded": "upload",
    "posted": "post",
    "published": "publish",
    "notified": "notif",
    "filed": "fil",
    "opened": "open",
    "closed": "clos",
    "added": "add",
}
_TRAILING = ".,;:!?)]}'\""


def _text_of(message: BaseMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return flatten_content_blocks(message.content) or str(message.content)


def _evidence(messages: list[BaseMessage]) -> tuple[str, set[str]]:
    """Text a claim may rest on (tool results, user and system messages) and the tools that
    ran successfully."""
    parts: list[str] = []
    names: dict[str, str] = {}
    succeeded: set[str] = set()
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                call_id = call.get("id")
                if call_id:
                    names[call_id] = call["name"]
        elif isinstance(message, ToolMessage):
            parts.append(_text_of(message))
            if message.status != "error":
                name = message.name or names.get(message.tool_call_id)
                if name:
                    succeeded.add(name.lower())
        elif isinstance(message, HumanMessage | SystemMessage):
            parts.append(_text_of(message))
    return "\n".join(parts), succeeded


def _numbers(text: str) -> set[str]:
    return {match.replace(",", "") for match in _NUMBER.findall(text)}


def heuristic_fabrication_detector(
    draft: str, messages: list[BaseMessage]
) -> list[FabricationFinding]:
    """Built-in detector: unperformed actions, unsupported URLs and figures (see module doc)."""
    corpus, tools_run = _evidence(messages)
    corpus_lower = corpus.lower()
    findings: list[FabricationFinding] = []

    for match in _ACTION.finditer(draft):
        verb = match.group(1).lower()
        claim = match.group(0)
        if not tools_run:
            findings.append(
                FabricationFinding("unperformed_action", claim, 0.9, "no tool ran successfully")
            )
        elif verb not in _GENERIC_VERBS:
            stem = _STEMS.get(verb, verb)
            if not any(stem in name for name in tools_run):
                findings.append(
                    FabricationFinding(
                        "unperformed_action",
                        claim,
                        0.6,
                        f"no successful tool matches {verb!r}; tools run: {sorted(tools_run)}",
                    )
                )

    without_urls = draft
    for raw_url in _URL.findall(draft):
        url = raw_url.rstrip(_TRAILING)
        without_urls = without_urls.replace(raw_url, " ")
        if url.lower() not in corpus_lower:
            findings.append(
                FabricationFinding(
                    "unsupported_url", url, 0.7, "not in any tool result or user message"
                )
            )

    known = _numbers(corpus)
    seen: set[str] = set()
    for raw in _NUMBER.findall(without_urls):
        number = raw.replace(",", "")
        if number in seen or number in known:
            continue
        seen.add(number)
        if "." not in number and int(number) < 10:
            continue
        findings.append(
            FabricationFinding(
                "unsupported_number", raw, 0.5, "not in any tool result or user message"
            )
        )
    return findings[:MAX_FINDINGS]
