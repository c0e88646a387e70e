"""Symfonic's own event shapes, as ``symfonic.core.contracts`` defines them (seed 003).

Mirrors of the contract, NOT this package's dataclasses: the handler must read the real objects
duck-typed. The dataclass events have exactly the contract's fields and defaults. The pydantic
step events (tool calls, text deltas, pauses) are pydantic models here too; the contract lists
the fields of ``InterruptEvent`` only, and like it none of them names a run: the handler
attributes them to the sole open run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel


@dataclass
class AgentStart:
    query: str
    run_id: str


@dataclass
class AgentEnd:
    run_id: str
    final_response: str | None
    duration_ms: float
    node_count: int | None
    outcome: str = "completed"


@dataclass
class LLMStart:
    model: str
    messages: list[Any]
    run_id: str = ""
    system_prompt: str = ""
    node_name: str = ""
    turn_index: int = 0


@dataclass
class LLMPreCall:
    model: str
    messages: list[Any]
    tools: list[Any]
    run_id: str
    invocation_params: dict[str, Any] = field(default_factory=dict)
    node_name: str = ""


@dataclass
class LLMEnd:
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
    outcome: str = "completed"


@dataclass
class ReactLoopEnd:
    run_id: str
    iteration_index: int
    content_type: str
    has_tool_calls: bool
    tool_call_count: int
    termination_reason: str


@dataclass
class FabricationDetected:
    run_id: str
    mode: str
    action_taken: str
    findings: list[dict[str, Any]]
    refuse_threshold: float
    max_finding_confidence: float
    original_draft_preview: str
    replacement_preview: str | None
    preview_truncated: bool


@dataclass
class NodeStart:
    node_name: str
    run_id: str


@dataclass
class NodeEnd:
    node_name: str
    run_id: str
    duration_ms: float


@dataclass
class NodeError:
    node_name: str
    run_id: str
    error: str
    error_type: str


class ToolCallStart(BaseModel):
    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any] | None = None  # the announced phase may not know them yet
    phase: Literal["announced", "executing"] = "executing"


class ToolResult(BaseModel):
    tool_call_id: str
    tool_name: str
    result: str = ""
    is_error: bool = False


class TextDelta(BaseModel):
    text: str


class Interrupt(BaseModel):
    name: str
    pause_token: str
    payload: str  # JSON, matching the registered payload schema
    expires_at: datetime
    interrupt_id: str


class AskUserQuestion(BaseModel):
    question: str
    pause_token: str


class ExtensionEvent(BaseModel):
    type: str
    payload: dict[str, Any] = {}


# The contract's hooks the handler maps, one per mapped event.
HANDLER_HOOKS = (
    "on_agent_start",
    "on_agent_end",
    "on_llm_end",
    "on_react_loop_end",
    "on_fabrication_detected",
    "on_llm_start",
    "on_llm_pre_call",
    "on_text_delta",
    "on_tool_call_start",
    "on_tool_result",
    "on_node_start",
    "on_node_end",
    "on_node_error",
    "on_interrupt",
    "on_ask_user_question",
)
