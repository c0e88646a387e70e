"""Span emitter: records of runs, model calls and tools -> OpenTelemetry spans and span events.

Every value reaching here has been made encodable by the extractors; this module only decides
which attribute goes where, sets them in one call per span (the SDK validates and locks once, not
per attribute), and adds captured content only when capture is on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from symfonic_otel import semconv
from symfonic_otel.content import messages_json, truncate
from symfonic_otel.extract import ModelCall
from symfonic_otel.sanitise import clean_text

_MAX_FINDING_KINDS: Final = 16


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
    attributes: Mapping[str, Any] | None = None  # the adapter's own, added as given
    time_to_first_chunk_s: float | None = None
    operation_name: str | None = None  # replaces ``chat``


class SpanEmitter:
    def __init__(self, tracer: Tracer, agent_name: str, capture_content: bool) -> None:
        self._tracer = tracer
        self._agent_name = agent_name
        self._agent_span_name = semconv.agent_span_name(agent_name)
        self.capture_content = capture_content

    def start_run(
        self,
        run_id: str,
        tenant: str,
        query: str,
        parent: Context | None,
        start_time_ns: int | None,
    ) -> Span:
        attributes: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT,
            semconv.GEN_AI_AGENT_NAME: self._agent_name,
            semconv.TENANT_ID: tenant,
            semconv.RUN_ID: run_id,
        }
        if self.capture_content:
            _capture(attributes, semconv.GEN_AI_INPUT_MESSAGES, "user", query)
        return self._tracer.start_span(
            self._agent_span_name,
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start_time_ns,
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
    ) -> None:
        attributes: dict[str, Any] = {semconv.RUN_OUTCOME: outcome}
        if empty is not None:
            attributes[semconv.RESPONSE_EMPTY] = empty
        if stop_reason is not None:
            attributes[semconv.RUN_STOP_REASON] = stop_reason
        if self.capture_content and final_response:
            _capture(attributes, semconv.GEN_AI_OUTPUT_MESSAGES, "assistant", final_response)
        if outcome == "error":
            attributes[semconv.ERROR_TYPE] = error_type or semconv.OTHER_VALUE
        span.set_attributes(attributes)
        if outcome == "error":
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=end_time_ns)

    @staticmethod
    def abandon_run(span: Span) -> None:
        span.set_attribute(semconv.RUN_OUTCOME, "abandoned")
        span.end()

    def model_call(self, call: ModelCall, where: CallContext) -> None:
        usage = call.usage
        attributes: dict[str, Any] = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
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
        if where.cost is not None:
            attributes[semconv.LLM_COST_USD] = where.cost
        if where.recovered is not None:
            attributes[semconv.SYNTHESIS_RECOVERED] = where.recovered
        if call.finish_reason is not None:
            attributes[semconv.GEN_AI_RESPONSE_FINISH_REASONS] = (call.finish_reason,)
        if self.capture_content and call.output:
            _capture(attributes, semconv.GEN_AI_OUTPUT_MESSAGES, "assistant", call.output)
        if call.error_type is not None:
            attributes[semconv.ERROR_TYPE] = call.error_type
        span_name = where.span_name
        if where.operation_name:
            attributes[semconv.GEN_AI_OPERATION_NAME] = where.operation_name
            span_name = (
                f"{where.operation_name} {call.model}" if call.model else where.operation_name
            )
        if where.time_to_first_chunk_s is not None:
            attributes["gen_ai.response.time_to_first_chunk"] = where.time_to_first_chunk_s
        if where.attributes:
            attributes.update(where.attributes)
        span = self._tracer.start_span(
            span_name,
            context=where.parent,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=call.timing.start_ns,
        )
        if call.error_type is not None:
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=call.timing.end_ns)

    def start_tool(
        self,
        name: str,
        call_id: str | None,
        tenant: str,
        run_id: str | None,
        parent: Context | None,
        start_time_ns: int | None,
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
        return self._tracer.start_span(
            semconv.tool_span_name(name),
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=start_time_ns,
        )

    def start_call(
        self,
        name: str,
        kind: SpanKind,
        attributes: Mapping[str, Any],
        parent: Context,
        start_time_ns: int | None,
    ) -> Span:
        return self._tracer.start_span(
            name, context=parent, kind=kind, attributes=attributes, start_time=start_time_ns
        )

    @staticmethod
    def loop_end(span: Span, reason: str, event_attributes: Mapping[str, Any]) -> None:
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
                clean_text(str(f.get("kind"))[:256], 64)
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
                getattr(event, "preview_truncated", False) is True or draft_cut
            )
        span.add_event(semconv.EVENT_FABRICATION_DETECTED, attributes)


def _capture(attributes: dict[str, Any], key: str, role: str, text: str) -> None:
    payload, truncated = messages_json(role, text)
    attributes[key] = payload
    if truncated:
        attributes[semconv.CONTENT_TRUNCATED] = True
