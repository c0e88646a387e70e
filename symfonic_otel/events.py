"""Agent lifecycle events, mirroring ``symfonic.core.contracts``.

Field names, order and defaults match Symfonic's dataclasses so a handler written for Symfonic
works unchanged with these, and ours work with Symfonic's. Handlers never ``isinstance``-check
events: any object with the same attribute names is accepted.

Seed 003 gives the fields of Symfonic's dataclasses (``LLMStartEvent``, ``LLMPreCallEvent``, the
node events) but not of its pydantic step events (tool calls, text deltas, pauses). Those below use
the names its prose does (``tool_call_id``, the ``announced`` / ``executing`` phase; an interrupt's
``name``, ``pause_token``, ``payload``, ``expires_at``, ``interrupt_id``), and the handler also
reads the usual alternatives (``name``, ``call_id``, ``args``, ``output``, ``status``...), so events
of another shape still map. ``run_id`` on the step events is this package's extension: it ties the
event to its run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

TerminationOutcome = Literal["completed", "error", "cancelled", "abandoned"]
TerminationReason = Literal["tool_calls_with_no_text", "no_content_no_tool_calls"]
ContentType = Literal["str", "list", "NoneType"]
FabricationMode = Literal["off", "observe", "revise", "refuse"]
FabricationAction = Literal["none", "observed", "revise_forced", "refuse_replaced"]
ToolCallPhase = Literal["announced", "executing"]

__all__ = [
    "AgentEndEvent",
    "AgentStartEvent",
    "AskUserQuestionEvent",
    "ContentType",
    "FabricationAction",
    "FabricationDetectedEvent",
    "FabricationMode",
    "InterruptEvent",
    "LLMEndEvent",
    "LLMPreCallEvent",
    "LLMStartEvent",
    "NodeEndEvent",
    "NodeErrorEvent",
    "NodeStartEvent",
    "ReactLoopEndEvent",
    "TerminationOutcome",
    "TerminationReason",
    "TextDeltaEvent",
    "TokenUsage",
    "ToolCallPhase",
    "ToolCallStartEvent",
    "ToolResultEvent",
]


@dataclass(frozen=True)
class TokenUsage:
    """Token counts of one completion, read from a provider-shaped usage dict."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    pricing_unknown: bool = False
    reasoning_tokens: int = 0  # an extension of this package: part of ``output_tokens``

    @classmethod
    def from_usage(cls, usage: object, *, pricing_unknown: bool = False) -> TokenUsage:
        """Accept LangChain's ``usage_metadata`` as well as OpenAI / Anthropic raw usage."""
        if not isinstance(usage, Mapping):
            return cls(pricing_unknown=pricing_unknown)
        details = _details(usage, "input_token_details")
        prompt_details = _details(usage, "prompt_tokens_details")  # OpenAI raw
        input_tokens = _count(usage, "input_tokens", "prompt_tokens")
        output_tokens = _count(usage, "output_tokens", "completion_tokens")
        total = _count(usage, "total_tokens") or input_tokens + output_tokens
        return cls(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=total,
            cache_read_tokens=_count(details, "cache_read")
            or _count(prompt_details, "cached_tokens")
            or _count(usage, "cache_read_input_tokens"),
            cache_creation_tokens=_count(details, "cache_creation")
            or _count(usage, "cache_creation_input_tokens"),
            pricing_unknown=pricing_unknown,
            reasoning_tokens=_count(_details(usage, "output_token_details"), "reasoning")
            or _count(_details(usage, "completion_tokens_details"), "reasoning_tokens"),
        )


def _details(usage: Mapping[Any, Any], key: str) -> Mapping[Any, Any]:
    value = usage.get(key)
    return value if isinstance(value, Mapping) else {}


