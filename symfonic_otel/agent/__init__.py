"""The reference ReAct loop: termination contract, history repair, fabrication check, events.

``ReactAgent`` runs a langchain-core chat model and tools and emits the Symfonic events of
``symfonic_otel.events`` to duck-typed handlers (``OTelCallbackHandler`` among them).
"""

from __future__ import annotations

from symfonic_otel.agent.config import FabricationCheck, FrameworkConfig, TextWithToolCalls
from symfonic_otel.agent.dispatch import CallbackDispatcher
from symfonic_otel.agent.fabrication import (
    SAFE_ENVELOPE,
    FabricationDetector,
    FabricationFinding,
    heuristic_fabrication_detector,
)
from symfonic_otel.agent.flatten import flatten_content_blocks, message_text
from symfonic_otel.agent.history import history_is_valid, repair_history
from symfonic_otel.agent.loop import SILENT_BAIL_LOG_EVENT, ReactAgent
from symfonic_otel.agent.resolver import ForcedToolChoiceResolver
from symfonic_otel.agent.response import AgentResponse
from symfonic_otel.agent.streaming import (
    StreamEvent,
    StreamFinal,
    StreamTextDelta,
    StreamToolCall,
    StreamToolResult,
)
from symfonic_otel.agent.termination import (
    Route,
    finishes_on_text_with_tool_calls,
    normalize_stop_reason,
    raw_stop_reason,
    tool_call_signature,
    tools_condition,
)

__all__ = [
    "SAFE_ENVELOPE",
    "SILENT_BAIL_LOG_EVENT",
    "AgentResponse",
    "CallbackDispatcher",
    "FabricationCheck",
    "FabricationDetector",
    "FabricationFinding",
    "ForcedToolChoiceResolver",
    "FrameworkConfig",
    "ReactAgent",
    "Route",
    "StreamEvent",
    "StreamFinal",
    "StreamTextDelta",
    "StreamToolCall",
    "StreamToolResult",
    "TextWithToolCalls",
    "finishes_on_text_with_tool_calls",
    "flatten_content_blocks",
    "heuristic_fabrication_detector",
    "history_is_valid",
    "message_text",
    "normalize_stop_reason",
    "raw_stop_reason",
    "repair_history",
    "tool_call_signature",
    "tools_condition",
]
