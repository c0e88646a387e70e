"""The telemetry contract (DESIGN §3) for one scripted run: every span and every metric point."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics.export import HistogramDataPoint
from opentelemetry.trace import SpanKind, StatusCode

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    LLMEndEvent,
    LLMStartEvent,
    TextDeltaEvent,
    ToolCallStartEvent,
    ToolResultEvent,
)
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.call_points import assert_react_call_point
from tests.support.event_scripts import T0_NS, bail_with_synthesis, replay

RUN = "run-1"
QUERY = "What is our refund policy?"


def _bail_with_synthesis_events() -> list[tuple[str, Any]]:
    return bail_with_synthesis(RUN, QUERY)


async def test_span_tree_times_attributes_and_events(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(agent_name="support")
    tracer = telemetry.tracer_provider.get_tracer("web")
    with tracer.start_as_current_span("POST /chat") as request_span, tenant_scope("acme"):
        await handler.on_agent_start(_bail_with_synthesis_events()[0][1])
    # Later events arrive with some unrelated span current: parenting must ignore it.
    with tracer.start_as_current_span("unrelated"):
        await replay(handler, _bail_with_synthesis_events()[1:])

    run = telemetry.span("invoke_agent support")
    assert run.kind is SpanKind.INTERNAL
    assert run.parent is not None
    assert run.parent.span_id == request_span.get_span_context().span_id
    assert dict(run.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "support",
        "tenant.id": "acme",
        "symfonic.run.id": RUN,
        "symfonic.react.termination_reason": "tool_calls_with_no_text",
        "symfonic.run.outcome": "completed",
        "symfonic.response.empty": False,
        "symfonic.run.inference_calls": 2,
        "symfonic.run.tool_calls": 0,
        "symfonic.run.repeated_tool_calls": 0,
    }
    assert run.status.status_code is StatusCode.UNSET
    assert [e.name for e in run.events] == [
        "symfonic.react.loop_end",
        "symfonic.fabrication.detected",
        "gen_ai.evaluation.result",
    ]
    assert dict(run.events[0].attributes or {}) == {
        "symfonic.react.termination_reason": "tool_calls_with_no_text",
        "symfonic.react.iteration_index": 0,
        "symfonic.react.content_type": "list",
        "symfonic.react.has_tool_calls": True,
        "symfonic.react.tool_call_count": 2,
    }
    assert dict(run.events[1].attributes or {}) == {
        "symfonic.fabrication.mode": "observe",
        "symfonic.fabrication.action": "observed",
        "symfonic.fabrication.max_confidence": 0.65,
        "symfonic.fabrication.findings": 1,
        "symfonic.fabrication.finding_kinds": ("unsupported_url",),
        "symfonic.fabrication.refuse_threshold": 0.8,
    }
    # The same detection as the semconv evaluation event; no explanation without capture.
    assert dict(run.events[2].attributes or {}) == {
        "gen_ai.evaluation.name": "symfonic.fabrication",
        "gen_ai.evaluation.score.value": 0.65,
        "gen_ai.evaluation.score.label": "observed",
    }

    chats = sorted(
        (s for s in telemetry.spans() if s.name == "chat gpt-4o"), key=lambda s: s.start_time or 0
    )
    assert len(chats) == 2
    react, synthesis = chats
    for chat in chats:
        assert chat.kind is SpanKind.CLIENT
        assert chat.parent is not None and chat.parent.span_id == run.context.span_id
        assert chat.context.trace_id == run.context.trace_id
    assert react.start_time == T0_NS
    assert react.end_time == T0_NS + 800_000_000
    assert synthesis.start_time == T0_NS + 1_500_000_000
    assert synthesis.end_time == T0_NS + 1_750_000_000
    assert dict(react.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.provider.name": "openai",
        "symfonic.node.name": "react",
        "symfonic.react.iteration_index": 0,
        "tenant.id": "acme",
        "symfonic.run.id": RUN,
        "symfonic.llm.pricing_unknown": False,
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 30,
        "symfonic.llm.cost_usd": pytest.approx((1200 * 2.5 + 30 * 10.0) / 1e6),
    }
    assert synthesis.attributes is not None
    assert synthesis.attributes["symfonic.node.name"] == "react_synthesize_fallback"
    assert synthesis.attributes["symfonic.synthesis.recovered"] is True
    assert synthesis.attributes["gen_ai.usage.input_tokens"] == 1000
    assert synthesis.attributes["gen_ai.usage.output_tokens"] == 20
    # Private by default: no text anywhere.
    for span in telemetry.spans():
        for key in span.attributes or {}:
            assert not key.startswith("gen_ai.input"), key
            assert not key.startswith("gen_ai.output"), key
        for event in span.events:
            assert "preview" not in " ".join(event.attributes or {})


async def test_metric_points(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(agent_name="support")
    with tenant_scope("acme"):
        await replay(handler, _bail_with_synthesis_events())

    runs = telemetry.points("symfonic.agent.runs")
    assert runs == [
        (
            {
                "tenant.id": "acme",
                "gen_ai.agent.name": "support",
                "symfonic.run.outcome": "completed",
                "symfonic.response.empty": False,
            },
            1,
        )
    ]
    bails = telemetry.points("symfonic.react.silent_bails")
    assert bails == [
        (
            {
                "tenant.id": "acme",
                "gen_ai.agent.name": "support",
                "symfonic.react.termination_reason": "tool_calls_with_no_text",
            },
            1,
        )
    ]
    assert telemetry.points("symfonic.react.synthesis_fallbacks") == [
        (
            {
                "tenant.id": "acme",
                "gen_ai.request.model": "gpt-4o",
                "symfonic.synthesis.recovered": True,
            },
            1,
        )
    ]
    assert telemetry.points("symfonic.agent.active_runs") == [({"gen_ai.agent.name": "support"}, 0)]
    ((duration_attrs, duration),) = telemetry.points("gen_ai.invoke_agent.duration")
    assert duration_attrs == {  # histograms carry no tenant by default
        "gen_ai.agent.name": "support",
        "symfonic.run.outcome": "completed",
    }
    assert isinstance(duration, HistogramDataPoint)
    assert (duration.count, duration.sum) == (1, 1.5)

    ((iter_attrs, iterations),) = telemetry.points("symfonic.react.iterations")
    assert iter_attrs == {"gen_ai.agent.name": "support"}
    assert isinstance(iterations, HistogramDataPoint)
    assert (iterations.count, iterations.sum) == (1, 1)  # one loop call; synthesis excluded

    op_points = {
        attrs["symfonic.node.name"]: (attrs, point)
        for attrs, point in telemetry.points("gen_ai.client.operation.duration")
    }
    assert set(op_points) == {"react", "react_synthesize_fallback"}
    assert_react_call_point(*op_points["react"], seconds=0.8)

    tokens = {
        (a["symfonic.node.name"], a["gen_ai.token.type"]): p
        for a, p in telemetry.points("gen_ai.client.token.usage")
    }
    assert {k: (p.count, p.sum) for k, p in tokens.items()} == {  # type: ignore[union-attr]
        ("react", "input"): (1, 1200),
        ("react", "output"): (1, 30),
        ("react_synthesize_fallback", "input"): (1, 1000),
        ("react_synthesize_fallback", "output"): (1, 20),
    }
    token_point = tokens[("react", "input")]
    assert isinstance(token_point, HistogramDataPoint)
    assert list(token_point.explicit_bounds) == list(semconv.GEN_AI_TOKEN_BUCKETS)

    cost = {a["symfonic.node.name"]: (a, v) for a, v in telemetry.points("symfonic.llm.cost.usd")}
    assert cost["react"] == (
        {
            "tenant.id": "acme",
            "gen_ai.request.model": "gpt-4o",
            "symfonic.node.name": "react",
            "symfonic.llm.pricing_unknown": False,
        },
        pytest.approx((1200 * 2.5 + 30 * 10.0) / 1e6),
    )
    assert cost["react_synthesize_fallback"][1] == pytest.approx((1000 * 2.5 + 20 * 10.0) / 1e6)

    assert telemetry.points("symfonic.fabrication.detections") == [
        (
            {
                "tenant.id": "acme",
                "symfonic.fabrication.mode": "observe",
                "symfonic.fabrication.action": "observed",
            },
            1,
        )
    ]
    ((conf_attrs, conf),) = telemetry.points("symfonic.fabrication.max_confidence")
    assert conf_attrs == {
        "symfonic.fabrication.mode": "observe",
        "symfonic.fabrication.action": "observed",
    }
    assert isinstance(conf, HistogramDataPoint)
    assert conf.sum == pytest.approx(0.65)
    assert telemetry.points("symfonic.telemetry.orphaned_runs") == []
    assert telemetry.points("symfonic.telemetry.dropped_events") == []


RETENTION_INSTRUMENTS = (
    semconv.RETENTION_TRACES,
    semconv.RETENTION_DROPPED_SPANS,
    semconv.RETENTION_LATE_KEEPS,
    semconv.RETENTION_HELD_SPANS,
)


async def test_units_and_descriptions_match_the_names_module(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    with tenant_scope("acme"):
        await replay(handler, _bail_with_synthesis_events())
    await handler.on_agent_start(AgentStartEvent(query="q", run_id="orphan"))
    # A streamed call (time to first chunk) and a tool call (its duration).
    await handler.on_llm_start(LLMStartEvent(model="x", messages=[], run_id="orphan"))
    await handler.on_text_delta(TextDeltaEvent(text="hi", run_id="orphan"))
    await handler.on_llm_end(LLMEndEvent(model="x", output="hi", usage={}, run_id="orphan"))
    await handler.on_tool_call_start(ToolCallStartEvent("c1", "search", {"q": 1}, run_id="orphan"))
    await handler.on_tool_result(ToolResultEvent("c1", "search", run_id="orphan"))
    await handler.on_tool_call_start(ToolCallStartEvent("c2", "search", {"q": 1}, run_id="orphan"))
    await handler.on_tool_result(ToolResultEvent("c2", "search", run_id="orphan"))
    handler.close_open_runs()
    handler.llm_end(LLMEndEvent(model="x", output="", usage={}, run_id="nope"))
    recorded = telemetry.metrics()
    for spec in semconv.ALL_INSTRUMENTS:
        if spec is semconv.DROPPED_SPANS or spec in RETENTION_INSTRUMENTS:
            continue  # the SDK setup's counters, not the handler's
        assert spec.name in recorded, spec.name
        assert recorded[spec.name].unit == spec.unit, spec.name
        assert recorded[spec.name].description == spec.description, spec.name  # the HELP text


async def test_error_outcome_sets_status_and_error_type(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r"))
    handler.llm_end(
        LLMEndEvent(model="claude-sonnet-4-5", output="", usage={}, run_id="r", outcome="error"),
        error_type="RateLimitError",
    )
    handler.agent_end(
        AgentEndEvent(
            run_id="r", final_response=None, duration_ms=10.0, node_count=None, outcome="error"
        ),
        error_type="RateLimitError",
    )
    run = telemetry.span("invoke_agent symfonic")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes is not None
    assert run.attributes["error.type"] == "RateLimitError"
    assert "symfonic.response.empty" not in run.attributes  # an error is not an empty answer
    assert run.attributes["symfonic.run.stop_reason"] == "error"
    chat = telemetry.span("chat claude-sonnet-4-5")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.provider.name"] == "anthropic"
    ((attrs, _),) = telemetry.points("gen_ai.client.operation.duration")
    assert attrs["error.type"] == "RateLimitError"
    [(run_attrs, runs)] = telemetry.points("symfonic.agent.runs")
    assert runs == 1 and run_attrs["symfonic.run.outcome"] == "error"
    assert "symfonic.response.empty" not in run_attrs


async def test_missing_timestamp_ends_now_and_starts_duration_earlier(
    telemetry: InMemoryTelemetry,
) -> None:
    import time

    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r"))
    before = time.time_ns()
    handler.llm_end(LLMEndEvent(model="m", output="x", usage={}, run_id="r", duration_ms=120.0))
    after = time.time_ns()
    handler.agent_end(AgentEndEvent("r", "x", 200.0, 1))
    chat = telemetry.span("chat m")
    assert chat.end_time is not None and chat.start_time is not None
    assert before <= chat.end_time <= after
    assert chat.end_time - chat.start_time == 120_000_000


async def test_unknown_model_records_no_cost(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r"))
    handler.llm_end(
        LLMEndEvent(model="qwen3-max", output="x", usage={"input_tokens": 5}, run_id="r")
    )
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    chat = telemetry.span("chat qwen3-max")
    assert chat.attributes is not None
    assert chat.attributes["symfonic.llm.pricing_unknown"] is True
    assert chat.attributes["gen_ai.provider.name"] == "dashscope"
    assert "symfonic.llm.cost_usd" not in chat.attributes
    assert telemetry.points("symfonic.llm.cost.usd", include_zeros=True) == [
        (
            {
                "tenant.id": "unknown",
                "gen_ai.request.model": "qwen3-max",
                "symfonic.node.name": "",
                "symfonic.llm.pricing_unknown": True,
            },
            0.0,
        )
    ]


async def test_price_override(telemetry: InMemoryTelemetry) -> None:
    from symfonic_otel import ModelPrice

    handler = telemetry.handler(pricing={"qwen3-max": ModelPrice(1.0, 2.0)})
    handler.agent_start(AgentStartEvent(query="q", run_id="r"))
    handler.llm_end(
        LLMEndEvent(
            model="qwen3-max-2026-01",
            output="x",
            usage={"input_tokens": 1_000_000, "output_tokens": 500_000},
            run_id="r",
        )
    )
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    assert telemetry.value("symfonic.llm.cost.usd") == pytest.approx(2.0)


async def test_duplicate_agent_end_is_ignored(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r"))
    end = AgentEndEvent("r", "done", 5.0, 1)
    handler.agent_end(end)
    handler.agent_end(end)
    assert len([s for s in telemetry.spans() if s.name.startswith("invoke_agent")]) == 1
    assert telemetry.value("symfonic.agent.runs") == 1
    assert telemetry.points("symfonic.telemetry.dropped_events") == [
        (
            {
                "symfonic.telemetry.event": "agent_end",
                "symfonic.telemetry.drop_reason": "duplicate",
            },
            1,
        )
    ]


async def test_agent_end_before_start_is_dropped_and_counted(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_end(AgentEndEvent("never-started", "x", 1.0, 1))
    assert telemetry.spans() == []
    assert telemetry.value("symfonic.agent.runs") == 0
    assert (
        telemetry.value(
            "symfonic.telemetry.dropped_events", {"symfonic.telemetry.drop_reason": "unknown_run"}
        )
        == 1
    )


async def test_llm_spans_never_parent_on_the_ambient_span(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    tracer = telemetry.tracer_provider.get_tracer("other")
    with tracer.start_as_current_span("ambient") as ambient:
        handler.llm_end(LLMEndEvent(model="gpt-4o", output="x", usage={}, run_id=""))
    chat = telemetry.span("chat gpt-4o")
    assert chat.parent is None
    assert chat.context.trace_id != ambient.get_span_context().trace_id


async def test_active_runs_goes_up_then_down(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="a"))
    handler.agent_start(AgentStartEvent(query="q", run_id="b"))
    assert telemetry.value("symfonic.agent.active_runs") == 2
    handler.agent_end(AgentEndEvent("a", "x", 1.0, 1))
    assert telemetry.value("symfonic.agent.active_runs") == 1
    handler.agent_end(AgentEndEvent("b", "x", 1.0, 1))
    assert telemetry.value("symfonic.agent.active_runs") == 0


def test_run_span_is_not_made_current(telemetry: InMemoryTelemetry) -> None:
    """Starting a run must not leave our span attached to the caller's context."""
    handler = telemetry.handler()
    before = trace.get_current_span()
    handler.agent_start(AgentStartEvent(query="q", run_id="r"))
    assert trace.get_current_span() is before
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
