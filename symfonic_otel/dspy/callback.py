"""``SymfonicCallback``: a DSPy callback recording program runs, LM calls, tools and bails.

``dspy.configure(callbacks=[SymfonicCallback()])`` (or ``dspy.context(callbacks=[...])``).
Callbacks are DSPy's supported extension point: every module call, LM call and tool call fires
``on_*_start`` / ``on_*_end``, on the caller's thread and context, for ``program(...)``,
``program.acall(...)`` and ``dspy.streamify(program)`` alike. A module called outside any other
(the program) is one ``invoke_agent`` run named after its class; what runs inside it belongs to
it (DSPy's active call id gives the parent of each call).

The step cap, by structure: ``dspy.ReAct`` runs its ``react`` predictor at most ``max_iters``
times, then its ``extract`` step writes the answer from the trajectory whatever happened. An
``extract`` that starts after ``max_iters`` successful ``react`` steps none of which chose
``finish`` is a forced answer: the run is a silent bail with stop reason ``recursion_limit``
and the extract's LM call a synthesis fallback (node ``react_synthesize_fallback``,
``synthesis.recovered`` true when it produced an answer). ``extract`` runs on every healthy run
too; there it is an ordinary model call. ReAct's own ``finish`` pseudo-tool is not a tool call.

The tenant is the ``tenant_scope`` around the call. Every callback is guarded; a failure is
counted, never raised.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

import dspy
from dspy.utils.callback import BaseCallback
from dspy.utils.callback_context import ACTIVE_CALL_ID

from symfonic_otel import semconv
from symfonic_otel.core.loops import DEFAULT_LOOP_THRESHOLD, DEFAULT_RUNAWAY_CALLS
from symfonic_otel.dspy.read import answer_of, call_kwargs, lm_turn, lm_usage
from symfonic_otel.framework_runs import Ending, FrameworkRun, RunBook, Turn, loop_handler
from symfonic_otel.handler import OTelCallbackHandler

__all__ = ["SymfonicCallback"]

_NAME: Final = "SymfonicCallback"
_FINISH: Final = "finish"
_MAX_FRAMES: Final = 100_000
_MAX_PENDING: Final = 16
_MAX_QUERY: Final = 65_536


@dataclass(slots=True)
class _Call:
    """An LM call of an ``extract`` step, recorded once the step tells what it was."""

    turn: Turn | None
    model: str
    usage: dict[str, int]
    started_ns: int
    ended_ns: int
    error_type: str | None


@dataclass(slots=True)
class _Frame:
    """One DSPy call in flight: its run, and the ReAct it is part of."""

    run_id: str
    instance: Any
    root: _Frame | None = None  # the run's own frame (None: this is it)
    react: _Frame | None = None  # the enclosing ReAct call
    in_extract: bool = False
    is_extract: bool = False
    capped: bool = False  # the run (root) or this ReAct's extract (react) is a forced answer
    steps: int = 0  # a ReAct's successful react steps
    last_tool: str | None = None
    max_iters: int = 0
    pending: list[_Call] = field(default_factory=list)
    started_ns: int = field(default_factory=time.time_ns)
    messages: Any = None


class SymfonicCallback(BaseCallback):
    """A DSPy callback recording every program run; see the module docstring.

    ``handler`` shares an ``OTelCallbackHandler`` (its providers, content capture, tenant
    budgets) with other adapters; by default one on the global providers is built.
    """

    def __init__(
        self,
        *,
        handler: OTelCallbackHandler | None = None,
        max_open_runs: int = 10_000,
        loop_threshold: int = DEFAULT_LOOP_THRESHOLD,
        runaway_calls: int = DEFAULT_RUNAWAY_CALLS,
    ) -> None:
        handler = loop_handler(_NAME, handler, loop_threshold, runaway_calls)
        self._book = RunBook(handler, _NAME, max_open_runs)
        self._frames: OrderedDict[str, _Frame] = OrderedDict()
        self._ids = itertools.count(1)

    @property
    def handler(self) -> OTelCallbackHandler:
        return self._book.handler

    @property
    def open_runs(self) -> int:
        return self._book.open_runs

    # --- DSPy's callbacks ----------------------------------------------------------------------

    def on_module_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        self._book.guard("module_start", self._module_start, call_id, instance, inputs)

    def on_module_end(
        self, call_id: str, outputs: Any | None, exception: BaseException | None = None
    ) -> None:
        self._book.guard("module_end", self._module_end, call_id, outputs, exception)

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        self._book.guard("lm_start", self._lm_start, call_id, instance, inputs)

    def on_lm_end(
        self, call_id: str, outputs: Any | None, exception: BaseException | None = None
    ) -> None:
        self._book.guard("lm_end", self._lm_end, call_id, outputs, exception)

    def on_tool_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        self._book.guard("tool_start", self._tool_start, call_id, instance, inputs)

    def on_tool_end(
        self, call_id: str, outputs: Any | None, exception: BaseException | None = None
    ) -> None:
        self._book.guard("tool_end", self._tool_end, call_id, outputs, exception)

    # --- frames ----------------------------------------------------------------------------

    def _parent(self) -> _Frame | None:
        parent_id = ACTIVE_CALL_ID.get()
        return self._frames.get(parent_id) if isinstance(parent_id, str) else None

    def _push(self, call_id: str, frame: _Frame) -> None:
        self._frames[call_id] = frame
        while len(self._frames) > _MAX_FRAMES:
            self._frames.popitem(last=False)

    def _child(self, parent: _Frame, instance: Any) -> _Frame:
        root = parent.root or parent
        frame = _Frame(parent.run_id, instance, root, parent.react, parent.in_extract)
        react = parent.react
        if isinstance(instance, dspy.ReAct):
            frame.react, frame.in_extract = frame, False
        elif parent is react and instance is getattr(react.instance, "extract", None):
            frame.in_extract = frame.is_extract = True
            if react.steps >= react.max_iters > 0 and react.last_tool != _FINISH:
                react.capped = root.capped = True  # the loop ran out: this is a forced answer
        return frame

    # --- modules: runs, ReAct steps, the extract -----------------------------------------------

    def _module_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        parent = self._parent()
        if parent is None:
            run_id = f"dspy-{next(self._ids)}"
            frame = _Frame(run_id, instance)
            frame.react = frame if isinstance(instance, dspy.ReAct) else None
            self._push(call_id, frame)
            self._book.start(run_id, type(instance).__name__[:64], query=_query(inputs))
        else:
            frame = self._child(parent, instance)
            self._push(call_id, frame)
        if frame.react is frame:
            max_iters = call_kwargs(inputs).get("max_iters", getattr(instance, "max_iters", 0))
            frame.max_iters = max_iters if isinstance(max_iters, int) else 0

    def _module_end(self, call_id: str, outputs: Any, exception: BaseException | None) -> None:
        frame = self._frames.pop(call_id, None)
        if frame is None:
            return
        react = frame.react
        if (
            react is not None
            and react is not frame
            and exception is None
            and frame.instance is getattr(react.instance, "react", None)
        ):
            react.steps += 1  # a react step that returned (a failed one ends the loop)
            tool = getattr(outputs, "next_tool_name", None)
            react.last_tool = tool if isinstance(tool, str) else None
        if frame.is_extract and react is not None:
            self._flush(frame, answer_of(react.instance, outputs) if exception is None else None)
        if frame.root is None:
            self._end_run(frame, outputs, exception)

    def _flush(self, extract: _Frame, answer: str | None) -> None:
        """The extract's LM calls: the last one is the forced answer when its ReAct ran out."""
        react = extract.react
        run = self._book.get(extract.run_id)
        if react is None or run is None:
            return
        calls, react.pending = react.pending, []
        for index, call in enumerate(calls):
            forced = react.capped and index == len(calls) - 1
            turn = call.turn
            if forced and call.error_type is None:
                turn = Turn.of([answer] if answer else [], 0, turn.finish_reason if turn else None)
            self._record(run, call, turn, semconv.NODE_SYNTHESIZE_FALLBACK if forced else "")

    def _end_run(self, frame: _Frame, outputs: Any, exception: BaseException | None) -> None:
        if frame.react is not None:
            self._flush(frame, None)  # an extract that never ended
        error = type(exception).__name__[:128] if exception is not None else None
        if isinstance(exception, KeyboardInterrupt) or _cancelled(exception):
            self._book.end(frame.run_id, "cancelled")
        elif frame.capped:
            answer = answer_of(frame.instance, outputs) if error is None else None
            ending: Ending = "capped_raised" if error is not None else "capped"
            self._book.end(frame.run_id, ending, answer=answer, error_type=error)
        elif error is not None:
            self._book.end(frame.run_id, "error", error_type=error)
        else:
            self._book.end(frame.run_id, "answered", answer=answer_of(frame.instance, outputs))

    # --- LM calls ------------------------------------------------------------------------------

    def _lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        parent = self._parent()
        if parent is None:
            return  # an LM called outside a program: no run to record it in
        frame = _Frame(parent.run_id, instance, parent.root or parent, parent.react)
        frame.in_extract = parent.in_extract
        frame.messages = inputs.get("messages") if isinstance(inputs, dict) else None
        self._push(call_id, frame)

    def _lm_end(self, call_id: str, outputs: Any, exception: BaseException | None) -> None:
        frame = self._frames.pop(call_id, None)
        run = self._book.get(frame.run_id) if frame is not None else None
        if frame is None or run is None:
            return
        model = getattr(frame.instance, "model", None)
        call = _Call(
            turn=lm_turn(outputs) if exception is None else None,
            model=model[:128] if isinstance(model, str) else "",
            usage=lm_usage(frame.instance, frame.messages) if exception is None else {},
            started_ns=frame.started_ns,
            ended_ns=time.time_ns(),
            error_type=type(exception).__name__[:128] if exception is not None else None,
        )
        react = frame.react
        if frame.in_extract and react is not None and len(react.pending) < _MAX_PENDING:
            react.pending.append(call)  # decided when the extract step ends
        else:
            self._record(run, call, call.turn, "")

    def _record(self, run: FrameworkRun, call: _Call, turn: Turn | None, node: str) -> None:
        self._book.model_call(
            run,
            turn,
            model=call.model,
            usage=call.usage,
            started_ns=call.started_ns,
            ended_ns=call.ended_ns,
            error_type=call.error_type,
            node=node,
        )

    # --- tools -------------------------------------------------------------------------------

    def _tool_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        parent = self._parent()
        run = self._book.get(parent.run_id) if parent is not None else None
        if parent is None or run is None:
            return
        react = parent.react
        tools = getattr(react.instance, "tools", None) if react is not None else None
        if isinstance(tools, dict) and tools.get(_FINISH) is instance:
            return  # ReAct's own end marker, not a tool
        self._push(call_id, _Frame(parent.run_id, instance, parent.root or parent))
        name = getattr(instance, "name", None)
        self._book.start_tool(
            run, name if isinstance(name, str) else "", call_id, call_kwargs(inputs)
        )

    def _tool_end(self, call_id: str, outputs: Any, exception: BaseException | None) -> None:
        frame = self._frames.pop(call_id, None)
        run = self._book.get(frame.run_id) if frame is not None else None
        if run is None:
            return
        error = type(exception).__name__[:128] if exception is not None else None
        self._book.end_tool(run, call_id, outputs, error)


def _query(inputs: object) -> str:
    """A program's string inputs (recorded only under content capture)."""
    texts = [v for v in call_kwargs(inputs).values() if isinstance(v, str)]
    return "\n".join(texts)[:_MAX_QUERY]


def _cancelled(exception: BaseException | None) -> bool:
    return isinstance(exception, asyncio.CancelledError)
