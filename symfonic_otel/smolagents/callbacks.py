"""``SymfonicSmolagents``: smolagents step callbacks recording runs, model calls, tools and caps.

``CodeAgent(..., step_callbacks=adapter.step_callbacks())`` or ``adapter.attach(agent)``: step
callbacks are smolagents' extension point (nothing is patched). An agent's run is opened at its
first step and ended at its ``FinalAnswerStep``; each ``ActionStep`` / ``PlanningStep`` is a
``chat`` call (timed by its step, usage from its record), each of a step's tool calls an
``execute_tool`` span.

The step cap is read from the memory step smolagents appends when ``max_steps`` ran out: an
``ActionStep`` whose ``error`` is an ``AgentMaxStepsError`` (the run's full result then has
``state="max_steps_error"``). It holds the forced final-answer call: recorded as the run's
synthesis fallback (node ``react_synthesize_fallback``), recovered when that call returned a
message (smolagents' models report its token usage; a failed call leaves none) with text. The
run returns normally; it is a silent bail with stop reason ``recursion_limit``.

The tenant is the ``tenant_scope`` around the run. Every callback is guarded: a failure is
counted in the handler's dropped events and never reaches the agent. A run that raises never
reaches its ``FinalAnswerStep``: it is ended as abandoned when the agent starts its next run,
at ``close()``, or at the handler's run TTL.
"""

from __future__ import annotations

import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opentelemetry.util.types import AttributeValue
from smolagents.memory import (  # type: ignore[import-untyped]  # smolagents ships no types
    ActionStep,
    FinalAnswerStep,
    MemoryStep,
    PlanningStep,
)

from symfonic_otel import semconv
from symfonic_otel.core.loops import DEFAULT_LOOP_THRESHOLD, DEFAULT_RUNAWAY_CALLS
from symfonic_otel.core.run_end import AdapterRunEnd
from symfonic_otel.events import AgentStartEvent, LLMEndEvent, TerminationReason
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.invocation import loop_handler
from symfonic_otel.read.content import json_text
from symfonic_otel.read.turns import Turn, bail_event, captured
from symfonic_otel.smolagents import steps

__all__ = ["SymfonicSmolagents"]


@dataclass(slots=True)
class _Run:
    run_id: str
    agent: weakref.ReferenceType[Any]
    label: str
    calls: int = 0
    last_step: int = 0
    last: Turn | None = None
    capped: bool = False
    recovered: bool = False


def _answered(output: object) -> bool:
    if isinstance(output, str):
        return bool(output.strip())
    return output is not None