def _count(source: Mapping[Any, Any], *keys: str) -> int:
    for key in keys:
        value = source.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return 0


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
    # Extensions of this package (read duck-typed, so Symfonic's own events work without them).
    stop_reason: str | None = None
    """The run's exit: a normalised terminal stop reason, or ``loop_detected``,
    ``recursion_limit``, ``interrupted``, ``error``."""
    error_type: str | None = None
    """The exception's type name when ``outcome`` is ``error``."""


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
    # Extensions of this package (read duck-typed, so Symfonic's own events work without them).
    stop_reason: str | None = None
    """The provider's raw stop value for this completion (``stop``, ``tool_use``, ``STOP``...)."""
    error_type: str | None = None
    """The exception's type name when ``outcome`` is ``error``."""
    forced_tool_choice: str | None = None
    """The tool the call was forced to use (``bind_tools(..., tool_choice=name)``), if any."""
    response_id: str | None = None
    """The provider's id of the completion."""
    response_model: str | None = None
    """The model that answered, as the provider names it (a dated snapshot, say)."""
    invocation_params: dict[str, Any] | None = None
    """The request's provider-native parameters (temperature, max_tokens...), as on
    Symfonic's ``LLMPreCallEvent``."""

    @property
    def typed_usage(self) -> TokenUsage:
        """The raw ``usage`` dict as a ``TokenUsage`` whose ``pricing_unknown`` is looked up in
        the default price table now (a model it does not price is unknown), or the event's own
        flag when that is set."""
        # Imported here: the events module stays free of the emitters' imports.
        from symfonic_otel.emit.pricing import priced

        unknown = self.pricing_unknown or not priced(self.model)
        return TokenUsage.from_usage(self.usage, pricing_unknown=unknown)


@dataclass(frozen=True)
class ReactLoopEndEvent:
    """A *silent bail*: the agent stopped without writing an answer (loop cut, step cap, empty
    completion), whether or not a fallback then produced one."""

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


@dataclass(frozen=True)
class LLMStartEvent:
    """A model is invoked with the conversation as the engine sees it (before tool binding)."""

    model: str
    messages: list[Any]
    run_id: str = ""
    system_prompt: str = ""
    node_name: str = ""
    turn_index: int = 0


@dataclass(frozen=True)
class LLMPreCallEvent:
    """The request a provider is about to receive: ``messages`` after system-message
    consolidation, ``tools`` as ``{"name", "description", "schema"}`` records, the provider's
    ``invocation_params``. It ships prompts verbatim: telemetry keeps them only with capture on."""

    model: str
    messages: list[Any]
    tools: list[dict[str, Any]]
    run_id: str
    invocation_params: dict[str, Any] = field(default_factory=dict)
    node_name: str = ""


@dataclass(frozen=True)
class NodeStartEvent:
    """A graph node is about to execute."""

    node_name: str
    run_id: str


@dataclass(frozen=True)
class NodeEndEvent:
    """A graph node completed."""

    node_name: str
    run_id: str
    duration_ms: float


@dataclass(frozen=True)
class NodeErrorEvent:
    """A graph node raised; ``error`` is the message (may quote user data), ``error_type`` its
    exception type."""

    node_name: str
    run_id: str
    error: str
    error_type: str


@dataclass(frozen=True)
class ToolCallStartEvent:
    """A tool call: ``announced`` when the model's output reveals it, ``executing`` when the
    runtime dispatches it. The two phases use different id spaces; telemetry keeps the second."""

    tool_call_id: str
    tool_name: str
    arguments: Any = None
    phase: ToolCallPhase = "executing"
    run_id: str = ""


@dataclass(frozen=True)
class ToolResultEvent:
    """A tool returned; ``tool_call_id`` is that of its ``executing`` start."""

    tool_call_id: str
    tool_name: str
    result: Any = None
    is_error: bool = False
    run_id: str = ""
    error_type: str | None = None
    """The exception's type name when the tool failed, if known."""


@dataclass(frozen=True)
class TextDeltaEvent:
    """An incremental text chunk of a streamed model response."""

    text: str
    run_id: str = ""
    node_name: str = ""


@dataclass(frozen=True)
class InterruptEvent:
    """A registered interrupt fired: the run is paused until resumed with ``pause_token``."""

    name: str
    pause_token: str
    payload: str
    expires_at: datetime
    interrupt_id: str
    run_id: str = ""


@dataclass(frozen=True)
class AskUserQuestionEvent:
    """The model called the built-in ``ask_user`` tool: the run is paused for the answer."""

    question: str
    pause_token: str = ""
    run_id: str = ""
