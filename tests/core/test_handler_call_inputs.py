"""Symfonic's LLMStart and LLMPreCall through the core handler: what the chat span says was sent.

The events are the seed-003 mirrors of ``tests/support/symfonic_events.py`` and ``SimpleNamespace``
objects, never this package's classes; the messages are LangChain message objects or role dicts,
as Symfonic's may be. Everything goes through the real SDK into an in-memory exporter.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from opentelemetry.sdk.trace import ReadableSpan

from symfonic_otel import semconv
from symfonic_otel.core.steps import MAX_STEPS_PER_RUN, RunSteps
from symfonic_otel.read.content import MAX_CONTENT_CHARS
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.recorded import internal_errors, recorded_text, span_attrs
from tests.support.symfonic_events import AgentEnd, AgentStart, LLMEnd, LLMPreCall, LLMStart

SECRET = "customer 4242-7719 asked"
OUTPUT = "Refunds for 4242-7719 take 30 days."
SYSTEM = "You are the billing assistant."
SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
}
PARAMS = {
    "temperature": 0.2,
    "max_tokens": 512,
    "top_p": 0.9,
    "stop": ["\nObservation:"],
    "seed": 7,
    "tool_choice": "auto",
}


class _Unreadable:
    """A message whose content cannot be read."""

    type = "human"

    @property
    def content(self) -> str:
        raise RuntimeError("content is gone")


def _wire_messages() -> list[Any]:
    return [
        SystemMessage(SYSTEM),
        HumanMessage(f"{SECRET} for a refund"),
        AIMessage("", tool_calls=[{"name": "search", "args": {"query": "refund"}, "id": "c1"}]),
        ToolMessage("refund policy: 30 days", tool_call_id="c1"),
    ]


def _tools() -> list[dict[str, Any]]:
    return [{"name": "search", "description": "Search the billing docs.", "schema": SEARCH_SCHEMA}]


def _pre_call(**overrides: Any) -> LLMPreCall:
    fields: dict[str, Any] = {
        "model": "gpt-4o",
        "messages": _wire_messages(),
        "tools": _tools(),
        "run_id": "r",
        "invocation_params": PARAMS,
        "node_name": "react",
    }
    return LLMPreCall(**{**fields, **overrides})


def _start(messages: list[Any], system_prompt: str = "") -> LLMStart:
    """The loop's LLMStart of the react node's gpt-4o call (its view before the wire's)."""
    return LLMStart(
        model="gpt-4o",
        messages=messages,
        run_id="r",
        system_prompt=system_prompt,
        node_name="react",
    )


async def _call(telemetry: InMemoryTelemetry, handler: Any, *events: Any) -> ReadableSpan:
    """One run with one model call: ``events`` (LLMStart / LLMPreCall) before its LLMEnd."""
    await handler.on_agent_start(AgentStart(query="q", run_id="r"))
    for event in events:
        method = "on_llm_pre_call" if hasattr(event, "tools") else "on_llm_start"
        await getattr(handler, method)(event)
    await handler.on_llm_end(
        LLMEnd(model="gpt-4o", output=OUTPUT, usage={}, run_id="r", node_name="react")
    )
    await handler.on_agent_end(
        AgentEnd(run_id="r", final_response="ok", duration_ms=3.0, node_count=1)
    )
    return _chat(telemetry)


def _chat(telemetry: InMemoryTelemetry) -> ReadableSpan:
    (span,) = [s for s in telemetry.spans() if s.name == "chat gpt-4o"]
    return span


async def test_pre_call_gives_messages_instructions_tools_and_parameters(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(capture_content=True)
    engine_view = _start([HumanMessage("engine view, before consolidation")], SYSTEM)
    attrs = span_attrs(await _call(telemetry, handler, engine_view, _pre_call()))

    # The wire-accurate messages win over LLMStart's: the leading system message is the
    # instructions, the rest the input, tool call and tool result included.
    assert json.loads(attrs[semconv.GEN_AI_SYSTEM_INSTRUCTIONS]) == [
        {"type": "text", "content": SYSTEM}
    ]
    assert json.loads(attrs[semconv.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": f"{SECRET} for a refund"}]},
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "name": "search",
                    "id": "c1",
                    "arguments": {"query": "refund"},
                }
            ],
        },
        {
            "role": "tool",
            "parts": [
                {"type": "tool_call_response", "id": "c1", "response": "refund policy: 30 days"}
            ],
        },
    ]
    assert json.loads(attrs[semconv.GEN_AI_TOOL_DEFINITIONS]) == [
        {
            "type": "function",
            "name": "search",
            "description": "Search the billing docs.",
            "parameters": SEARCH_SCHEMA,
        }
    ]
    assert attrs[semconv.GEN_AI_REQUEST_TEMPERATURE] == 0.2
    assert attrs[semconv.GEN_AI_REQUEST_MAX_TOKENS] == 512
    assert attrs[semconv.GEN_AI_REQUEST_TOP_P] == 0.9
    assert attrs[semconv.GEN_AI_REQUEST_STOP_SEQUENCES] == ("\nObservation:",)
    assert attrs[semconv.GEN_AI_REQUEST_SEED] == 7
    assert semconv.CONTENT_TRUNCATED not in attrs
    # The call's own output is still the completion.
    (output,) = json.loads(attrs[semconv.GEN_AI_OUTPUT_MESSAGES])
    assert output["parts"] == [{"type": "text", "content": OUTPUT}]
    assert internal_errors(telemetry) == 0


