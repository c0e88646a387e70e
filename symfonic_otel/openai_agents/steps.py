"""A run's steps as the SDK reports them -> the core handler's model calls and step spans.

Generations and responses become ``chat`` calls (model, usage, finish reason, with capture on
the turn's text); function calls ``execute_tool`` spans (arguments and result with capture on,
read at the span's end, when the SDK has filled them in); handoffs and guardrail checks spans
of their own, made whole at the SDK span's end. Each call also updates the run's last turn,
which decides how the run ended.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from agents.tracing import Span as AgentsSpan
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.invocation import FrameworkRun, RunBook, captured
from symfonic_otel.openai_agents import read

__all__ = ["Origin", "StepRecorder"]


@dataclass(slots=True)
class Origin:
    """What only the SDK records about a run: its tenant, conversation, the run and SDK span
    it was started under (an agent run as a tool), and the error its spans reported."""

    tenant: str | None
    conversation: str | None
    parent_run: str | None = None
    parent_span: str | None = None
    error: read.RunError | None = None
    error_type: str | None = None


def origin(run: FrameworkRun) -> Origin:
    facts = run.facts
    assert isinstance(facts, Origin)  # set at the run's start
    return facts


class StepRecorder:
    """Records one run's model calls, tools, handoffs and guardrail checks."""

    __slots__ = ("_book",)

    def __init__(self, book: RunBook) -> None:
        self._book = book

    def model_end(self, run: FrameworkRun, span: AgentsSpan[Any]) -> None:
        data = span.span_data
        response = getattr(data, "response", None)
        shape = read.output_shape(getattr(data, "output", None), response)
        failed = span.error is not None
        self._book.model_call(
            run,
            replace(shape, finish_reason=None) if failed and shape is not None else shape,
            model=read.model_name(data),
            usage=read.usage(getattr(data, "usage", None), getattr(response, "usage", None)),
            started_ns=read.time_ns(span.started_at),
            ended_ns=read.time_ns(span.ended_at),
            error_type=semconv.OTHER_VALUE if failed else None,
            response_id=getattr(response, "id", None),
            attributes={semconv.GEN_AI_AGENT_NAME: run.agent} if run.agent else None,
        )

    def tool_start(self, run: FrameworkRun, span: AgentsSpan[Any]) -> None:
        name = getattr(span.span_data, "name", None)
        self._book.tools.start(
            run,
            name if isinstance(name, str) else "",
            "",
            None,  # its input is set after its start
            start_ns=read.time_ns(span.started_at),
            capture_args=False,
            key=span.span_id,
        )

    def tool_end(self, run: FrameworkRun, span: AgentsSpan[Any]) -> None:
        if span.span_id not in run.tools:
            return
        data = span.span_data
        name = getattr(data, "name", None)
        self._book.handler.tool_arguments(
            run.run_id, name if isinstance(name, str) else "", data.input
        )
        attributes: dict[str, AttributeValue] = {}
        if self._book.handler.capture_content:  # the SDK fills both in by the span's end
            if data.input is not None:
                attributes.update(captured(semconv.GEN_AI_TOOL_CALL_ARGUMENTS, data.input))
            if data.output is not None:
                attributes.update(captured(semconv.GEN_AI_TOOL_CALL_RESULT, data.output))
        self._book.tools.end(
            run,
            span.span_id,
            None,
            semconv.TOOL_ERROR_TYPE if span.error is not None else None,
            end_ns=read.time_ns(span.ended_at),
            capture_result=False,
            extra=attributes,
        )

    def handoff(self, run: FrameworkRun, span: AgentsSpan[Any]) -> None:
        source = getattr(span.span_data, "from_agent", None)
        target = getattr(span.span_data, "to_agent", None)
        attributes: dict[str, AttributeValue] = {}
        if isinstance(source, str):
            attributes[semconv.HANDOFF_FROM_AGENT] = source
        if isinstance(target, str):
            attributes[semconv.HANDOFF_TO_AGENT] = target
        self._instant(run, span, semconv.SPAN_HANDOFF, target, attributes)

    def guardrail(self, run: FrameworkRun, span: AgentsSpan[Any]) -> None:
        name = getattr(span.span_data, "name", None)
        triggered = getattr(span.span_data, "triggered", False) is True
        attributes: dict[str, AttributeValue] = {semconv.GUARDRAIL_TRIGGERED: triggered}
        if isinstance(name, str):
            attributes[semconv.GUARDRAIL_NAME] = name
        self._instant(run, span, semconv.SPAN_GUARDRAIL, name, attributes)

    def _instant(
        self,
        run: FrameworkRun,
        span: AgentsSpan[Any],
        what: str,
        target: object,
        attributes: dict[str, AttributeValue],
    ) -> None:
        """A span for a step the SDK reports whole at its end (handoff, guardrail check)."""
        opened = self._book.handler.start_call(
            "",
            semconv.operation_span_name(what, target if isinstance(target, str) else ""),
            run_id=run.run_id,
            attributes=attributes,
            start_time_ns=read.time_ns(span.started_at),
        )
        self._book.handler.end_call(opened, end_time_ns=read.time_ns(span.ended_at))
