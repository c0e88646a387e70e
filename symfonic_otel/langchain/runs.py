"""The adapter's run-tree state: which agent run each LangChain run belongs to.

The top-level run (no ``parent_run_id``, or a chain whose parent the adapter never saw: a handler
given to a sub-graph only) is an agent run; every other run is mapped to it
through ``parent_run_id`` alone. Ambient context is never used to find a run, so async tasks,
streaming, ``batch`` and thread pools cannot cross-wire two runs. A graph invoked inside the run
(a sub-graph as a node, or called from a node or a tool) becomes an agent run of its own, nested
in its parent: it is recognised when its first node starts (``promote``). A model or tool run
whose parent the adapter never saw (a handler attached to the model or the tool rather than to
the graph, or a bare ``model.invoke``) is *standalone*: it remembers the context current at its
start callback and is recorded as a call of its own.

All state is bounded: agent runs by count (oldest evicted), child runs per agent, standalone
calls and spans, and the remembered runs of dropped agent runs, by count. One lock guards it;
it is never held while calling into the OTel SDK (methods that drop state return the open spans
for the caller to end outside the lock).
"""

from __future__ import annotations

import time

from opentelemetry.trace import Span

from symfonic_otel.langchain.extract import AIShape, RunKey, run_id_text
from symfonic_otel.langchain.run_book import (
    MAX_FORGOTTEN,
    MAX_RUNS_PER_AGENT,
    MAX_STANDALONE,
    PRUNE_BATCH,
    RunBook,
)
from symfonic_otel.langchain.state import AgentRun, ChainStart, ChatCall, SpanClaim

__all__ = ["MAX_FORGOTTEN", "MAX_RUNS_PER_AGENT", "MAX_STANDALONE", "RunTree"]

# A closed agent run: the run, its open spans, its open sub-agent runs, its open model calls.
Closed = tuple[AgentRun | None, list[Span], list[AgentRun], list[ChatCall]]


