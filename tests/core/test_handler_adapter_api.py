"""What an adapter can tell the core handler beyond the events, and what LLMEnd may carry.

Extra span attributes (cleaned like every caller value), the model operation, the time to first
chunk, tool and generic call spans; request parameters, response id and model, token details
and the forced tool choice read from the event when it carries them.
"""

from __future__ import annotations

import json
import time
from types import SimpleNamespace
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.metrics.export import HistogramDataPoint
from opentelemetry.trace import SpanKind, StatusCode

from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.read.sanitise import MAX_ATTRIBUTE_BYTES, MAX_EXTRA_BYTES
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.recorded import internal_errors, span_attrs


def test_llm_end_reads_request_response_and_token_details(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    handler.llm_end(
        LLMEndEvent(
            model="gpt-4o",
            output="x",
            # OpenAI's raw usage: cached and reasoning tokens in the details.
            usage={
                "prompt_tokens": 1200,
                "completion_tokens": 300,
                "prompt_tokens_details": {"cached_tokens": 1000},
                "completion_tokens_details": {"reasoning_tokens": 256},
            },
            run_id="r",
            forced_tool_choice="search",
            response_id="chatcmpl-123",
            response_model="gpt-4o-2024-08-06",
            invocation_params={
                "temperature": 0.2,
                "max_completion_tokens": 512,
                "top_p": 0.9,
                "frequency_penalty": 0.5,
                "presence_penalty": 0,
                "stop": "END",
                "seed": 7,
                "n": 2,
                "stream": True,
                "top_k": "many",  # wrong type: left out
                "api_key": "sk-secret",  # not a request attribute: never read
            },
        )
    )
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    chat = span_attrs(telemetry.span("chat gpt-4o"))
    assert chat["gen_ai.usage.cache_read.input_tokens"] == 1000
    assert chat["gen_ai.usage.reasoning.output_tokens"] == 256
    assert chat["gen_ai.response.id"] == "chatcmpl-123"
    assert chat["gen_ai.response.model"] == "gpt-4o-2024-08-06"
    assert chat["symfonic.react.forced_tool_choice"] == "search"
    request = {k: v for k, v in chat.items() if k.startswith("gen_ai.request.")}
    assert request == {
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 512,
        "gen_ai.request.top_p": 0.9,
        "gen_ai.request.frequency_penalty": 0.5,
        "gen_ai.request.presence_penalty": 0.0,
        "gen_ai.request.stop_sequences": ("END",),
        "gen_ai.request.seed": 7,
        "gen_ai.request.choice.count": 2,
        "gen_ai.request.stream": True,
    }
    assert "sk-secret" not in repr(chat)
    # OpenAI's cached tokens are priced at its cached-input tier: 1000 cached + 200 plain.
    assert chat["symfonic.llm.cost_usd"] == pytest.approx(
        (200 * 2.5 + 1000 * 1.25 + 300 * 10) / 1e6
    )


def test_langchain_usage_details(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.llm_end(
        LLMEndEvent(
            model="claude-sonnet-4-5",
            output="x",
            usage={
                "input_tokens": 100,
                "output_tokens": 50,
                "input_token_details": {"cache_read": 60, "cache_creation": 20},
                "output_token_details": {"reasoning": 30},
            },
        )
    )
    chat = span_attrs(telemetry.span("chat claude-sonnet-4-5"))
    assert chat["gen_ai.usage.cache_read.input_tokens"] == 60
    assert chat["gen_ai.usage.cache_creation.input_tokens"] == 20
    assert chat["gen_ai.usage.reasoning.output_tokens"] == 30
    assert "gen_ai.response.id" not in chat  # Symfonic's own events carry none


def test_extra_attributes_are_cleaned_and_never_override_the_handler(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.llm_end(
        LLMEndEvent(model="gpt-4o", output="x", usage={}),
        attributes={
            "gen_ai.conversation.id": "thread-\ud800-1",
            "gen_ai.request.model": "forged",  # the handler's own key wins
            "tenant.id": "forged",
            "gen_ai.request.stop_sequences": ["a", "b"],
            "mixed": [1, "x"],  # not homogeneous: left out
            "nan": float("nan"),  # not encodable: left out
            "object": object(),
            7: "not a key",
            "big": "x" * (MAX_ATTRIBUTE_BYTES + 10),  # capped
        },
    )
    chat = telemetry.span("chat gpt-4o")
    attrs = span_attrs(chat)
    assert attrs["gen_ai.conversation.id"] == "thread-\ufffd-1"
    assert attrs["gen_ai.request.model"] == "gpt-4o"
    assert attrs["tenant.id"] == "unknown"
    assert attrs["gen_ai.request.stop_sequences"] == ("a", "b")
    assert attrs["big"] == "x" * MAX_ATTRIBUTE_BYTES
    for key in ("mixed", "nan", "object"):
        assert key not in attrs
    encode_spans([chat])  # the real OTLP encoder accepts it
    assert internal_errors(telemetry) == 0


def test_extra_strings_stay_within_one_budget_per_span(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    many = {f"k{i}": "y" * MAX_ATTRIBUTE_BYTES for i in range(10)}
    handler.llm_end(LLMEndEvent(model="gpt-4o", output="x", usage={}), attributes=many)
    kept = [k for k in span_attrs(telemetry.span("chat gpt-4o")) if k.startswith("k")]
    assert len(kept) == MAX_EXTRA_BYTES // MAX_ATTRIBUTE_BYTES


def test_hostile_attribute_mappings_never_lose_the_call(telemetry: InMemoryTelemetry) -> None:
    class Exploding(dict[str, Any]):
        def items(self) -> Any:
            raise RuntimeError("boom")

    handler = telemetry.handler()
    handler.llm_end(LLMEndEvent(model="m1", output="x", usage={}), attributes=Exploding(a=1))
    handler.llm_end(LLMEndEvent(model="m2", output="x", usage={}), attributes="not a mapping")  # type: ignore[arg-type]
    assert {s.name for s in telemetry.spans()} == {"chat m1", "chat m2"}
    assert internal_errors(telemetry) == 0


@pytest.mark.parametrize(
    ("operation", "span_name"),
    [
        ("text_completion", "text_completion gpt-3.5-turbo-instruct"),
        ("embeddings", "embeddings gpt-3.5-turbo-instruct"),
        ("chat", "chat gpt-3.5-turbo-instruct"),
        ("bogus", "chat gpt-3.5-turbo-instruct"),  # not a model operation: recorded as chat
    ],
)
def test_operation_name_sets_the_span_and_the_metrics(
    telemetry: InMemoryTelemetry, operation: str, span_name: str
) -> None:
    handler = telemetry.handler()
    handler.llm_end(
        LLMEndEvent(model="gpt-3.5-turbo-instruct", output="x", usage={"input_tokens": 3}),
        operation_name=operation,
        start_time_ns=time.time_ns() - 1_000_000,
        end_time_ns=time.time_ns(),
    )
    span = telemetry.span(span_name)
    expected = operation if operation != "bogus" else "chat"
    assert span.kind is SpanKind.CLIENT
    assert span_attrs(span)["gen_ai.operation.name"] == expected
    for name in ("gen_ai.client.operation.duration", "gen_ai.client.token.usage"):
        ((attrs, _),) = telemetry.points(name)
        assert attrs["gen_ai.operation.name"] == expected


def test_explicit_time_to_first_chunk(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    for value in (0.25, -1.0, float("nan"), "soon"):
        handler.llm_end(
            LLMEndEvent(model="gpt-4o", output="x", usage={}, duration_ms=900.0),
            time_to_first_chunk_s=value,  # type: ignore[arg-type]
        )
    ((_, point),) = telemetry.points("gen_ai.client.operation.time_to_first_chunk")
    assert isinstance(point, HistogramDataPoint)
    assert (point.count, point.sum) == (1, 0.25)  # only the usable value
    ttfcs = [span_attrs(s).get("gen_ai.response.time_to_first_chunk") for s in telemetry.spans()]
    assert sorted(ttfcs, key=str) == [0.25, None, None, None]


def test_agent_attributes_and_sub_agent_name(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(agent_name="support")
    handler.agent_start(
        AgentStartEvent("q", "sub"),
        attributes={"gen_ai.agent.name": "researcher", "gen_ai.conversation.id": "t-1"},
    )
    handler.agent_end(AgentEndEvent("sub", "x", 1.0, 1), attributes={"symfonic.run.outcome": "no"})
    run = telemetry.span("invoke_agent researcher")
    assert span_attrs(run)["gen_ai.agent.name"] == "researcher"
    assert span_attrs(run)["gen_ai.conversation.id"] == "t-1"
    assert span_attrs(run)["symfonic.run.outcome"] == "completed"
    # The counters carry the framework's agent name too (bounded: see test_agent_names).
    ((attrs, _),) = telemetry.points("symfonic.agent.runs")
    assert attrs["gen_ai.agent.name"] == "researcher"


def test_adapter_tool_span_records_its_duration(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    start = time.time_ns()
    span = handler.start_tool(
        "r",
        "search",
        call_id="c1",
        start_time_ns=start,
        attributes={"gen_ai.tool.type": "function"},
    )
    handler.end_tool(
        span,
        error_type="TimeoutError",
        end_time_ns=start + 250_000_000,
        attributes={"gen_ai.tool.call.result": "captured by the adapter"},
    )
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    tool = telemetry.span("execute_tool search")
    attrs = span_attrs(tool)
    assert attrs["gen_ai.tool.type"] == "function"
    assert attrs["gen_ai.tool.call.result"] == "captured by the adapter"
    assert attrs["error.type"] == "TimeoutError"
    assert tool.status.status_code is StatusCode.ERROR
    ((metric_attrs, point),) = telemetry.points("gen_ai.execute_tool.duration")
    assert metric_attrs == {
        "gen_ai.tool.name": "search",
        "gen_ai.agent.name": "symfonic",
        "error.type": "TimeoutError",
    }
    assert isinstance(point, HistogramDataPoint)
    assert point.sum == pytest.approx(0.25)


def test_parent_wins_over_the_run(telemetry: InMemoryTelemetry) -> None:
    """An adapter nesting spans under a node span of its own passes it as ``parent``."""
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    node = handler.start_call("invoke_node", "invoke_node agent", run_id="r")
    assert node is not None
    under_node = trace.set_span_in_context(node)
    handler.llm_end(LLMEndEvent("gpt-4o", "x", {}, run_id="r"), parent=under_node)
    handler.end_tool(handler.start_tool("r", "search", parent=under_node))
    handler.end_call(node)
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    node_span = telemetry.span("invoke_node agent")
    assert node_span.kind is SpanKind.INTERNAL
    assert span_attrs(node_span)["gen_ai.operation.name"] == "invoke_node"
    assert node_span.parent is not None
    assert node_span.parent.span_id == telemetry.span("invoke_agent symfonic").context.span_id
    for name in ("chat gpt-4o", "execute_tool search"):
        child = telemetry.span(name)
        assert child.parent is not None and child.parent.span_id == node_span.context.span_id


def test_retrieval_call_span(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    span = handler.start_call(
        "retrieval", "retrieval vectors", run_id="r", attributes={"gen_ai.data_source.id": "kb"}
    )
    handler.end_call(span, attributes={"gen_ai.retrieval.documents.count": 4})
    failed = handler.start_call("retrieval", "retrieval vectors", run_id="r")
    handler.end_call(failed, error_type="ConnectionError")
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    ok, bad = sorted(
        (s for s in telemetry.spans() if s.name == "retrieval vectors"),
        key=lambda s: s.start_time or 0,
    )
    assert ok.kind is SpanKind.CLIENT
    assert span_attrs(ok) == {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.data_source.id": "kb",
        "gen_ai.retrieval.documents.count": 4,
        "tenant.id": "unknown",
        "symfonic.run.id": "r",
    }
    assert bad.status.status_code is StatusCode.ERROR
    assert telemetry.points("gen_ai.execute_tool.duration") == []  # not a tool


def test_calls_of_no_run_and_no_parent(telemetry: InMemoryTelemetry) -> None:
    """A tool needs a run or a parent; another call becomes a root span, never the ambient's."""
    handler = telemetry.handler()
    tracer = telemetry.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("ambient"):
        assert handler.start_tool("unknown", "t") is None
        span = handler.start_call("", "standalone step", run_id="unknown")
    handler.end_call(span)
    handler.end_call(None)
    handler.end_tool(None)
    assert telemetry.span("standalone step").parent is None
    assert "gen_ai.operation.name" not in span_attrs(telemetry.span("standalone step"))
    assert internal_errors(telemetry) == 0


def test_hostile_adapter_arguments_never_raise(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    weird = SimpleNamespace()
    span = handler.start_call(weird, "\ud800" * 10_000, run_id="r", start_time_ns=-5)  # type: ignore[arg-type]
    assert span is not None
    handler.end_call(span, error_type="\x00", end_time_ns=2**70)
    tool = handler.start_tool("r", "t" * 1_000_000, call_id=object())  # type: ignore[arg-type]
    handler.end_tool(tool, end_time_ns=1)  # before the start: ignored
    handler.end_tool(weird)  # type: ignore[arg-type]  # not a span of ours: counted, not raised
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    for finished in telemetry.spans():
        encode_spans([finished])
    assert len(telemetry.spans()) == 3
    assert internal_errors(telemetry) == 1  # the object that is no span


def test_request_parameters_in_json_shape() -> None:
    from symfonic_otel.read.request_params import request_attributes

    assert request_attributes({"max_tokens": 10, "stop_sequences": ["\n\n", 5]}) == {
        "gen_ai.request.max_tokens": 10,
        "gen_ai.request.stop_sequences": ("\n\n",),
    }
    assert request_attributes(json.loads('{"n": 1, "temperature": true}')) == {}
    assert request_attributes(None) == {}