class SymfonicSmolagents:
    """Records smolagents runs; see the module docstring.

    ``handler`` shares an ``OTelCallbackHandler``; by default one on the global providers is
    built. ``max_runs`` bounds the runs followed at once (the oldest is ended as abandoned).
    """

    def __init__(
        self,
        handler: OTelCallbackHandler | None = None,
        *,
        max_runs: int = 10_000,
        loop_threshold: int = DEFAULT_LOOP_THRESHOLD,
        runaway_calls: int = DEFAULT_RUNAWAY_CALLS,
    ):
        if handler is not None and not isinstance(handler, OTelCallbackHandler):
            raise TypeError(
                "SymfonicSmolagents: handler must be an OTelCallbackHandler, "
                f"got {type(handler).__name__}"
            )
        if isinstance(max_runs, bool) or not isinstance(max_runs, int) or max_runs < 1:
            raise ValueError(
                f"SymfonicSmolagents: max_runs must be a positive int, got {max_runs!r}"
            )
        self.core = loop_handler("SymfonicSmolagents", handler, loop_threshold, runaway_calls)
        self._max_runs = max_runs
        self._runs: OrderedDict[int, _Run] = OrderedDict()  # by id(agent), checked by weakref
        # Hooks come from worker threads too (sync steps, parallel tools): one at a time.
        self._lock = threading.RLock()

    # --- installation -------------------------------------------------------------------------

    def step_callbacks(self) -> dict[type[MemoryStep], Callable[..., None]]:
        """For ``step_callbacks=`` of an agent's constructor."""
        return {
            ActionStep: self._on_step,
            PlanningStep: self._on_step,
            FinalAnswerStep: self._on_final,
        }

    def attach(self, agent: Any) -> Any:
        """Register the callbacks on an existing agent's ``step_callbacks``; returns the agent."""
        for step_cls, callback in self.step_callbacks().items():
            agent.step_callbacks.register(step_cls, callback)
        return agent

    def close(self) -> int:
        """End the runs still open (their agent raised) as abandoned; returns how many."""
        with self._lock:
            runs = list(self._runs.values())
            self._runs.clear()
        for run in runs:
            self._guard("abandon", self._abandon, run)
        return len(runs)

    @property
    def open_runs(self) -> int:
        return len(self._runs)

    # --- callbacks ------------------------------------------------------------------------------

    def _on_step(self, memory_step: Any, agent: Any = None) -> None:
        self._guard("step", self._step, memory_step, agent)

    def _on_final(self, memory_step: Any, agent: Any = None) -> None:
        self._guard("final_answer", self._final, memory_step, agent)

    def _step(self, step: Any, agent: Any) -> None:
        run = self._run_of(agent, step)
        turn = steps.turn_of(step)
        timing = getattr(step, "timing", None)
        start_ns = steps.seconds_ns(getattr(timing, "start_time", None))
        end_ns = steps.seconds_ns(getattr(timing, "end_time", None))
        cap = steps.is_cap_step(step)
        if cap:
            run.capped = True
            self._bail(run, "tool_calls_with_no_text")  # the bail, then its recovery call
        usage = steps.usage_of(step)
        failed = cap and usage is None  # smolagents answered for a forced call that raised
        if cap:
            run.recovered = not failed and bool(turn.text.strip())
        model = getattr(getattr(agent, "model", None), "model_id", None)
        if cap or getattr(step, "model_output_message", None) is not None:
            self.core.llm_end(
                LLMEndEvent(
                    model=model if isinstance(model, str) else "",
                    output=turn.text,  # the core gates it on capture
                    usage=usage or {},
                    run_id=run.run_id,
                    node_name=semconv.NODE_SYNTHESIZE_FALLBACK if cap else "",
                    iteration_index=run.calls,
                    outcome="error" if failed else "completed",
                ),
                start_time_ns=start_ns,
                end_time_ns=end_ns,
                error_type=semconv.OTHER_VALUE if failed else None,
                attributes={semconv.GEN_AI_AGENT_NAME: run.label} if run.label else None,
            )
            run.calls += 1
        if isinstance(step, ActionStep) and not cap:
            run.last = turn
            self._tools(run, step, start_ns, end_ns)

    def _tools(self, run: _Run, step: Any, start_ns: int | None, end_ns: int | None) -> None:
        """One span per tool call of the step, timed by the step (smolagents records no more).

        A step that failed marks each of its calls ``error.type`` (which of parallel calls
        raised is not recorded); its calls are then read from the model's output.
        """
        failed = getattr(step, "error", None) is not None
        for call in steps.calls_of(step):
            attributes: dict[str, AttributeValue] = {}
            if self.core.capture_content:
                attributes.update(captured(semconv.GEN_AI_TOOL_CALL_ARGUMENTS, call.arguments))
            span = self.core.start_tool(
                run.run_id,
                call.name,
                call_id=call.call_id,
                start_time_ns=start_ns,
                attributes=attributes,
                arguments=call.arguments,
            )
            self.core.end_tool(
                span, error_type=semconv.TOOL_ERROR_TYPE if failed else None, end_time_ns=end_ns
            )

    def _final(self, step: Any, agent: Any) -> None:
        run = self._runs.pop(id(agent), None)
        if run is None or run.agent() is not agent:
            return  # a final answer with no step seen (the callbacks were attached mid-run)
        output = getattr(step, "output", None)
        answered = run.recovered if run.capped else _answered(output)
        if not run.capped and not answered:
            last = run.last
            self._bail(
                run,
                "tool_calls_with_no_text"
                if last is not None and last.tool_calls
                else "no_content_no_tool_calls",
            )
        final = None
        if self.core.capture_content and answered:
            final = output if isinstance(output, str) else json_text(output)[0]
        stop = semconv.STOP_REASON_RECURSION_LIMIT if run.capped else "end_turn"
        self.core.agent_end(
            AdapterRunEnd(run.run_id, "completed", final, stop_reason=stop), answered=answered
        )

    # --- runs -----------------------------------------------------------------------------------

    def _run_of(self, agent: Any, step: Any) -> _Run:
        """The agent's open run; a new one at its first step (ending one left by a raised run)."""
        key = id(agent)
        run = self._runs.get(key)
        number = getattr(step, "step_number", None)
        if run is not None:
            stale = run.agent() is not agent or (
                isinstance(number, int) and number <= run.last_step and number == 1
            )
            if not stale:
                if isinstance(number, int):
                    run.last_step = number
                return run
            del self._runs[key]
            self._abandon(run)
        while len(self._runs) >= self._max_runs:
            _, old = self._runs.popitem(last=False)
            self.core.adapter_failed("smolagents.run_evicted")
            self._abandon(old)
        name = getattr(agent, "name", None)
        run = _Run(uuid.uuid4().hex, weakref.ref(agent), name if isinstance(name, str) else "")
        run.last_step = number if isinstance(number, int) else 0
        self._runs[key] = run
        timing = getattr(step, "timing", None)
        task = getattr(agent, "task", None)
        attributes: dict[str, AttributeValue] = {}
        if run.label:
            attributes[semconv.GEN_AI_AGENT_NAME] = run.label
        self.core.agent_start(
            AgentStartEvent(
                query=task if self.core.capture_content and isinstance(task, str) else "",
                run_id=run.run_id,
            ),
            start_time_ns=steps.seconds_ns(getattr(timing, "start_time", None)) or time.time_ns(),
            attributes=attributes,
        )
        return run

    def _bail(self, run: _Run, reason: TerminationReason) -> None:
        self.core.react_loop_end(bail_event(run.run_id, run.calls - 1, run.last, reason))

    def _abandon(self, run: _Run) -> None:
        self.core.agent_end(AdapterRunEnd(run.run_id, "abandoned"))

    def _guard(self, kind: str, work: Callable[..., None], *args: Any) -> None:
        try:
            with self._lock:
                work(*args)
        except Exception as exc:  # never into the agent
            self.core.adapter_failed(f"smolagents.{kind}", exc)