async def test_llm_start_alone_gives_dict_messages_and_the_system_prompt(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(capture_content=True)
    messages: list[Any] = [
        {"role": "user", "content": SECRET},
        {"role": "assistant", "content": "Which invoice?"},
        {"role": "user", "content": "the last one"},
    ]
    start = SimpleNamespace(
        model="gpt-4o", messages=messages, run_id="r", system_prompt=SYSTEM, node_name="react"
    )
    await handler.on_agent_start(AgentStart(query="q", run_id="r"))
    await handler.on_llm_start(start)
    messages.append({"role": "assistant", "content": "appended after the call began"})
    await handler.on_llm_end(
        LLMEnd(model="gpt-4o", output="done", usage={}, run_id="r", node_name="react")
    )
    await handler.on_agent_end(
        AgentEnd(run_id="r", final_response="done", duration_ms=1.0, node_count=1)
    )
    attrs = span_attrs(_chat(telemetry))

    assert json.loads(attrs[semconv.GEN_AI_SYSTEM_INSTRUCTIONS]) == [
        {"type": "text", "content": SYSTEM}
    ]
    # The conversation as it was when the call began, not what the agent appended since.
    assert json.loads(attrs[semconv.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": SECRET}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "Which invoice?"}]},
        {"role": "user", "parts": [{"type": "text", "content": "the last one"}]},
    ]
    assert semconv.GEN_AI_TOOL_DEFINITIONS not in attrs
    assert not any(
        key.startswith("gen_ai.request.") and key != semconv.GEN_AI_REQUEST_MODEL for key in attrs
    )


async def test_system_prompt_also_in_the_messages_is_recorded_once(
    telemetry: InMemoryTelemetry,
) -> None:
    """The reference loop's LLMStart: the system message first and its text as system_prompt."""
    handler = telemetry.handler(capture_content=True)
    start = _start([SystemMessage(SYSTEM), HumanMessage("hi")], SYSTEM)
    attrs = span_attrs(await _call(telemetry, handler, start))
    assert json.loads(attrs[semconv.GEN_AI_SYSTEM_INSTRUCTIONS]) == [
        {"type": "text", "content": SYSTEM}
    ]
    assert json.loads(attrs[semconv.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    ]


async def test_capture_off_records_parameters_and_no_content(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(capture_content=False)
    start = _start([HumanMessage(SECRET)], f"{SECRET} system")
    tools = [{"name": "search", "description": f"{SECRET} tool", "schema": SEARCH_SCHEMA}]
    attrs = span_attrs(await _call(telemetry, handler, start, _pre_call(tools=tools)))

    recorded = recorded_text(telemetry)
    assert "4242-7719" not in recorded
    assert "refund" not in recorded
    for key in (
        semconv.GEN_AI_INPUT_MESSAGES,
        semconv.GEN_AI_SYSTEM_INSTRUCTIONS,
        semconv.GEN_AI_TOOL_DEFINITIONS,
        semconv.GEN_AI_OUTPUT_MESSAGES,
    ):
        assert all(key not in (s.attributes or {}) for s in telemetry.spans()), key
    # Parameters are not content: always recorded.
    assert attrs[semconv.GEN_AI_REQUEST_TEMPERATURE] == 0.2
    assert attrs[semconv.GEN_AI_REQUEST_MAX_TOKENS] == 512
    assert attrs[semconv.GEN_AI_REQUEST_SEED] == 7
    assert internal_errors(telemetry) == 0


@pytest.mark.parametrize(
    "messages",
    [
        pytest.param(42, id="not-a-list"),
        pytest.param("a bare string", id="string"),
        pytest.param([_Unreadable()], id="unreadable-message"),
    ],
)
async def test_malformed_messages_cost_only_themselves(
    telemetry: InMemoryTelemetry, messages: Any
) -> None:
    handler = telemetry.handler(capture_content=True)
    start = SimpleNamespace(model="gpt-4o", messages=messages, run_id="r", node_name="react")
    span = await _call(telemetry, handler, start, _pre_call(messages=messages))
    attrs = span_attrs(span)

    assert semconv.GEN_AI_INPUT_MESSAGES not in attrs
    assert semconv.GEN_AI_SYSTEM_INSTRUCTIONS not in attrs
    assert json.loads(attrs[semconv.GEN_AI_TOOL_DEFINITIONS])[0]["name"] == "search"
    assert attrs[semconv.GEN_AI_REQUEST_TEMPERATURE] == 0.2
    assert attrs[semconv.GEN_AI_REQUEST_MODEL] == "gpt-4o"
    assert span.parent is not None  # still under its run
    assert internal_errors(telemetry) == 0
    assert telemetry.value("symfonic.telemetry.dropped_events") == 0


async def test_unreadable_pre_call_messages_keep_llm_start_ones(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(capture_content=True)
    start = _start([HumanMessage("from the start")])
    attrs = span_attrs(await _call(telemetry, handler, start, _pre_call(messages=[_Unreadable()])))
    assert json.loads(attrs[semconv.GEN_AI_INPUT_MESSAGES])[0]["parts"][0]["content"] == (
        "from the start"
    )
    assert semconv.GEN_AI_TOOL_DEFINITIONS in attrs


async def test_output_messages_carry_the_finish_reason_semconv_requires(
    telemetry: InMemoryTelemetry,
) -> None:
    """semconv's output message has a required ``finish_reason``: the chat span's is the
    provider's own when the event reports one, else ``stop``; the run's final answer ``stop``."""
    handler = telemetry.handler(capture_content=True)
    chat = await _call(telemetry, handler)
    (run,) = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    assert json.loads(span_attrs(chat)[semconv.GEN_AI_OUTPUT_MESSAGES]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": OUTPUT}],
            "finish_reason": "stop",
        }
    ]
    assert json.loads(span_attrs(run)[semconv.GEN_AI_OUTPUT_MESSAGES]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "ok"}], "finish_reason": "stop"}
    ]
    await handler.on_agent_start(AgentStart(query="q", run_id="r2"))
    await handler.on_llm_end(
        SimpleNamespace(
            model="gpt-4o",
            output="cut short",
            usage={},
            run_id="r2",
            node_name="react",
            stop_reason="length",
        )
    )
    await handler.on_agent_end(
        AgentEnd(run_id="r2", final_response="", duration_ms=1.0, node_count=1)
    )
    (cut,) = [
        s
        for s in telemetry.spans()
        if s.name == "chat gpt-4o" and span_attrs(s).get(semconv.RUN_ID) == "r2"
    ]
    (message,) = json.loads(span_attrs(cut)[semconv.GEN_AI_OUTPUT_MESSAGES])
    assert message["finish_reason"] == "length"
    assert internal_errors(telemetry) == 0


async def test_long_input_is_truncated_and_flagged(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(capture_content=True)
    long_text = "x" * (MAX_CONTENT_CHARS + 100)
    attrs = span_attrs(
        await _call(telemetry, handler, _pre_call(messages=[HumanMessage(long_text)]))
    )
    (message,) = json.loads(attrs[semconv.GEN_AI_INPUT_MESSAGES])
    assert len(message["parts"][0]["content"]) == MAX_CONTENT_CHARS
    assert attrs[semconv.CONTENT_TRUNCATED] is True


async def test_pre_call_without_llm_start_times_the_call(telemetry: InMemoryTelemetry) -> None:
    """A pre-call alone starts the pending call: an LLMEnd without timing gets its start."""
    handler = telemetry.handler()
    span = await _call(telemetry, handler, _pre_call())
    assert span.start_time is not None and span.end_time is not None
    assert span.end_time >= span.start_time
    assert span_attrs(span)[semconv.GEN_AI_REQUEST_MAX_TOKENS] == 512


async def test_pre_call_of_an_unknown_run_is_counted(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    await handler.on_llm_pre_call(_pre_call(run_id="never-started"))
    await handler.on_llm_pre_call(_pre_call(run_id=""))  # standalone: nothing to wait for
    assert (
        telemetry.value(
            "symfonic.telemetry.dropped_events", {"symfonic.telemetry.drop_reason": "unknown_run"}
        )
        == 1
    )
    assert internal_errors(telemetry) == 0


def test_pending_calls_stay_capped_per_run() -> None:
    steps = RunSteps()
    for index in range(MAX_STEPS_PER_RUN * 3):
        steps.model_or_start(f"node-{index}").request = {"k": "v" * 100}
    assert len(steps.models) == MAX_STEPS_PER_RUN
    assert steps.model_at("node-0") is None  # the oldest went first
    assert steps.model_at(f"node-{MAX_STEPS_PER_RUN * 3 - 1}") is not None
    steps.drain()
    assert not steps.models


async def test_reference_loop_chat_spans_carry_their_input(telemetry: InMemoryTelemetry) -> None:
    from symfonic_otel.agent import ReactAgent
    from symfonic_otel.testing import ScriptedChatModel
    from tests.support.agent_support import TOOLS, call, turn

    handler = telemetry.handler(capture_content=True)
    script = [
        turn("", call("lookup", {"key": "x"}), finish="tool_calls", model="gpt-4o"),
        turn("x is value-of-x.", finish="stop", model="gpt-4o"),
    ]
    agent = ReactAgent(ScriptedChatModel(script), TOOLS, callbacks=[handler])
    await agent.run("what is x?", run_id="loop-1")

    first, second = sorted(
        (s for s in telemetry.spans() if s.name == "chat gpt-4o"), key=lambda s: s.start_time or 0
    )
    first_input = json.loads(span_attrs(first)[semconv.GEN_AI_INPUT_MESSAGES])
    assert first_input == [{"role": "user", "parts": [{"type": "text", "content": "what is x?"}]}]
    second_input = json.loads(span_attrs(second)[semconv.GEN_AI_INPUT_MESSAGES])
    assert [m["role"] for m in second_input] == ["user", "assistant", "tool"]
    assert second_input[2]["parts"][0]["response"] == "value-of-x"
    definitions = json.loads(span_attrs(first)[semconv.GEN_AI_TOOL_DEFINITIONS])
    assert sorted(d["name"] for d in definitions) == sorted(t.name for t in TOOLS)
    assert all(d["parameters"]["type"] == "object" for d in definitions)
    assert internal_errors(telemetry) == 0


@pytest.mark.parametrize("capture", [True, False])
async def test_reference_loop_sends_its_request_through_a_real_provider_adapter(
    telemetry: InMemoryTelemetry, capture: bool
) -> None:
    """ChatOpenAI over a loopback server: the loop's LLMPreCall carries the adapter's own
    invocation parameters and the bound tool, so the chat span has them."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    from symfonic_otel.agent import ReactAgent
    from tests.support.wire_server import WireResponse, serve

    @tool
    def stock(sku: str) -> str:
        """How many units of a SKU are in stock."""
        return f"{sku}: 7 units"

    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_750_000_000,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": OUTPUT},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
    }
    handler = telemetry.handler(capture_content=capture)
    with serve(WireResponse(completion)) as server:
        model = ChatOpenAI(
            model="gpt-4o",
            base_url=server.url + "/v1",
            api_key="test-key",
            max_retries=0,
            temperature=0.2,
            max_tokens=100,
        )
        await ReactAgent(model, [stock], callbacks=[handler]).run(f"{SECRET}: is sku-42 in stock?")

    attrs = span_attrs(_chat(telemetry))
    assert attrs[semconv.GEN_AI_REQUEST_TEMPERATURE] == 0.2
    assert attrs[semconv.GEN_AI_REQUEST_MAX_TOKENS] == 100
    assert attrs[semconv.GEN_AI_REQUEST_STREAM] is False
    if capture:
        (definition,) = json.loads(attrs[semconv.GEN_AI_TOOL_DEFINITIONS])
        assert definition["name"] == "stock"
        assert definition["description"] == "How many units of a SKU are in stock."
        assert set(definition["parameters"]["properties"]) == {"sku"}
        (sent,) = json.loads(attrs[semconv.GEN_AI_INPUT_MESSAGES])
        assert sent["parts"][0]["content"] == f"{SECRET}: is sku-42 in stock?"
    else:
        assert semconv.GEN_AI_TOOL_DEFINITIONS not in attrs
        assert "4242-7719" not in recorded_text(telemetry)
    assert internal_errors(telemetry) == 0
