"""Agent lifecycle events, mirroring ``symfonic.core.contracts``.

Field names, order and defaults match Symfonic's dataclasses so a handler written for Symfonic
works unchanged with these, and ours work with Symfonic's. Handlers never ``isinstance``-check
events: any object with the same attribute names is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

TerminationOutcome = Literal["completed", "error", "cancelled", "abandoned"]
TerminationReason = Literal["tool_calls_with_no_text", "no_content_no_tool_calls"]
ContentType = Literal["str", "list", "NoneType"]
FabricationMode = Literal["off", "observe", "revise", "refuse"]
FabricationAction = Literal["none", "observed", "revise_forced", "refuse_replaced"]

__all__ = [
    "AgentEndEvent",
    "AgentStartEvent",
    "ContentType",
    "FabricationAction",
    "FabricationDetectedEvent",
    "FabricationMode",
    "LLMEndEvent",
    "ReactLoopEndEvent",
    "TerminationOutcome",
    "TerminationReason",
]


@dataclass(frozen=True)
class AgentStartEvent:
    """An agent run began."""

    query: str
    run_id: str


@dataclass(frozen=True)
class AgentEndEvent:
    """An agent run ended, however it ended (``outcome`` tells which way)."""

    run_id: str
    final_response: str | None
    duration_ms: float
    node_count: int | None
    outcome: TerminationOutcome = "completed"


@dataclass(frozen=True)
class LLMEndEvent:
    """One model completion returned; ``node_name`` names the call site."""

    model: str
    output: str
    usage: dict[str, Any]
    run_id: str = ""
    node_name: str = ""
    pricing_unknown: bool = False
    duration_ms: float = 0.0
    started_at_utc: str = ""
    iteration_index: int = 0
    turn_index: int = 0
    outcome: TerminationOutcome = "completed"


@dataclass(frozen=True)
class ReactLoopEndEvent:
    """The ReAct loop ended with an empty final response: a *silent bail*."""

    run_id: str
    iteration_index: int
    content_type: ContentType
    has_tool_calls: bool
    tool_call_count: int
    termination_reason: TerminationReason


@dataclass(frozen=True)
class FabricationDetectedEvent:
    """The fabrication check found suspect content in a draft answer."""

    run_id: str
    mode: FabricationMode
    action_taken: FabricationAction
    findings: list[dict[str, Any]]
    refuse_threshold: float
    max_finding_confidence: float
    original_draft_preview: str
    replacement_preview: str | None
    preview_truncated: bool
