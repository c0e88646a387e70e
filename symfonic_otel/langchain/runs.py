"""The adapter's run-tree state: which agent run each LangChain run belongs to.

The top-level run (no ``parent_run_id``) is an agent run; every other run is mapped to it
through ``parent_run_id`` alone. Ambient context is never used to find a run, so async tasks,
streaming, ``batch`` and thread pools cannot cross-wire two runs. A model or tool run whose
parent the adapter never saw (a handler attached to the model or the tool rather than to the
graph, or a bare ``model.invoke``) is *standalone*: it remembers the context current at its start
callback and is recorded as a call of its own.

All state is bounded: agent runs by count (oldest evicted), child runs per agent, standalone
calls and tools by count. One lock guards it; it is never held while calling into the OTel SDK
(methods that drop state return the open spans for the caller to end outside the lock).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Final, Literal

from opentelemetry.context import Context
from opentelemetry.trace import Span

from symfonic_otel.langchain.extract import AIShape, RunKey

__all__ = ["AgentRun", "ChatCall", "RunTree", "ToolClaim"]

# Runs (chains, model calls, tool calls) tracked inside one agent run at any time. Ended runs are
# released as they end, so only a pathological fan-out reaches this; past it, new child runs are
# not tracked (their telemetry is skipped rather than memory growing).
MAX_RUNS_PER_AGENT: Final = 10_000
# Standalone model calls and tool runs waiting for their end (oldest dropped past this).
MAX_STANDALONE: Final = 10_000
# How many of the oldest agent runs are checked against the core registry per agent start.
PRUNE_BATCH: Final = 8


@dataclass(slots=True, eq=False)
class AgentRun:
    """What the adapter remembers about one open top-level run."""

    key: RunKey
    run_id: str
    started_monotonic: float
    members: set[RunKey] = field(default_factory=set)
    # Tool spans by tool run; None while the span is being started (claims the run id, so a
    # duplicate start cannot open a second span).
    tools: dict[RunKey, Span | None] = field(default_factory=dict)
    chat_calls: int = 0
    last_ai: AIShape | None = None
    interrupted: bool = False
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
    parent_span: Span | None = None  # standalone under a standalone tool: that tool's span


@dataclass(frozen=True, slots=True)
class ToolClaim:
    """A tool run claimed for a span: in an agent run, or standalone (maybe under a tool)."""

    agent: AgentRun | None
    parent_span: Span | None = None


Placement = Literal["agent", "standalone", "skip"]


class RunTree:
    """Agent runs, their child runs, and standalone calls; see the module docstring."""

    def __init__(self, max_agents: int) -> None:
        self._max_agents = max(max_agents, 1)
        self._lock = threading.Lock()
        self._agents: OrderedDict[RunKey, AgentRun] = OrderedDict()
        self._owner: dict[RunKey, AgentRun] = {}
        self._chats: dict[RunKey, ChatCall] = {}
        self._loose_chats: OrderedDict[RunKey, ChatCall] = OrderedDict()
        self._loose_tools: OrderedDict[RunKey, Span | None] = OrderedDict()

    @property
    def agent_count(self) -> int:
        with self._lock:
            return len(self._agents)

    @property
    def call_count(self) -> int:
        """Child runs, pending model calls and standalone tools held."""
        with self._lock:
            return (
                len(self._owner)
                + len(self._chats)
                + len(self._loose_chats)
                + len(self._loose_tools)
            )

    # --- agent runs ---------------------------------------------------------------------------

    def open_agent(self, agent: AgentRun) -> tuple[bool, list[Span]]:
        """Track a new agent run; (False, []) if its key is already tracked. Returns the open
        tool spans of agent runs evicted to stay within the cap."""
        with self._lock:
            if agent.key in self._owner:
                return False, []
            agent.members.add(agent.key)
            self._agents[agent.key] = agent
            self._owner[agent.key] = agent
            spans: list[Span] = []
            while len(self._agents) > self._max_agents:
                _, oldest = self._agents.popitem(last=False)
                spans.extend(self._forget_locked(oldest))
            return True, spans

    def close_agent(self, key: RunKey) -> tuple[AgentRun | None, list[Span]]:
        """Stop tracking agent run ``key``; returns it and its tool spans still open."""
        with self._lock:
            agent = self._agents.pop(key, None)
            return agent, (self._forget_locked(agent) if agent is not None else [])

    def discard(self, agent: AgentRun) -> list[Span]:
        """Drop ``agent`` if still tracked (the core refused or closed it)."""
        with self._lock:
            if self._agents.get(agent.key) is not agent:
                return []
            del self._agents[agent.key]
            return self._forget_locked(agent)

    def prune_candidates(self) -> list[AgentRun]:
        """The oldest announced agent runs, to check against the core's registry."""
        with self._lock:
            candidates: list[AgentRun] = []
            for agent in self._agents.values():
                if not agent.announced or len(candidates) >= PRUNE_BATCH:
                    break
                candidates.append(agent)
            return candidates

    # --- child chains -------------------------------------------------------------------------

    def adopt(self, key: RunKey, parent: RunKey) -> None:
        """Map child chain ``key`` to the agent run of ``parent`` (if that one is tracked)."""
        with self._lock:
            self._place_locked(key, parent)

    def release(self, key: RunKey, *, interrupted: bool = False) -> None:
        """A child chain ended; ``interrupted``: it ended on a LangGraph interrupt."""
        with self._lock:
            agent = self._release_locked(key)
            if agent is not None and interrupted:
                agent.interrupted = True

    # --- model calls --------------------------------------------------------------------------

    def start_call(self, key: RunKey, parent: RunKey | None, call: ChatCall) -> bool:
        """Track model call ``key``; False when it is a duplicate or cannot be tracked.

        ``call.agent`` and ``call.iteration`` are filled in here from the run tree.
        """
        with self._lock:
            if key in self._chats or key in self._loose_chats:
                return False
            placement, agent = self._place_locked(key, parent)
            if placement == "skip":
                return False
            if agent is not None:
                call.agent = agent
                call.iteration = agent.chat_calls
                agent.chat_calls += 1
                self._chats[key] = call
                return True
            call.agent = None
            call.parent_span = self._loose_tools.get(parent) if parent is not None else None
            self._loose_chats[key] = call
            if len(self._loose_chats) > MAX_STANDALONE:
                self._loose_chats.popitem(last=False)
            return True

    def end_call(self, key: RunKey, shape: AIShape | None) -> ChatCall | None:
        """Stop tracking model call ``key``; its AI message shape is the run's latest."""
        with self._lock:
            call = self._chats.pop(key, None)
            if call is None:
                return self._loose_chats.pop(key, None)
            agent = call.agent
            if agent is not None:
                self._release_locked(key)
                if shape is not None:
                    agent.last_ai = shape
            return call

    # --- tools --------------------------------------------------------------------------------

    def claim_tool(self, key: RunKey, parent: RunKey | None) -> ToolClaim | None:
        """Claim tool run ``key`` for one span; None for a duplicate start or a full run."""
        with self._lock:
            owner = self._owner.get(key)
            if (owner is not None and key in owner.tools) or key in self._loose_tools:
                return None
            placement, agent = self._place_locked(key, parent)
            if placement == "skip":
                return None
            if agent is not None:
                agent.tools[key] = None
                return ToolClaim(agent)
            parent_span = self._loose_tools.get(parent) if parent is not None else None
            self._loose_tools[key] = None
            return ToolClaim(None, parent_span)

    def attach_tool(self, key: RunKey, claim: ToolClaim, span: Span | None) -> bool:
        """Store the span started for a claim; False if the claim is gone (the caller ends it)."""
        with self._lock:
            agent = claim.agent
            if agent is not None:
                live = (
                    self._agents.get(agent.key) is agent
                    and key in agent.tools
                    and agent.tools[key] is None
                )
                if live and span is not None:
                    agent.tools[key] = span
                elif live:  # the core started nothing: free the claim
                    del agent.tools[key]
                    self._release_locked(key)
                return live
            live = key in self._loose_tools and self._loose_tools[key] is None
            if live and span is not None:
                self._loose_tools[key] = span
            elif live:
                del self._loose_tools[key]
            return live

    def evict_loose_tools(self) -> list[Span]:
        """Standalone tool spans past the cap, oldest first, for the caller to end."""
        with self._lock:
            spans: list[Span] = []
            while len(self._loose_tools) > MAX_STANDALONE:
                _, span = self._loose_tools.popitem(last=False)
                if span is not None:
                    spans.append(span)
            return spans

    def end_tool(self, key: RunKey, *, interrupted: bool) -> Span | None:
        """Stop tracking tool run ``key``; returns its span (None if it had none)."""
        with self._lock:
            if key in self._loose_tools:
                return self._loose_tools.pop(key)
            agent = self._release_locked(key)
            if agent is None:
                return None
            if interrupted:
                agent.interrupted = True
            return agent.tools.pop(key, None)

    def tool_span(self, key: RunKey) -> Span | None:
        with self._lock:
            span = self._loose_tools.get(key)
            if span is not None:
                return span
            agent = self._owner.get(key)
            return agent.tools.get(key) if agent is not None else None

    # --- bookkeeping (``*_locked``: caller holds ``self._lock``; no OTel calls inside) --------

    def _place_locked(
        self, key: RunKey, parent: RunKey | None
    ) -> tuple[Placement, AgentRun | None]:
        """Where child run ``key`` of ``parent`` belongs: its agent run, standalone, or nowhere
        (the agent run is at its child cap)."""
        agent = self._owner.get(parent) if parent is not None else None
        if agent is None:
            return "standalone", None
        if key not in agent.members:
            if len(agent.members) >= MAX_RUNS_PER_AGENT:
                return "skip", None
            agent.members.add(key)
            self._owner[key] = agent
        return "agent", agent

    def _release_locked(self, key: RunKey) -> AgentRun | None:
        """Forget a child run that ended; returns its agent run (None if untracked)."""
        agent = self._owner.get(key)
        if agent is None or agent.key == key:
            return agent
        del self._owner[key]
        agent.members.discard(key)
        return agent

    def _forget_locked(self, agent: AgentRun) -> list[Span]:
        """Drop every trace of ``agent``; returns its tool spans still open, to end outside."""
        for member in agent.members:
            if self._owner.get(member) is agent:
                del self._owner[member]
            call = self._chats.get(member)
            if call is not None and call.agent is agent:
                del self._chats[member]
        agent.members.clear()
        spans = [span for span in agent.tools.values() if span is not None]
        agent.tools.clear()
        return spans