class RunTree(RunBook):
    """Agent runs, their child runs, and standalone calls; see the module docstring."""

    @property
    def agent_count(self) -> int:
        with self._lock:
            return len(self._agents)

    @property
    def call_count(self) -> int:
        """Child runs, pending model calls and standalone spans held."""
        with self._lock:
            return (
                len(self._owner)
                + len(self._chats)
                + len(self._loose_chats)
                + len(self._loose_spans)
            )

    # --- agent runs ---------------------------------------------------------------------------

    def open_agent(self, agent: AgentRun) -> tuple[bool, list[Span]]:
        """Track a new top-level run; (False, []) if its key is already tracked. Returns the
        open spans of agent runs evicted to stay within the cap."""
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

    def promote(self, key: RunKey) -> tuple[AgentRun | None, ChainStart | None, Span | None]:
        """Chain ``key`` is a graph inside an agent run: make it a sub-agent run.

        Returns the new run, its start and the span it runs inside (None: under its parent run);
        (None, None, None) when ``key`` is no candidate (already a run, ended, untracked).
        """
        with self._lock:
            owner = self._owner.get(key)
            start = owner.chains.pop(key, None) if owner is not None else None
            if owner is None or start is None:
                return None, None, None
            sub = AgentRun(
                key=key,
                run_id=run_id_text(key),
                started_monotonic=time.monotonic()
                - max(time.time_ns() - start.started_ns, 0) / 1e9,
                parent=owner,
            )
            owner.members.discard(key)
            under = owner.enclosing.pop(key, None)
            sub.members.add(key)
            owner.subagents[key] = sub
            self._owner[key] = sub
            return sub, start, under

    def close_agent(self, key: RunKey) -> Closed:
        """Stop tracking agent run ``key`` (top-level or sub-agent): returns it, its spans still
        open, its sub-agent runs still open (innermost first) and its model calls still open
        (cancelled mid-call, a stream left early), for the caller to end."""
        with self._lock:
            agent = self._agents.pop(key, None)
            if agent is None:
                owner = self._owner.get(key)
                if owner is None or owner.key != key or owner.parent is None:
                    return None, [], [], []
                agent = owner
                agent.parent.subagents.pop(key, None)  # type: ignore[union-attr]
                agent.parent.members.discard(key)  # type: ignore[union-attr]
            left: list[AgentRun] = []
            self._open_subagents_locked(agent, left)
            calls: list[ChatCall] = []
            return agent, self._forget_locked(agent, calls), left, calls

    def outside(self, key: RunKey, parent: RunKey) -> tuple[bool, Span | None]:
        """Whether chain ``key``'s parent belongs to no agent run here (a handler given to a
        sub-graph or a tool only sees runs from there down), and its standalone span, if any.

        A parent of a run dropped here (ended, evicted) is not outside: its late children are
        remembered with it, so a run cut short never turns into a swarm of new runs.
        """
        with self._lock:
            if parent in self._owner:
                return False, None
            if parent in self._forgotten:
                self._remember_locked(key)
                return False, None
            return True, self._loose_spans.get(parent)

    def pause(self, key: RunKey) -> None:
        """Graph run ``key`` stopped on an interrupt (LangGraph's ``on_interrupt``, static
        breakpoints included); its end decides whether it paused (see ``Translator``)."""
        with self._lock:
            agent = self._owner.get(key)
            if agent is not None:
                agent.at_breakpoint = True

    def is_agent(self, key: RunKey) -> bool:
        with self._lock:
            owner = self._owner.get(key)
            return owner is not None and owner.key == key

    def discard(self, agent: AgentRun) -> list[Span]:
        """Drop ``agent`` if still tracked (the core refused or closed it)."""
        with self._lock:
            if agent.parent is not None:
                if agent.parent.subagents.pop(agent.key, None) is None:
                    return []
                return self._forget_locked(agent)
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

    def adopt(self, key: RunKey, parent: RunKey, start: ChainStart | None) -> AgentRun | None:
        """Map child chain ``key`` to the agent run of ``parent``; ``start`` keeps it as a
        possible sub-graph. Returns its agent run (None if not tracked)."""
        with self._lock:
            _, agent = self._place_locked(key, parent)
            if agent is not None and start is not None:
                agent.chains[key] = start
            return agent

    def release(
        self, key: RunKey, *, interrupted: bool = False, closing: str | None = None
    ) -> Span | None:
        """A child chain ended (``interrupted``: on a LangGraph interrupt; ``closing``: it
        jumped to the run's end with that closing message); returns its span."""
        with self._lock:
            agent = self._release_locked(key)
            if agent is None:
                return None
            if interrupted:
                agent.interrupted = True
            if closing is not None:
                agent.closing_message = closing
            return agent.spans.pop(key, None)

    # --- model calls --------------------------------------------------------------------------

    def start_call(self, key: RunKey, parent: RunKey | None, call: ChatCall) -> bool:
        """Track model call ``key``; False when it is a duplicate or cannot be tracked.

        ``call.agent``, ``call.iteration`` and ``call.parent_span`` are filled in here.
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
                call.parent_span = self._inside_locked(agent, parent)
                agent.chat_calls += 1
                self._chats[key] = call
                return True
            call.agent = None
            call.parent_span = self._loose_spans.get(parent) if parent is not None else None
            self._loose_chats[key] = call
            if len(self._loose_chats) > MAX_STANDALONE:
                self._loose_chats.popitem(last=False)
            return True

    def first_chunk(self, key: RunKey, now_ns: int) -> None:
        """A streamed chunk of model call ``key`` arrived (only the first one is kept)."""
        with self._lock:
            call = self._chats.get(key) or self._loose_chats.get(key)
            if call is not None and call.first_chunk_ns is None:
                call.first_chunk_ns = now_ns

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

    # --- spans of child runs: tools, retrievals, graph nodes ----------------------------------

    def claim_span(self, key: RunKey, parent: RunKey | None) -> SpanClaim | None:
        """Claim run ``key`` for one span; None for a duplicate start or a full run."""
        with self._lock:
            owner = self._owner.get(key)
            if (owner is not None and key in owner.spans) or key in self._loose_spans:
                return None
            placement, agent = self._place_locked(key, parent)
            if placement == "skip":
                return None
            if agent is not None:
                agent.spans[key] = None
                return SpanClaim(agent, self._inside_locked(agent, parent))
            parent_span = self._loose_spans.get(parent) if parent is not None else None
            self._loose_spans[key] = None
            return SpanClaim(None, parent_span)

    def claim_chain_span(self, key: RunKey) -> SpanClaim | None:
        """Claim an adopted chain (a graph node) for a span."""
        with self._lock:
            agent = self._owner.get(key)
            if agent is None or agent.key == key or key in agent.spans:
                return None
            agent.spans[key] = None
            return SpanClaim(agent, agent.enclosing.get(key))

    def attach_span(self, key: RunKey, claim: SpanClaim, span: Span | None) -> bool:
        """Store the span started for a claim; False if the claim is gone (the caller ends it)."""
        with self._lock:
            agent = claim.agent
            if agent is not None:
                live = (
                    self._owner.get(key) is agent
                    and key in agent.spans
                    and agent.spans[key] is None
                )
                if live and span is not None:
                    agent.spans[key] = span
                elif live:  # the core started nothing: free the claim
                    del agent.spans[key]
                return live
            live = key in self._loose_spans and self._loose_spans[key] is None
            if live and span is not None:
                self._loose_spans[key] = span
            elif live:
                del self._loose_spans[key]
            return live

    def evict_loose_spans(self) -> list[Span]:
        """Standalone spans past the cap, oldest first, for the caller to end."""
        with self._lock:
            spans: list[Span] = []
            while len(self._loose_spans) > MAX_STANDALONE:
                _, span = self._loose_spans.popitem(last=False)
                if span is not None:
                    spans.append(span)
            return spans

    def end_span(self, key: RunKey, *, interrupted: bool) -> Span | None:
        """Stop tracking the tool / retrieval run ``key``; returns its span (None if none)."""
        with self._lock:
            if key in self._loose_spans:
                return self._loose_spans.pop(key)
            agent = self._owner.get(key)
            if agent is None or agent.key == key:
                return None
            span = agent.spans.pop(key, None)
            self._release_locked(key)
            if interrupted:
                agent.interrupted = True
            return span

    def span_of(self, key: RunKey) -> tuple[AgentRun | None, Span | None]:
        """The innermost span run ``key`` runs inside: its own, or an enclosing one; else its
        agent run (for the caller to take the run span)."""
        with self._lock:
            span = self._loose_spans.get(key)
            if span is not None:
                return None, span
            agent = self._owner.get(key)
            if agent is None:
                return None, None
            return agent, self._inside_locked(agent, key)
