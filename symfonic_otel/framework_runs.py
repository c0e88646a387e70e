"""What the hook-based framework adapters (Google ADK, Strands, CrewAI) share: run state and ends.

Each adapter reads its framework's hooks into the same few facts (a run started, a model turn
of some shape, a tool ran, the run ended in one of a few ways) and hands them here, which
drives the core handler exactly as the other adapters do. Ends are classified by the adapter
from structure (an exception class, a stop reason, an iteration count); this module only turns
the verdict into the run's outcome, stop reason, silent bail and synthesis fallback.

Every entry point is guarded: a failure is logged once per kind, counted in
``symfonic.telemetry.dropped_events`` and never raised into the agent. Open runs are capped.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.core.loops import DEFAULT_LOOP_THRESHOLD, DEFAULT_RUNAWAY_CALLS
from symfonic_otel.core.run_end import AdapterRunEnd
from symfonic_otel.events import AgentStartEvent, ContentType, LLMEndEvent, ReactLoopEndEvent
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.read.content import json_text

__all__ = ["Ending", "FrameworkRun", "RunBook", "Turn", "tenant_in"]

Ending = Literal["answered", "capped", "capped_raised", "error", "cancelled", "paused"]

_TENANT_KEY: Final = "tenant_id"
_MAX_TEXT_CHARS: Final = 65_536
_MAX_OPEN_TOOLS: Final = 256
_END_TURN: Final = "end_turn"


@dataclass(frozen=True, slots=True)
class _Paused:
    """The core's InterruptEvent for a run that ended waiting for input (resumed later)."""

    run_id: str
    name: str = ""


@dataclass(frozen=True, slots=True)
class Turn:
    """One model response: its text (bounded), its tool calls, the provider's finish reason."""

    text: str
    tool_calls: int
    has_text_part: bool = True
    finish_reason: str | None = None

    @property
    def content_type(self) -> ContentType:
        return "str" if self.has_text_part else "NoneType"

    @property
    def blank(self) -> bool:
        return not self.text.strip()

    @classmethod
    def of(cls, texts: list[str], tool_calls: int, finish_reason: object = None) -> Turn:
        text = "".join(texts)[:_MAX_TEXT_CHARS]
        finish = str(finish_reason)[:64] if finish_reason is not None else None
        return cls(text, tool_calls, bool(texts), finish)


@dataclass(slots=True)
class FrameworkRun:
    """One agent run as the adapter follows it."""

    run_id: str
    started: float = field(default_factory=time.monotonic)
    calls: int = 0
    last: Turn | None = None
    tools: OrderedDict[str, Span | None] = field(default_factory=OrderedDict)
    model_started_ns: int | None = None
    model: str = ""
    answer: str | None = None


def tenant_in(metadata: object) -> str | None:
    """The ``tenant_id`` of a framework's run metadata or state mapping, if it names one."""
    value = metadata.get(_TENANT_KEY) if isinstance(metadata, Mapping) else None
    return value if isinstance(value, str) and value else None


def loop_handler(
    owner: str,
    handler: OTelCallbackHandler | None,
    loop_threshold: int = DEFAULT_LOOP_THRESHOLD,
    runaway_calls: int = DEFAULT_RUNAWAY_CALLS,
) -> OTelCallbackHandler:
    """An adapter's handler: ``handler`` shared as it is, or one built with the loop options
    (a shared handler's options are set where it is built)."""
    if handler is not None and not isinstance(handler, OTelCallbackHandler):
        raise TypeError(
            f"{owner}: handler must be an OTelCallbackHandler, got {type(handler).__name__}"
        )
    if handler is None:
        return OTelCallbackHandler(loop_threshold=loop_threshold, runaway_calls=runaway_calls)
    if (loop_threshold, runaway_calls) != (DEFAULT_LOOP_THRESHOLD, DEFAULT_RUNAWAY_CALLS):
        raise TypeError(f"{owner}: pass handler= or loop_threshold / runaway_calls, not both")
    return handler


