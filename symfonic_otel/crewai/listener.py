"""``SymfonicListener``: a CrewAI event listener recording agent runs, model calls, tools, bails.

``SymfonicListener()`` registers on CrewAI's event bus (``BaseEventListener``), CrewAI's
supported extension point; ``close()`` unregisters it. Each agent execution (one agent working
one task) is one ``invoke_agent`` run named after the agent's role; its LLM calls become ``chat``
spans and its tool usages ``execute_tool`` spans. The handlers are async, so the bus runs them in
the order the events were emitted, on its own loop, never on the agent's thread.

The step cap, by structure: CrewAI's executor counts iterations and, once the count reaches the
agent's ``max_iter``, makes one more LLM call telling the model to give its best final answer and
returns it (an empty reply raises). A run whose executor's iteration count reached ``max_iter``
is a silent bail with stop reason ``recursion_limit``, and its last model call is that forced
answer: a synthesis fallback (node ``react_synthesize_fallback``, ``synthesis.recovered`` true
when it produced text). The prompt text is never read.

The tenant is the crew's ``kickoff(inputs={"tenant_id": ...})``, else the handler's default:
the bus runs handlers outside the caller's context, so ``tenant_scope`` does not reach them.
Every handler is guarded; a failure is counted, never raised.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Final, Unpack

from crewai.events import crewai_event_bus
from crewai.events.types.agent_events import (
    AgentExecutionCompletedEvent,
    AgentExecutionErrorEvent,
    AgentExecutionStartedEvent,
)
from crewai.events.types.crew_events import CrewKickoffStartedEvent
from crewai.events.types.llm_events import (
    LLMCallCompletedEvent,
    LLMCallFailedEvent,
    LLMCallStartedEvent,
)
from crewai.events.types.tool_usage_events import (
    ToolUsageErrorEvent,
    ToolUsageFinishedEvent,
    ToolUsageStartedEvent,
)

from symfonic_otel import semconv
from symfonic_otel.crewai.read import executor_reached_cap, turn_of, usage_of
from symfonic_otel.invocation import Ending, FrameworkRun, tenant_in
from symfonic_otel.invocation.adapter import BookAdapter, BookOptions
from symfonic_otel.invocation.calls import HeldCall

__all__ = ["SymfonicListener"]

_NAME: Final = "SymfonicListener"
_MAX_SCOPES: Final = 64  # event scopes remembered per run


class SymfonicListener(BookAdapter):
    """Records every agent execution on CrewAI's event bus; see the module docstring.

    Its options are ``BookAdapter``'s.
    """

    adapter_name = _NAME
    max_keys = _MAX_SCOPES

    def __init__(self, **options: Unpack[BookOptions]) -> None:
        super().__init__(**options)
        self._tenants: OrderedDict[int, str] = OrderedDict()  # crew -> its kickoff's tenant
        on = self._on
        self._handlers: list[tuple[type[Any], Any]] = [
            (CrewKickoffStartedEvent, self._on_kickoff),
            (AgentExecutionStartedEvent, on("agent_start", self._start)),
            (AgentExecutionCompletedEvent, on("agent_end", self._end)),
            (AgentExecutionErrorEvent, on("agent_end", self._end)),
            (LLMCallStartedEvent, on("llm_start", self._llm_start)),
            (LLMCallCompletedEvent, on("llm_end", self._llm_end)),
            (LLMCallFailedEvent, on("llm_end", self._llm_end)),
            (ToolUsageStartedEvent, on("tool_start", self._tool_start)),
            (ToolUsageFinishedEvent, on("tool_end", self._tool_end)),
            (ToolUsageErrorEvent, on("tool_end", self._tool_end)),
        ]
        for event_type, handler_fn in self._handlers:
            crewai_event_bus.on(event_type)(handler_fn)

    def close(self) -> None:
        """Unregister from the event bus and end the runs still open as ``abandoned``."""
        for event_type, handler_fn in self._handlers:
            crewai_event_bus.off(event_type, handler_fn)
        self._book.guard("close", self._book.close_all)

    # --- the bus's handlers (async: run in emission order on the bus's loop) ------------------

    async def _on_kickoff(self, source: Any, event: CrewKickoffStartedEvent) -> None:
        self._book.guard("crew_kickoff", self._kickoff, source, event)

    def _on(self, kind: str, work: Callable[[Any], None]) -> Callable[[Any, Any], Awaitable[None]]:
        """A bus handler doing ``work(event)`` guarded as ``kind`` (the source unused)."""

        async def handle(source: Any, event: Any) -> None:
            self._book.guard(kind, work, event)

        return handle

    # --- runs ------------------------------------------------------------------------------------

    def _kickoff(self, source: Any, event: CrewKickoffStartedEvent) -> None:
        tenant = tenant_in(event.inputs)
        crew = event.crew if event.crew is not None else source  # the crew emits its kickoff
        if crew is not None and tenant is not None:
            self._tenants[id(crew)] = tenant
            while len(self._tenants) > self._book.max_open_runs:
                self._tenants.popitem(last=False)

    def _start(self, event: AgentExecutionStartedEvent) -> None:
        agent = event.agent
        crew = getattr(agent, "crew", None)
        role = getattr(agent, "role", None)
        self._book.start(
            event.event_id,
            role if isinstance(role, str) else "",
            tenant=self._tenants.get(id(crew)) if crew is not None else None,
            query=event.task_prompt if isinstance(event.task_prompt, str) else "",
            owner=agent,
            facts=str(getattr(agent, "id", "")),  # what LLM and tool events name it by
        )

    def _end(self, event: Any) -> None:
        agent = getattr(event, "agent", None)
        run = self._book.runs.newest(lambda run: run.owner is agent)
        if run is None:
            return
        capped = run.capped or executor_reached_cap(run.owner)
        error = isinstance(event, AgentExecutionErrorEvent)
        self._book.flush(run, synthesis=capped)
        output = None if error else getattr(event, "output", None)
        answer = output if isinstance(output, str) else None
        if capped:
            ending: Ending = "capped_raised" if error else "capped"
        else:
            ending = "error" if error else "answered"
        self._book.end(run.run_id, ending, answer=answer, error_type=semconv.OTHER_VALUE)

    def _run_of(self, event: Any) -> FrameworkRun | None:
        """The run an LLM or tool event belongs to: its agent's, else (an LLM call made without
        its agent, as the forced final answer is) the run its scope was seen in, else the only
        open run."""
        agent_id = getattr(event, "agent_id", None)
        scope = getattr(event, "parent_event_id", None)
        runs = self._book.runs
        if agent_id:
            run = runs.newest(lambda run: run.facts == agent_id)
            if run is not None:
                if scope:
                    runs.index(run, scope)
                return run
        if scope:
            found = runs.owner(scope)
            if found is not None:
                return found
        only = runs.values()
        return only[0] if len(only) == 1 else None

    # --- model calls -----------------------------------------------------------------------------

    def _llm_start(self, event: LLMCallStartedEvent) -> None:
        run = self._run_of(event)
        if run is None:
            return
        self._book.flush(run, synthesis=False)  # the call before this one was not the last
        if executor_reached_cap(run.owner):
            run.capped = True
        self._book.call_started(run, event.call_id)

    def _llm_end(self, event: Any) -> None:
        run = self._run_of(event)
        if run is None:
            return
        started = run.call_starts.pop(event.call_id, None)
        failed = isinstance(event, LLMCallFailedEvent)
        model = event.model if isinstance(event.model, str) else ""
        self._book.hold(
            run,
            HeldCall(
                None if failed else turn_of(getattr(event, "response", None)),
                {
                    "model": model,
                    "usage": {} if failed else usage_of(getattr(event, "usage", None)),
                    "started_ns": started,
                    "error_type": semconv.OTHER_VALUE if failed else None,
                    "ended_ns": time.time_ns(),
                },
            ),
        )

    # --- tools ------------------------------------------------------------------------------

    def _tool_start(self, event: ToolUsageStartedEvent) -> None:
        run = self._run_of(event)
        if run is not None:
            call_id = self._book.tools.named_id(run, event.tool_name)
            self._book.start_tool(run, event.tool_name, call_id, event.tool_args)

    def _tool_end(self, event: Any) -> None:
        run = self._run_of(event)
        if run is None:
            return
        failed = isinstance(event, ToolUsageErrorEvent) or getattr(event, "failure", None)
        output = getattr(event, "output", None)
        self._book.tools.end_named(run, event.tool_name, output, "ToolError" if failed else None)
