"""Span emitter: records of runs, model calls, tools and steps -> spans and span events.

Every value reaching here has been made encodable by the extractors; this module only decides
which attribute goes where, sets them in one call per span (the SDK validates and locks once, not
per attribute), and adds captured content only when capture is on. A caller's extra attributes
(already cleaned, see ``sanitise.clean_attributes``) are merged under the handler's own: on a
conflict the handler's value wins, except for a model call's captured messages, which an adapter
that saw the whole exchange (tool calls, finish reasons) renders more fully than the event's text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry.context import Context
from opentelemetry.trace import (
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    Tracer,
)
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.emit.span_guard import end_span, start_span
from symfonic_otel.read.content import json_text, messages_json, truncate
from symfonic_otel.read.extract import ModelCall, flag
from symfonic_otel.read.sanitise import clean_text

_MAX_FINDING_KINDS: Final = 16
_MAX_EXPLAINED_FINDINGS: Final = 16
Extra = Mapping[str, AttributeValue] | None
NO_CONTENT: Final = object()  # a tool argument / result that was not given at all

# Captured messages where the caller's rendering wins over the one built from the event.
_CALLER_MESSAGES: Final = frozenset({semconv.GEN_AI_INPUT_MESSAGES, semconv.GEN_AI_OUTPUT_MESSAGES})


@dataclass(slots=True)
class CallContext:
    """What the handler resolved for a model call: its run, tenant, labels, price and parent."""

    run_id: str
    tenant: str
    provider: str | None
    pricing_unknown: bool
    cost: float | None
    recovered: bool | None  # None unless a synthesis call
    span_name: str
    parent: Context
    operation: str = semconv.OP_CHAT
    ttfc_s: float | None = None
    extra: Extra = None


class SpanEmitter:
    def __init__(self, tracer: Tracer, agent_name: str, capture_content: bool) -> None:
        self._tracer = tracer
        self._agent_name = agent_name
        self._agent_span_name = semconv.agent_span_name(agent_name)
        self.capture_content = capture_content

    def _start_span(self, name: str, **arguments: Any) -> Span:
        return start_span(self._tracer, name, **arguments)

    def start_run(
        self,
        run_id: str,
        tenant: str,
        query: str,
        parent: Context | None,
        start_time_ns: int | None,
        extra: Extra = None,
    ) -> Span:
        """The run span; an extra ``gen_ai.agent.name`` (a sub-agent's name) renames it."""
        attributes: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT,
            semconv.GEN_AI_AGENT_NAME: self._agent_name,
            semconv.TENANT_ID: tenant,
            semconv.RUN_ID: run_id,
        }
        name = self._agent_span_name
        if self.capture_content and query and not query.isspace():  # no input, no message
            _capture(attributes, semconv.GEN_AI_INPUT_MESSAGES, "user", query)
        if extra:
            agent = extra.get(semconv.GEN_AI_AGENT_NAME)
            if isinstance(agent, str) and agent.strip():
                attributes[semconv.GEN_AI_AGENT_NAME] = agent = agent.strip()
                name = semconv.agent_span_name(agent)
            attributes = {**extra, **attributes}
        return self._start_span(  # an INTERNAL span: the SDK's default kind
            name, context=parent, attributes=attributes, start_time=start_time_ns
        )

    def end_run(
        self,
        span: Span,
        outcome: str,
        empty: bool | None,
        stop_reason: str | None,
        error_type: str | None,
        final_response: str | None,
        end_time_ns: int | None,
        paused: str | None = None,
        interrupt_name: str = "",
        extra: dict[str, Any] | None = None,
    ) -> None:
        """``extra``: the caller's own attributes, a dict this call takes over (the run's
        attributes below win over a key of the same name)."""
        attributes: dict[str, Any] = {semconv.RUN_OUTCOME: outcome}
        if empty is not None:
            attributes[semconv.RESPONSE_EMPTY] = empty
        if stop_reason is not None:
            attributes[semconv.RUN_STOP_REASON] = stop_reason
        if paused is not None:
            attributes[semconv.RUN_PAUSED] = True
            attributes[semconv.RUN_PAUSE_KIND] = paused
            if interrupt_name:
                attributes[semconv.RUN_INTERRUPT_NAME] = interrupt_name
        if self.capture_content and final_response:
            _capture(
                attributes, semconv.GEN_AI_OUTPUT_MESSAGES, "assistant", final_response, "stop"
            )
        if outcome == "error":
            attributes[semconv.ERROR_TYPE] = error_type or semconv.OTHER_VALUE
        if extra:  # ``{**extra, **attributes}`` without a copy: same keys, order and values
            extra.update(attributes)
            attributes = extra
        span.set_attributes(attributes)
        if outcome == "error":
            span.set_status(Status(StatusCode.ERROR))
        end_span(span, end_time_ns)

    @staticmethod
    def abandon_run(span: Span) -> None:
        span.set_attribute(semconv.RUN_OUTCOME, "abandoned")
        end_span(span)

    @staticmethod
    def pause(span: Span, kind: str, interrupt_name: str) -> None:
        attributes: dict[str, Any] = {semconv.RUN_PAUSE_KIND: kind}
        if interrupt_name:
            attributes[semconv.RUN_INTERRUPT_NAME] = interrupt_name
        span.add_event(semconv.EVENT_RUN_PAUSED, attributes)

    def model_call(self, call: ModelCall, where: CallContext) -> SpanContext:
        """The model call's span, started and ended at once; returns its context (exemplars)."""
        usage = call.usage
        attributes: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: where.operation,
            semconv.GEN_AI_REQUEST_MODEL: call.model,
            semconv.NODE_NAME: call.node,
            semconv.REACT_ITERATION_INDEX: call.iteration,
            semconv.TENANT_ID: where.tenant,
            semconv.LLM_PRICING_UNKNOWN: where.pricing_unknown,
        }
        if where.run_id:
            attributes[semconv.RUN_ID] = where.run_id
        if where.provider:
            attributes[semconv.GEN_AI_PROVIDER_NAME] = where.provider
        if usage.input_tokens is not None:
            attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] = usage.input_tokens
        if usage.output_tokens is not None:
            attributes[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] = usage.output_tokens
        if usage.cache_read_tokens:
            attributes[semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = usage.cache_read_tokens
        if usage.cache_creation_tokens:
            attributes[semconv.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = (
                usage.cache_creation_tokens
            )
        if usage.reasoning_tokens:
            attributes[semconv.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = usage.reasoning_tokens
        if call.details is not None:
            attributes.update(call.details)
        if where.ttfc_s is not None:
            attributes[semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = where.ttfc_s
        if where.cost is not None:
            attributes[semconv.LLM_COST_USD] = where.cost
        if where.recovered is not None:
            attributes[semconv.SYNTHESIS_RECOVERED] = where.recovered
        if call.finish_reason is not None:
            attributes[semconv.GEN_AI_RESPONSE_FINISH_REASONS] = (call.finish_reason,)
        if self.capture_content and call.output:
            finish = call.finish_reason or "stop"  # the provider's own, else a plain end
            _capture(attributes, semconv.GEN_AI_OUTPUT_MESSAGES, "assistant", call.output, finish)
        if call.error_type is not None:
            attributes[semconv.ERROR_TYPE] = call.error_type
        if where.extra:
            attributes = {**where.extra, **attributes}
            for key in _CALLER_MESSAGES.intersection(where.extra):
                attributes[key] = where.extra[key]
        span = self._start_span(
            where.span_name,
            context=where.parent,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=call.timing.start_ns,
        )
        if call.error_type is not None:
            span.set_status(Status(StatusCode.ERROR))
        end_span(span, call.timing.end_ns)
        return span.get_span_context()

    def start_tool(
        self,
        name: str,
        call_id: str | None,
        tenant: str,
        run_id: str | None,
        parent: Context | None,
        start_time_ns: int | None,
        arguments: object = NO_CONTENT,
        extra: Extra = None,
    ) -> Span:
        attributes: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_EXECUTE_TOOL,
            semconv.GEN_AI_TOOL_NAME: name,
            semconv.TENANT_ID: tenant,
        }
        if run_id is not None:
            attributes[semconv.RUN_ID] = run_id
        if call_id:
            attributes[semconv.GEN_AI_TOOL_CALL_ID] = call_id
        if self.capture_content and arguments is not NO_CONTENT and arguments is not None:
            _capture_json(attributes, semconv.GEN_AI_TOOL_CALL_ARGUMENTS, arguments)
        if extra:
            attributes = {**extra, **attributes}
        return self._start_span(  # an INTERNAL span: the SDK's default kind
            semconv.tool_span_name(name),
            context=parent,
            attributes=attributes,
            start_time=start_time_ns,
        )

    def start_step(
        self,
        span_name: str,
        operation: str,
        tenant: str,
        run_id: str | None,
        parent: Context | None,
        start_time_ns: int | None,
        extra: Extra = None,
        node: str | None = None,
    ) -> Span:
        """A graph-node span (``node`` set, no GenAI operation) or a generic call span.

        Retrieval, embeddings and model operations are CLIENT spans; the rest INTERNAL.
        """
        attributes: dict[str, Any] = {semconv.TENANT_ID: tenant}
        if operation:
            attributes[semconv.GEN_AI_OPERATION_NAME] = operation
        if node is not None:
            attributes[semconv.NODE_NAME] = node
        if run_id is not None:
            attributes[semconv.RUN_ID] = run_id
        if extra:
            attributes = {**extra, **attributes}
        kind = SpanKind.CLIENT if operation in _CLIENT_OPERATIONS else SpanKind.INTERNAL
        return self._start_span(
            span_name, context=parent, kind=kind, attributes=attributes, start_time=start_time_ns
        )

    def end_step(
        self,
        span: Span,
        error_type: str | None,
        end_time_ns: int | None,
        *,
        result: object = NO_CONTENT,
        message: str = "",
        extra: Extra = None,
        unfinished: bool = False,
    ) -> None:
        """End a tool, node or call span: error status, captured result or error message."""
        attributes: dict[str, Any] = dict(extra) if extra else {}
        if error_type is not None:
            attributes[semconv.ERROR_TYPE] = error_type
        if unfinished:
            attributes[semconv.STEP_UNFINISHED] = True
        if self.capture_content:
            if result is not NO_CONTENT and result is not None:
                _capture_json(attributes, semconv.GEN_AI_TOOL_CALL_RESULT, result)
            if message:
                attributes[semconv.NODE_ERROR_MESSAGE] = truncate(message)[0]
        if attributes:
            span.set_attributes(attributes)
        if error_type is not None:
            span.set_status(Status(StatusCode.ERROR))
        end_span(span, end_time_ns)

    @staticmethod
    def loop_end(span: Span, reason: str, event_attributes: dict[str, Any], paused: bool) -> None:
        """The loop-end event; on a paused run it is no bail: the run span keeps no reason."""
        if paused:
            event_attributes[semconv.RUN_PAUSED] = True
        else:
            span.set_attribute(semconv.REACT_TERMINATION_REASON, reason)
        span.add_event(semconv.EVENT_REACT_LOOP_END, event_attributes)

    def fabrication(
        self,
        span: Span,
        mode: str,
        action: str,
        confidence: float,
        event: object,
        threshold: float | None,
    ) -> None:
        findings = getattr(event, "findings", None)
        findings = findings if isinstance(findings, list | tuple) else []
        kinds = sorted(
            {
                clean_text(str(f.get("kind")), 64)  # cut before it is scanned
                for f in findings[:1024]
                if isinstance(f, Mapping) and f.get("kind") is not None
            }
        )[:_MAX_FINDING_KINDS]
        attributes: dict[str, Any] = {
            semconv.FABRICATION_MODE: mode,
            semconv.FABRICATION_ACTION: action,
            semconv.FABRICATION_MAX_CONFIDENCE: confidence,
            semconv.FABRICATION_FINDINGS: len(findings),
            semconv.FABRICATION_FINDING_KINDS: kinds,
        }
        if threshold is not None:
            attributes[semconv.FABRICATION_REFUSE_THRESHOLD] = threshold
        if self.capture_content:
            draft = getattr(event, "original_draft_preview", None)
            draft_text, draft_cut = truncate("" if draft is None else str(draft))
            attributes[semconv.FABRICATION_DRAFT_PREVIEW] = draft_text
            replacement = getattr(event, "replacement_preview", None)
            if replacement is not None:
                attributes[semconv.FABRICATION_REPLACEMENT_PREVIEW] = truncate(str(replacement))[0]
            attributes[semconv.FABRICATION_PREVIEW_TRUNCATED] = (
                flag(event, "preview_truncated") or draft_cut
            )
        span.add_event(semconv.EVENT_FABRICATION_DETECTED, attributes)
        span.add_event(
            semconv.EVENT_EVALUATION_RESULT, self._evaluation(action, confidence, findings)
        )

    def _evaluation(
        self, action: str, confidence: float, findings: list[Any] | tuple[Any, ...]
    ) -> dict[str, Any]:
        """The semconv evaluation event of a detection: the strongest finding's confidence as
        the score, the action taken as its label, the findings' claims (capture only) as the
        explanation."""
        attributes: dict[str, Any] = {
            semconv.GEN_AI_EVALUATION_NAME: semconv.EVALUATION_FABRICATION,
            semconv.GEN_AI_EVALUATION_SCORE_VALUE: confidence,
            semconv.GEN_AI_EVALUATION_SCORE_LABEL: action,
        }
        if self.capture_content:
            claims = [
                f"{f.get('kind')}: {f.get('claim')}"
                for f in findings[:_MAX_EXPLAINED_FINDINGS]
                if isinstance(f, Mapping)
            ]
            if claims:
                attributes[semconv.GEN_AI_EVALUATION_EXPLANATION] = truncate("; ".join(claims))[0]
        return attributes


_CLIENT_OPERATIONS: Final = frozenset({semconv.OP_RETRIEVAL, *semconv.MODEL_OPERATIONS})


def _capture_json(attributes: dict[str, Any], key: str, value: object) -> None:
    text, truncated = json_text(value)
    attributes[key] = text
    if truncated:
        attributes[semconv.CONTENT_TRUNCATED] = True


def _capture(
    attributes: dict[str, Any], key: str, role: str, text: str, finish_reason: str | None = None
) -> None:
    payload, truncated = messages_json(role, text, finish_reason)
    attributes[key] = payload
    if truncated:
        attributes[semconv.CONTENT_TRUNCATED] = True
