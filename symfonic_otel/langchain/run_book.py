"""The run tree's records and the bookkeeping done under its lock.

``RunBook`` holds what the run tree tracks (agent runs, the owner of each child run, pending
model calls, standalone spans, the runs of dropped agents) and the ``*_locked`` primitives that
place, release and forget runs; ``RunTree`` (``runs``) builds its operations on them. Every
``*_locked`` method expects the caller to hold ``self._lock`` and makes no OTel call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Final, Literal

from opentelemetry.trace import Span

from symfonic_otel.langchain.extract import RunKey
from symfonic_otel.langchain.state import AgentRun, ChatCall

__all__ = ["MAX_FORGOTTEN", "MAX_RUNS_PER_AGENT", "MAX_STANDALONE", "PRUNE_BATCH", "RunBook"]

# Runs (chains, model calls, tool calls) tracked inside one agent run at any time. Ended runs are
# released as they end, so only a pathological fan-out reaches this; past it, new child runs are
# not tracked (their telemetry is skipped rather than memory growing).
MAX_RUNS_PER_AGENT: Final = 10_000
# Standalone model calls and spans waiting for their end (oldest dropped past this).
MAX_STANDALONE: Final = 10_000
# Runs of dropped agent runs remembered, so their late steps start no runs (oldest forgotten):
# the open steps of the latest few thousand runs ended or evicted.
MAX_FORGOTTEN: Final = 4_096
# How many of the oldest agent runs are checked against the core registry per agent start.
PRUNE_BATCH: Final = 8

Placement = Literal["agent", "standalone", "skip"]


class RunBook:
    """The run tree's state and its lock-held bookkeeping; see the module docstring."""

    def __init__(self, max_agents: int) -> None:
        self._max_agents = max(max_agents, 1)
        self._lock = threading.Lock()
        self._agents: OrderedDict[RunKey, AgentRun] = OrderedDict()
        self._owner: dict[RunKey, AgentRun] = {}
        self._chats: dict[RunKey, ChatCall] = {}
        self._loose_chats: OrderedDict[RunKey, ChatCall] = OrderedDict()
        self._loose_spans: OrderedDict[RunKey, Span | None] = OrderedDict()
        self._forgotten: OrderedDict[RunKey, None] = OrderedDict()  # runs of dropped agents

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
            inside = self._inside_locked(agent, parent)
            if inside is not None:
                agent.enclosing[key] = inside
        return "agent", agent

    @staticmethod
    def _inside_locked(agent: AgentRun, key: RunKey | None) -> Span | None:
        if key is None or key == agent.key:
            return None
        return agent.spans.get(key) or agent.enclosing.get(key)

    def _release_locked(self, key: RunKey) -> AgentRun | None:
        """Forget a child run that ended; returns its agent run (None if untracked)."""
        agent = self._owner.get(key)
        if agent is None or agent.key == key:
            return agent
        del self._owner[key]
        agent.members.discard(key)
        agent.enclosing.pop(key, None)
        agent.chains.pop(key, None)
        return agent

    def _open_subagents_locked(self, agent: AgentRun, into: list[AgentRun]) -> None:
        for sub in list(agent.subagents.values()):
            self._open_subagents_locked(sub, into)
            into.append(sub)

    def _remember_locked(self, key: RunKey) -> None:
        self._forgotten[key] = None
        self._forgotten.move_to_end(key)
        if len(self._forgotten) > MAX_FORGOTTEN:
            self._forgotten.popitem(last=False)

    def _forget_locked(self, agent: AgentRun, calls: list[ChatCall] | None = None) -> list[Span]:
        """Drop every trace of ``agent`` and its sub-agents; returns their open spans (and
        collects their open model calls into ``calls``, if given)."""
        spans: list[Span] = []
        for sub in list(agent.subagents.values()):
            spans.extend(self._forget_locked(sub, calls))
        agent.subagents.clear()
        for member in agent.members:
            self._remember_locked(member)
            if self._owner.get(member) is agent:
                del self._owner[member]
            call = self._chats.get(member)
            if call is not None and call.agent is agent:
                del self._chats[member]
                if calls is not None:
                    calls.append(call)
        agent.members.clear()
        agent.enclosing.clear()
        agent.chains.clear()
        spans.extend(span for span in agent.spans.values() if span is not None)
        agent.spans.clear()
        return spans
