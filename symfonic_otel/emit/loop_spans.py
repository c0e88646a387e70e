"""Loops on the run span: the run's call counts and the ``symfonic.agent.loop_detected`` event.

The event is added to the run span (``invoke_agent``) at detection, while the run runs, so that
the run's trace is kept whole by trace retention. It names the tool, the count and the kind; the
repeated arguments only with content capture on.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Span

from symfonic_otel import semconv
from symfonic_otel.read.content import json_text


def loop_detected(
    span: Span, kind: str, tool: str, count: int, arguments: object, capture_content: bool
) -> None:
    attributes: dict[str, Any] = {semconv.LOOP_KIND: kind, semconv.LOOP_COUNT: count}
    if tool:
        attributes[semconv.GEN_AI_TOOL_NAME] = tool
    if capture_content and arguments is not None:
        text, truncated = json_text(arguments)
        attributes[semconv.GEN_AI_TOOL_CALL_ARGUMENTS] = text
        if truncated:
            attributes[semconv.CONTENT_TRUNCATED] = True
    span.set_attribute(semconv.LOOP_KIND, kind)
    span.add_event(semconv.EVENT_LOOP_DETECTED, attributes)


def counts(inference_calls: int, tool_calls: int, repeated: int) -> dict[str, Any]:
    """The run span's call counts."""
    return {
        semconv.RUN_INFERENCE_CALLS: inference_calls,
        semconv.RUN_TOOL_CALLS: tool_calls,
        semconv.RUN_REPEATED_TOOL_CALLS: repeated,
    }
