"""A run's steps as the SDK reports them -> the core handler's model calls and step spans.

Generations and responses become ``chat`` calls (model, usage, finish reason, with capture on
the turn's text); function calls ``execute_tool`` spans (arguments and result with capture on,
read at the span's end, when the SDK has filled them in); handoffs and guardrail checks spans
of their own, made whole at the SDK span's end. Each call also updates the run's last turn,
which decides how the run ended.
"""

from __future__ import annotations

from typing import Any

from agents.tracing import Span as AgentsSpan
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.events import LLMEndEvent
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.openai_agents import read
from symfonic_otel.openai_agents.runs import AgentsRun
from symfonic_otel.read.content import json_text

__all__ = ["StepRecorder"]


class StepRecorder:
    """Records one run's model calls, tools, handoffs and guardrail checks."""

    __slots__ = ("_handler",)

    def __init__(self, handler: OTelCallbackHandler) -> None:
        self._handler = handler

    def model_end(self, run: AgentsRun, span: AgentsSpan[Any]) -> None:
        data = span.span_data
        response = getattr(data, "response", None)
        shape = read.output_shape(getattr(data, "output", None), response)
        failed = span.error is not None
        capture = self._handler.capture_content
        self._handler.llm_end(
            LLMEndEvent(
                model=read.model_name(data),
                output=shape.text if capture and shape is not None else "",
                usage=read.usage(getattr(data, "usage", None), getattr(response, "usage", None)),
                run_id=run.key,
                iteration_index=run.calls,
                outcome="error" if failed else "completed",
                stop_reason=shape.finish_reason if shape is not None and not failed else None,
                response_id=getattr(response, "id", None),
            ),
            start_time_ns=read.time_ns(span.started_at),
            end_time_ns=read.time_ns(span.ended_at),
            error_type=semconv.OTHER_VALUE if failed else None,
            attributes={semconv.GEN_AI_AGENT_NAME: run.agent} if run.agent else None,
        )
        run.calls += 1
        run.last = shape
        run.last_failed = failed

    def tool_start(self, run: AgentsRun, span: AgentsSpan[Any]) -> None:
        data = span.span_data
        name = getattr(data, "name", None)
        tool = self._handler.start_tool(
            run.key,
            name if isinstance(name, str) else "",
            start_time_ns=read.time_ns(span.started_at),
        )
        if tool is not None:
            run.tools[span.span_id] = tool

    def tool_end(self, run: AgentsRun, span: AgentsSpan[Any]) -> None:
        tool = run.tools.pop(span.span_id, None)
        if tool is None:
            return
        name = getattr(span.span_data, "name", None)  # its input is set after its start
        self._handler.tool_arguments(
            run.key, name if isinstance(name, str) else "", span.span_data.input
        )
        attributes: dict[str, AttributeValue] = {}
        if self._handler.capture_content:  # the SDK fills both in by the span's end
            data = span.span_data
            if data.input is not None:
                attributes.update(_captured(semconv.GEN_AI_TOOL_CALL_ARGUMENTS, data.input))
            if data.output is not None:
                attributes.update(_captured(semconv.GEN_AI_TOOL_CALL_RESULT, data.output))
        self._handler.end_tool(
            tool,
            error_type=semconv.TOOL_ERROR_TYPE if span.error is not None else None,
            end_time_ns=read.time_ns(span.ended_at),
            attributes=attributes,
        )

    def handoff(self, run: AgentsRun, span: AgentsSpan[Any]) -> None:
        source = getattr(span.span_data, "from_agent", None)
        target = getattr(span.span_data, "to_agent", None)
        attributes: dict[str, AttributeValue] = {}
        if isinstance(source, str):
            attributes[semconv.HANDOFF_FROM_AGENT] = source
        if isinstance(target, str):
            attributes[semconv.HANDOFF_TO_AGENT] = target
        self._instant(run, span, semconv.SPAN_HANDOFF, target, attributes)

    def guardrail(self, run: AgentsRun, span: AgentsSpan[Any]) -> None:
        name = getattr(span.span_data, "name", None)
        triggered = getattr(span.span_data, "triggered", False) is True
        attributes: dict[str, AttributeValue] = {semconv.GUARDRAIL_TRIGGERED: triggered}
        if isinstance(name, str):
            attributes[semconv.GUARDRAIL_NAME] = name
        self._instant(run, span, semconv.SPAN_GUARDRAIL, name, attributes)

    def _instant(
        self,
        run: AgentsRun,
        span: AgentsSpan[Any],
        what: str,
        target: object,
        attributes: dict[str, AttributeValue],
    ) -> None:
        """A span for a step the SDK reports whole at its end (handoff, guardrail check)."""
        opened = self._handler.start_call(
            "",
            semconv.operation_span_name(what, target if isinstance(target, str) else ""),
            run_id=run.key,
            attributes=attributes,
            start_time_ns=read.time_ns(span.started_at),
        )
        self._handler.end_call(opened, end_time_ns=read.time_ns(span.ended_at))


def _captured(key: str, value: object) -> dict[str, AttributeValue]:
    text, truncated = json_text(value)
    attributes: dict[str, AttributeValue] = {key: text}
    if truncated:
        attributes[semconv.CONTENT_TRUNCATED] = True
    return attributes
