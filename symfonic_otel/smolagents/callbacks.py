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

A model call that raised is read from the step smolagents records on its way out: an
``ActionStep`` with neither a model output nor an error (smolagents re-raises the model's
failure as ``AgentGenerationError``, whose type the run's ``error.type`` names). The run ends as
``error`` there (``cancelled`` when it was interrupted, or its stream closed by its caller); the
exception reaches the caller unchanged.

The tenant is the ``tenant_scope`` around the run. Every callback is guarded: a failure is
counted in the handler's dropped events and never reaches the agent. A run left open otherwise
(callbacks detached mid-run) is ended as abandoned at the agent's next run, at ``close()``, or
at the handler's run TTL.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
import weakref
from collections.abc import Callable
from typing import Any, Final

from smolagents.memory import (  # type: ignore[import-untyped]  # smolagents ships no types
    ActionStep,
    FinalAnswerStep,
    MemoryStep,
    PlanningStep,
)

from symfonic_otel import semconv
from symfonic_otel.core.loops import DEFAULT_LOOP_THRESHOLD, DEFAULT_RUNAWAY_CALLS
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.invocation import FrameworkRun, RunBook, answered, loop_handler, positive
from symfonic_otel.invocation.adapter import BookAdapter
from symfonic_otel.read.content import json_text
from symfonic_otel.smolagents import steps

__all__ = ["SymfonicSmolagents"]

_NAME: Final = "SymfonicSmolagents"
_LEFT: Final = (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit)


class SymfonicSmolagents(BookAdapter):
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
        core = loop_handler(_NAME, handler, loop_threshold, runaway_calls)
        max_runs = positive(_NAME, "max_runs", max_runs)
        self._book = RunBook(core, _NAME, max_runs, evicted="run_evicted", prefix="smolagents")

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
        """End the runs still open (left mid-run) as abandoned; returns how many."""
        count = self._book.open_runs
        self._book.guard("abandon", self._book.close_all)
        return count

    # --- callbacks ------------------------------------------------------------------------------

    def _on_step(self, memory_step: Any, agent: Any = None) -> None:
        self._book.guard("step", self._step, memory_step, agent)

    def _on_final(self, memory_step: Any, agent: Any = None) -> None:
        self._book.guard("final_answer", self._final, memory_step, agent)

    def _step(self, step: Any, agent: Any) -> None:
        run = self._run_of(agent, step)
        timing = getattr(step, "timing", None)
        start_ns = steps.seconds_ns(getattr(timing, "start_time", None))
        end_ns = steps.seconds_ns(getattr(timing, "end_time", None))
        model = getattr(getattr(agent, "model", None), "model_id", None)
        model = model if isinstance(model, str) else ""
        label = {semconv.GEN_AI_AGENT_NAME: run.agent} if run.agent else None
        if steps.model_raised(step):  # on its way out: the caller gets the exception
            error = sys.exc_info()[1]
            if isinstance(error, _LEFT):  # interrupted, or a stream its caller stopped reading
                self._book.end(run.run_id, "cancelled")
                return
            error_type = type(error).__name__ if error is not None else semconv.OTHER_VALUE
            self._book.model_call(
                run, None, model=model, started_ns=start_ns, ended_ns=end_ns,
                error_type=error_type, attributes=label,
            )  # fmt: skip
            self._book.end(run.run_id, "error", error_type=error_type)
            return
        cap = steps.is_cap_step(step)
        if cap:
            run.capped = True
        usage = steps.usage_of(step)
        failed = cap and usage is None  # smolagents answered for a forced call that raised
        if cap or getattr(step, "model_output_message", None) is not None:
            self._book.model_call(
                run,
                steps.turn_of(step),
                model=model,
                usage=usage or {},
                started_ns=start_ns,
                ended_ns=end_ns,
                error_type=semconv.OTHER_VALUE if failed else None,
                node=semconv.NODE_SYNTHESIZE_FALLBACK if cap else "",
                attributes=label,
            )
        if isinstance(step, ActionStep) and not cap:
            self._tools(run, step, start_ns, end_ns)

    def _tools(
        self, run: FrameworkRun, step: Any, start_ns: int | None, end_ns: int | None
    ) -> None:
        """One span per tool call of the step, timed by the step (smolagents records no more).

        A step that failed marks each of its calls ``error.type`` (which of parallel calls
        raised is not recorded); its calls are then read from the model's output.
        """
        failed = getattr(step, "error", None) is not None
        error = semconv.TOOL_ERROR_TYPE if failed else None
        for call in steps.calls_of(step):
            call_id = call.call_id or ""
            self._book.tools.start(run, call.name, call_id, call.arguments, start_ns=start_ns)
            self._book.tools.end(run, call_id, None, error, end_ns=end_ns, capture_result=False)

    def _final(self, step: Any, agent: Any) -> None:
        run = self._book.bound(id(agent))
        if run is None or run.owner() is not agent:
            return  # a final answer with no step seen (the callbacks were attached mid-run)
        output = getattr(step, "output", None)
        text = output if isinstance(output, str) or output is None else json_text(output)[0]
        if run.capped:
            self._book.end(run.run_id, "forced", answer=text)
        else:
            self._book.end(run.run_id, "answered", answer=text, answered=answered(output))

    # --- runs -----------------------------------------------------------------------------------

    def _run_of(self, agent: Any, step: Any) -> FrameworkRun:
        """The agent's open run; a new one at its first step (ending one left open)."""
        run = self._book.bound(id(agent))
        number = getattr(step, "step_number", None)
        if run is not None:
            stale = run.owner() is not agent or (
                isinstance(number, int) and number <= run.facts and number == 1
            )
            if not stale:
                if isinstance(number, int):
                    run.facts = number  # the last step seen
                return run
            self._book.end(run.run_id, "abandoned")
        name = getattr(agent, "name", None)
        task = getattr(agent, "task", None)
        timing = getattr(step, "timing", None)
        opened = self._book.start(
            uuid.uuid4().hex,
            name if isinstance(name, str) else "",
            query=task if isinstance(task, str) else "",
            started_ns=steps.seconds_ns(getattr(timing, "start_time", None)),
            key=id(agent),
            owner=weakref.ref(agent),
            facts=number if isinstance(number, int) else 0,  # the last step seen
        )
        assert opened is not None  # a fresh id
        return opened