class RunBook:
    """Open runs by id, bounded, and the calls that record them through the core handler."""

    def __init__(self, handler: OTelCallbackHandler | None, name: str, max_open_runs: int) -> None:
        if handler is not None and not isinstance(handler, OTelCallbackHandler):
            raise TypeError(
                f"{name}: handler must be an OTelCallbackHandler, got {type(handler).__name__}"
            )
        if isinstance(max_open_runs, bool) or not isinstance(max_open_runs, int):
            raise ValueError(f"{name}: max_open_runs must be an int >= 1, got {max_open_runs!r}")
        if max_open_runs < 1:
            raise ValueError(f"{name}: max_open_runs must be an int >= 1, got {max_open_runs!r}")
        self.handler = handler if handler is not None else OTelCallbackHandler()
        self._kind = name
        self._runs: OrderedDict[str, FrameworkRun] = OrderedDict()
        self.max_open_runs = max_open_runs
        self._lock = threading.RLock()  # hooks may run on several threads (CrewAI's event bus)

    # --- guarding ----------------------------------------------------------------------------

    def guard(self, kind: str, work: Callable[..., Any], *args: Any) -> Any:
        """Run ``work``; a failure is reported and counted as a dropped event, never raised."""
        try:
            with self._lock:
                return work(*args)
        except Exception as exc:  # never into the agent
            with contextlib.suppress(Exception):  # reporting must never fail the agent either
                self.handler.adapter_failed(f"{self._kind}.{kind}", exc)
            return None

    # --- runs ------------------------------------------------------------------------------------

    def get(self, run_id: str) -> FrameworkRun | None:
        return self._runs.get(run_id)

    @property
    def open_runs(self) -> int:
        return len(self._runs)

    def start(
        self,
        run_id: str,
        agent_name: str,
        *,
        tenant: str | None = None,
        query: str = "",
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> FrameworkRun | None:
        if not run_id or run_id in self._runs:
            return None  # nothing to pair an end with, or a redelivered start
        run = FrameworkRun(run_id)
        self._runs[run_id] = run
        while len(self._runs) > self.max_open_runs:  # an end that never came: close the oldest
            _, old = self._runs.popitem(last=False)
            self._close_tools(old)
            self.handler.agent_end(AdapterRunEnd(old.run_id, "abandoned"))
        span_attributes: dict[str, AttributeValue] = dict(attributes or {})
        if agent_name:
            span_attributes[semconv.GEN_AI_AGENT_NAME] = agent_name
        self.handler.agent_start(
            AgentStartEvent(query=query if self.handler.capture_content else "", run_id=run_id),
            tenant_id=tenant,
            attributes=span_attributes,
        )
        return run

    def model_call(
        self,
        run: FrameworkRun,
        turn: Turn | None,
        *,
        model: str,
        usage: Mapping[str, int] | None = None,
        started_ns: int | None = None,
        ended_ns: int | None = None,
        error_type: str | None = None,
        node: str = "",
        provider: str | None = None,
    ) -> None:
        """One model call of ``run``; ``node`` ``react_synthesize_fallback`` marks a forced
        final answer (its text decides ``synthesis.recovered``, whatever the capture)."""
        fallback = node == semconv.NODE_SYNTHESIZE_FALLBACK
        text = turn.text if turn is not None and (fallback or self.handler.capture_content) else ""
        self.handler.llm_end(
            LLMEndEvent(
                model=model,
                output=text,
                usage=dict(usage or {}),
                run_id=run.run_id,
                node_name=node,
                iteration_index=run.calls,
                outcome="error" if error_type is not None else "completed",
                stop_reason=turn.finish_reason if turn is not None else None,
                error_type=error_type,
            ),
            provider=provider,
            start_time_ns=started_ns,
            end_time_ns=ended_ns if ended_ns is not None else time.time_ns(),
            error_type=error_type,
        )
        run.calls += 1
        if turn is not None:
            run.last = turn

    def start_tool(self, run: FrameworkRun, name: str, call_id: str, args: object) -> None:
        attributes: dict[str, AttributeValue] = {}
        if self.handler.capture_content:
            attributes.update(_captured(semconv.GEN_AI_TOOL_CALL_ARGUMENTS, args))
        span = self.handler.start_tool(
            run.run_id, name, call_id=call_id or None, attributes=attributes, arguments=args
        )
        run.tools[call_id] = span
        while len(run.tools) > _MAX_OPEN_TOOLS:
            _, old = run.tools.popitem(last=False)
            self.handler.end_tool(old, attributes={semconv.STEP_UNFINISHED: True})

    def end_tool(
        self, run: FrameworkRun, call_id: str, result: object, error_type: str | None
    ) -> None:
        span = run.tools.pop(call_id, None)
        attributes: dict[str, AttributeValue] = {}
        if self.handler.capture_content and error_type is None:
            attributes.update(_captured(semconv.GEN_AI_TOOL_CALL_RESULT, result))
        self.handler.end_tool(span, error_type=error_type, attributes=attributes)

    def end(
        self,
        run_id: str,
        ending: Ending,
        *,
        answer: str | None = None,
        error_type: str | None = None,
        stop_reason: str = _END_TURN,
    ) -> None:
        """Close the run. ``capped``: the framework's step cap ended it normally (a bail unless
        a forced final answer recovered text, ``answer``); ``capped_raised``: it raised
        ``error_type``; ``answered``: it ended on ``answer`` (blank: a bail by the last turn),
        with the framework's ``stop_reason``; ``paused``: it waits for input (no verdict)."""
        run = self._runs.pop(run_id, None)
        if run is None:
            return
        self._close_tools(run)
        duration = max(time.monotonic() - run.started, 0.0) * 1000.0
        answered = answer is not None and bool(answer.strip())
        final = answer if answered and self.handler.capture_content else None
        if ending == "cancelled":
            end = AdapterRunEnd(
                run_id, "cancelled", None, duration, stop_reason=semconv.STOP_REASON_INTERRUPTED
            )
            self.handler.agent_end(end)
            return
        if ending == "error":
            end = AdapterRunEnd(
                run_id,
                "error",
                None,
                duration,
                stop_reason=semconv.STOP_REASON_ERROR,
                error_type=error_type or semconv.OTHER_VALUE,
            )
            self.handler.agent_end(end, error_type=end.error_type)
            return
        if ending in ("capped", "capped_raised"):
            self._bail(run, "tool_calls_with_no_text")  # still working when the budget ran out
            raised = ending == "capped_raised"
            end = AdapterRunEnd(
                run_id,
                "error" if raised else "completed",
                None if raised else final,
                duration,
                stop_reason=semconv.STOP_REASON_RECURSION_LIMIT,
                error_type=(error_type or semconv.OTHER_VALUE) if raised else None,
            )
            self.handler.agent_end(
                end, error_type=end.error_type, answered=None if raised else answered
            )
            return
        if ending == "paused":
            self.handler.interrupt(_Paused(run_id))
            end = AdapterRunEnd(
                run_id, "completed", None, duration, stop_reason=semconv.STOP_REASON_INTERRUPTED
            )
            self.handler.agent_end(end)
            return
        if not answered:
            last = run.last
            blank = last is None or not last.tool_calls
            self._bail(run, "no_content_no_tool_calls" if blank else "tool_calls_with_no_text")
        end = AdapterRunEnd(run_id, "completed", final, duration, stop_reason=stop_reason)
        self.handler.agent_end(end, answered=answered)

    def close_all(self) -> None:
        """End the runs still open as ``abandoned`` (the framework is shutting down)."""
        while self._runs:
            _, run = self._runs.popitem(last=False)
            self._close_tools(run)
            self.handler.agent_end(AdapterRunEnd(run.run_id, "abandoned"))

    # --- internals -------------------------------------------------------------------------------

    def _bail(
        self,
        run: FrameworkRun,
        reason: Literal["tool_calls_with_no_text", "no_content_no_tool_calls"],
    ) -> None:
        last = run.last
        self.handler.react_loop_end(
            ReactLoopEndEvent(
                run_id=run.run_id,
                iteration_index=max(run.calls - 1, 0),
                content_type=last.content_type if last is not None else "NoneType",
                has_tool_calls=last is not None and last.tool_calls > 0,
                tool_call_count=last.tool_calls if last is not None else 0,
                termination_reason=reason,
            )
        )

    def _close_tools(self, run: FrameworkRun) -> None:
        for span in run.tools.values():
            self.handler.end_tool(span, attributes={semconv.STEP_UNFINISHED: True})
        run.tools.clear()


def _captured(key: str, value: object) -> dict[str, AttributeValue]:
    text, truncated = json_text(value)
    attributes: dict[str, AttributeValue] = {key: text}
    if truncated:
        attributes[semconv.CONTENT_TRUNCATED] = True
    return attributes
