"""Duck-typed callback dispatch.

A handler is any object with some of the ``HANDLER_METHODS`` (the five events of the mission,
``on_agent_start`` ... ``on_fabrication_detected``, and the other Symfonic events: model-call start,
the wire-accurate request, graph nodes, tool calls, streamed text); each may be sync or async. Which
methods a handler has is looked up once, when the dispatcher is built, so an event no handler wants
costs a truthiness test. A handler that raises is logged (once per handler and event kind) and
skipped: observability must never break the run it observes. The log line names the handler, the
event kind, the run, the exception type and where it was raised: no traceback, whose frames would
hold the event (prompts, answers), and not the exception's message, which often quotes it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any, Final

from symfonic_otel.logs import get_logger, run_id_of

__all__ = ["HANDLER_METHODS", "CallbackDispatcher"]

HANDLER_METHODS: Final = (
    "on_agent_start",
    "on_agent_end",
    "on_llm_end",
    "on_react_loop_end",
    "on_fabrication_detected",
    "on_llm_start",
    "on_llm_pre_call",
    "on_node_start",
    "on_node_end",
    "on_node_error",
    "on_tool_call_start",
    "on_tool_result",
    "on_text_delta",
)

_logger = get_logger("symfonic_otel.agent")

Target = tuple[object, Callable[[Any], Any]]


class CallbackDispatcher:
    """Calls every handler's method for an event kind, in registration order."""

    __slots__ = (
        "_by_kind",
        "_failed",
        "agent_end",
        "agent_start",
        "fabrication_detected",
        "llm_end",
        "llm_pre_call",
        "llm_start",
        "node_end",
        "node_error",
        "node_start",
        "react_loop_end",
        "text_delta",
        "tool_call_start",
        "tool_result",
    )

    def __init__(self, handlers: Iterable[object]) -> None:
        found: dict[str, list[Target]] = {name: [] for name in HANDLER_METHODS}
        for handler in handlers:
            for name in HANDLER_METHODS:
                method = getattr(handler, name, None)
                if callable(method):
                    found[name].append((handler, method))
        self.agent_start: tuple[Target, ...] = tuple(found["on_agent_start"])
        self.agent_end: tuple[Target, ...] = tuple(found["on_agent_end"])
        self.llm_end: tuple[Target, ...] = tuple(found["on_llm_end"])
        self.react_loop_end: tuple[Target, ...] = tuple(found["on_react_loop_end"])
        self.fabrication_detected: tuple[Target, ...] = tuple(found["on_fabrication_detected"])
        self.llm_start: tuple[Target, ...] = tuple(found["on_llm_start"])
        self.llm_pre_call: tuple[Target, ...] = tuple(found["on_llm_pre_call"])
        self.node_start: tuple[Target, ...] = tuple(found["on_node_start"])
        self.node_end: tuple[Target, ...] = tuple(found["on_node_end"])
        self.node_error: tuple[Target, ...] = tuple(found["on_node_error"])
        self.tool_call_start: tuple[Target, ...] = tuple(found["on_tool_call_start"])
        self.tool_result: tuple[Target, ...] = tuple(found["on_tool_result"])
        self.text_delta: tuple[Target, ...] = tuple(found["on_text_delta"])
        self._by_kind: dict[str, tuple[Target, ...]] = {
            name: tuple(targets) for name, targets in found.items()
        }
        self._failed: set[tuple[int, str]] = set()

    async def emit(self, targets: tuple[Target, ...], kind: str, event: object) -> None:
        """Deliver ``event`` to ``targets``; failures are logged, never raised."""
        for handler, method in targets:
            try:
                result = method(event)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:  # a handler bug must not end the agent's run
                self._report(handler, kind, exc, event)

    async def send(self, kind: str, make: Callable[[], object]) -> None:
        """Deliver ``make()`` to the handlers of ``kind`` (an ``on_...`` name); the event is built
        only when some handler wants it, so an unwanted event costs a lookup."""
        targets = self._by_kind[kind]
        if targets:
            await self.emit(targets, kind, make())

    def _report(self, handler: object, kind: str, exc: Exception, event: object) -> None:
        key = (id(handler), kind)
        if key in self._failed:
            return
        self._failed.add(key)
        _logger.warning(
            "callback handler raised; later failures of this handler and kind are not logged",
            handler=type(handler).__name__,
            callback=kind,
            error_type=type(exc).__name__,
            run_id=run_id_of(event),  # joins the line with the run's trace
            exc_info=exc,  # the package logger keeps only its type and place, never frames
        )
