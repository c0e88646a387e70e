"""What the adapter remembers between a run's start and its end (the run tree's records)."""

from __future__ import annotations

from dataclasses import dataclass, field

from opentelemetry.context import Context
from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.langchain.extract import AIShape, RunKey

__all__ = ["AgentRun", "ChainStart", "ChatCall", "SpanClaim"]


@dataclass(frozen=True, slots=True)
class ChainStart:
    """A chain inside a graph that may turn out to be a sub-graph (a sub-agent run)."""

    started_ns: int
    name: str | None
    inputs: object = None  # kept only with content capture on, for the sub-agent's input


@dataclass(slots=True, eq=False)
class AgentRun:
    """One open agent run: a top-level run, or a graph invoked inside one (``parent`` set)."""

    key: RunKey
    run_id: str
    started_monotonic: float
    parent: AgentRun | None = None
    members: set[RunKey] = field(default_factory=set)
    # Open child spans (tools, retrievals, graph nodes) by run; None while the span is being
    # started (claims the run id, so a duplicate start cannot open a second span).
    spans: dict[RunKey, Span | None] = field(default_factory=dict)
    # Runs nested inside one of those spans -> that span (their calls nest under it).
    enclosing: dict[RunKey, Span] = field(default_factory=dict)
    # Chains of a graph that could be sub-graphs, until they end or turn out to be one.
    chains: dict[RunKey, ChainStart] = field(default_factory=dict)
    subagents: dict[RunKey, AgentRun] = field(default_factory=dict)
    chat_calls: int = 0
    last_ai: AIShape | None = None
    # The id of a budget message written in the model's place inside the run: a hook's jump to
    # the end, or a sub-agent's step cap (``step_caps``).
    closing_message: str | None = None
    interrupted: bool = False
    at_breakpoint: bool = False  # LangGraph's on_interrupt: maybe a static breakpoint
    announced: bool = False  # the core has seen its AgentStart


@dataclass(slots=True, eq=False)
class ChatCall:
    """A model call between its start and its end."""

    agent: AgentRun | None  # None: a standalone call
    started_ns: int
    model: str
    provider: str | None
    node: str
    iteration: int
    tenant: str | None = None
    parent: Context | None = None  # standalone: the context current at the start callback
    parent_span: Span | None = None  # the tool / retrieval / node span it runs inside, if any
    operation: str = semconv.OP_CHAT
    attributes: dict[str, AttributeValue] = field(default_factory=dict)  # built at its start
    first_chunk_ns: int | None = None  # streamed: when the first chunk arrived


@dataclass(frozen=True, slots=True)
class SpanClaim:
    """A run claimed for a span: in an agent run, or standalone; maybe inside another span."""

    agent: AgentRun | None
    parent_span: Span | None = None
