"""The silent-bail report of seed 000: an INFO log line and ``ReactLoopEndEvent``, same fields.

Fired whenever the loop ends with an empty answer, on ``run`` and ``stream`` alike, and also
when synthesis then recovers an answer.
"""

from __future__ import annotations

from typing import Final

from langchain_core.messages import AIMessage

from symfonic_otel.agent.calls import RunState
from symfonic_otel.agent.dispatch import CallbackDispatcher
from symfonic_otel.agent.flatten import content_type as content_type_of
from symfonic_otel.events import ReactLoopEndEvent, TerminationReason
from symfonic_otel.logs import get_logger

__all__ = ["SILENT_BAIL_LOG_EVENT", "report_silent_bail"]

_logger = get_logger("symfonic_otel.agent")

SILENT_BAIL_LOG_EVENT: Final = "react: empty final_response on terminator"


async def report_silent_bail(
    dispatch: CallbackDispatcher,
    run: RunState,
    message: AIMessage,
    termination_reason: TerminationReason,
) -> None:
    """Log and emit the bail of ``run`` on its terminal ``message``."""
    tool_call_count = len(message.tool_calls) + len(message.invalid_tool_calls)
    iteration_index = run.model_calls - 1
    content_type = content_type_of(message.content)
    _logger.info(
        SILENT_BAIL_LOG_EVENT,
        iteration_index=iteration_index,
        content_type=content_type,
        has_tool_calls=tool_call_count > 0,
        tool_call_count=tool_call_count,
        termination_reason=termination_reason,
        run_id=run.run_id,
    )
    await dispatch.send(
        "on_react_loop_end",
        lambda: ReactLoopEndEvent(
            run_id=run.run_id,
            iteration_index=iteration_index,
            content_type=content_type,
            has_tool_calls=tool_call_count > 0,
            tool_call_count=tool_call_count,
            termination_reason=termination_reason,
        ),
    )
