"""A run's tool spans: opened and closed through the core handler, bounded per run, content
captured only when the handler captures it."""

from __future__ import annotations

from typing import Final

from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.invocation.runs import FrameworkRun
from symfonic_otel.invocation.turns import captured

__all__ = ["MAX_OPEN_TOOLS", "ToolSpans"]

MAX_OPEN_TOOLS: Final = 256
_UNFINISHED: Final[dict[str, AttributeValue]] = {semconv.STEP_UNFINISHED: True}


class ToolSpans:
    """Opens and closes ``execute_tool`` spans for runs. A tool still open when its run ends
    is closed as unfinished, or with ``unfinished_error`` as its error type when given."""

    __slots__ = ("_handler", "_unfinished_error")

    def __init__(self, handler: OTelCallbackHandler, unfinished_error: str | None = None) -> None:
        self._handler = handler
        self._unfinished_error = unfinished_error

    def start(
        self,
        run: FrameworkRun,
        name: str,
        call_id: str,
        args: object,
        *,
        start_ns: int | None = None,
        capture_args: bool = True,
        key: str | None = None,
    ) -> None:
        """Open a tool span, kept on ``run`` under ``key`` (default ``call_id``; the oldest
        past the bound is closed as unfinished). ``args`` None: not known at the start."""
        held = call_id if key is None else key
        if held in run.tools:
            return  # the start delivered twice: the span it opened stays the call's
        attributes: dict[str, AttributeValue] = {}
        if self._handler.capture_content and capture_args:
            attributes.update(captured(semconv.GEN_AI_TOOL_CALL_ARGUMENTS, args))
        span = self._handler.start_tool(
            run.run_id,
            name,
            call_id=call_id or None,
            start_time_ns=start_ns,
            attributes=attributes,
            arguments=args,
        )
        run.tools[held] = span
        while len(run.tools) > MAX_OPEN_TOOLS:
            _, old = run.tools.popitem(last=False)
            self._handler.end_tool(old, attributes=_UNFINISHED)

    @staticmethod
    def named_id(run: FrameworkRun, name: str) -> str:
        """A call id for a framework that pairs a tool's start and end by the tool's name
        only: calls of one tool end in the order they started (``end_named``)."""
        run.tool_seq += 1
        return f"{name}#{run.tool_seq}"

    def end_named(
        self, run: FrameworkRun, name: str, result: object, error_type: str | None
    ) -> None:
        """Close the oldest open span of the tool ``name`` (see ``named_id``)."""
        for call_id in run.tools:
            if call_id.rpartition("#")[0] == name:
                self.end(run, call_id, result, error_type)
                return

    def end(
        self,
        run: FrameworkRun,
        call_id: str,
        result: object,
        error_type: str | None,
        *,
        end_ns: int | None = None,
        capture_result: bool = True,
        extra: dict[str, AttributeValue] | None = None,
    ) -> bool:
        """Close the tool span ``call_id`` of ``run``; False when none is open under it."""
        if call_id not in run.tools:
            return False
        span = run.tools.pop(call_id)
        attributes: dict[str, AttributeValue] = dict(extra or {})
        if self._handler.capture_content and error_type is None and capture_result:
            attributes.update(captured(semconv.GEN_AI_TOOL_CALL_RESULT, result))
        self._handler.end_tool(
            span, error_type=error_type, end_time_ns=end_ns, attributes=attributes
        )
        return True

    def close_all(self, run: FrameworkRun) -> None:
        """Close the tools ``run`` left open (its end came first)."""
        for span in run.tools.values():
            if self._unfinished_error is not None:
                self._handler.end_tool(span, error_type=self._unfinished_error)
            else:
                self._handler.end_tool(span, attributes=_UNFINISHED)
        run.tools.clear()
