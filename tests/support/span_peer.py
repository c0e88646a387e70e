"""A peer instrumentation's spans, written by hand the way GenAI semantic conventions,
OpenInference and OpenLLMetry name things, on a provider that carries the span processor."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry

AGENT: dict[str, AttributeValue] = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
WORKFLOW: dict[str, AttributeValue] = {semconv.TRACELOOP_SPAN_KIND: semconv.TRACELOOP_KIND_WORKFLOW}
CAP: dict[str, AttributeValue] = {semconv.ERROR_TYPE: "langgraph.errors.GraphRecursionError"}


def parts(*parts: dict[str, Any]) -> str:
    return json.dumps([{"role": "assistant", "parts": list(parts)}])


class Peer:
    """Another instrumentation's tracer on the provider the processor is installed on."""

    def __init__(
        self,
        memory: InMemoryTelemetry,
        wrap: Callable[[SpanProcessor], SpanProcessor] | None = None,
        **options: Any,
    ) -> None:
        """``wrap``: installs the processor inside the processor it returns (a user's wrapper)."""
        self.memory = memory
        self.processor = SilentBailSpanProcessor(meter_provider=memory.meter_provider, **options)
        installed = self.processor if wrap is None else wrap(self.processor)
        memory.tracer_provider.add_span_processor(installed)
        self.tracer = memory.tracer_provider.get_tracer("peer-instrumentation")

    @contextmanager
    def span(self, name: str, attributes: Mapping[str, AttributeValue]) -> Iterator[trace.Span]:
        with self.tracer.start_as_current_span(name, attributes=attributes) as s:
            yield s

    def agent_run(
        self,
        chat: Mapping[str, AttributeValue],
        agent: Mapping[str, AttributeValue] | None = None,
    ) -> None:
        """A GenAI ``invoke_agent`` span around one model call with these attributes."""
        agent_attributes = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
        with self.span("invoke_agent", {**agent_attributes, **(agent or {})}):
            self.span_once("chat", chat)

    def span_once(self, name: str, attributes: Mapping[str, AttributeValue]) -> None:
        with self.span(name, attributes):
            pass

    def value(self, spec: semconv.InstrumentSpec, **where: Any) -> float:
        return self.memory.value(spec.name, where or None)

    def verdict(self) -> tuple[str | None, str | None, object]:
        """(bail reason, stop reason, response.empty) of the one run counted."""
        [(run, _)] = self.memory.points(semconv.AGENT_RUNS.name)
        bails = [
            attrs[semconv.REACT_TERMINATION_REASON]
            for attrs, value in self.memory.points(semconv.SILENT_BAILS.name)
            if value
        ]
        stops = [
            attrs[semconv.RUN_STOP_REASON]
            for attrs, value in self.memory.points(semconv.STOP_REASONS.name)
            if value
        ]
        assert len(bails) <= 1 and len(stops) <= 1
        return (
            bails[0] if bails else None,
            stops[0] if stops else None,
            run.get(semconv.RESPONSE_EMPTY),
        )


def chat(**attributes: AttributeValue) -> dict[str, AttributeValue]:
    return {semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT, **attributes}


def tool(peer: Peer, arguments: str) -> None:
    peer.span_once(
        "execute_tool add",
        {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_EXECUTE_TOOL,
            semconv.GEN_AI_TOOL_NAME: "add",
            semconv.GEN_AI_TOOL_CALL_ARGUMENTS: arguments,
        },
    )
