"""Other instrumentations' GenAI spans for the span-processor tests: rigs and scripted agents.

A rig is one real instrumentation (OpenLLMetry's, OpenInference's or OpenTelemetry's util-genai
LangChain instrumentor; Pydantic AI's own spans) exporting into in-memory providers, with the
``SilentBailSpanProcessor`` installed on the same tracer provider, content capture on or off as
that instrumentation spells it. The LangGraph agents call the real ``ChatOpenAI`` over a loopback
server (so finish reasons are the provider's, parsed by the adapter); Pydantic AI agents run on
its ``FunctionModel``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_openai import ChatOpenAI

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import add, raw_react_graph, react_agent, restore_unwrapped
from tests.support.langchain_support import wrapt_snapshot as langchain_snapshot
from tests.support.wire_server import WireResponse, serve

OPENLLMETRY: Final = "openllmetry"
OPENINFERENCE: Final = "openinference"
UTIL_GENAI: Final = "util-genai"
PYDANTIC_AI: Final = "pydantic-ai"
LANGCHAIN_INSTRUMENTATIONS: Final = (OPENLLMETRY, OPENINFERENCE, UTIL_GENAI)
# The scenarios every rig runs: an answer after one tool call, a step cap that ends the run
# normally (LangGraph's remaining_steps guard), a step cap that raises, a blank final answer.
ANSWER: Final = "answer"
CAP_ANSWERED: Final = "cap_answered"
CAP_RAISED: Final = "cap_raised"
BLANK: Final = "blank"
# Not in ``SCENARIOS``: the model calls one tool three times with the same arguments, then
# answers (a run that loops and ends well).
LOOP: Final = "loop"
# Where each instrumentation carries the tenant the application gave the run.
TENANT_ATTRIBUTES: Final = {
    OPENLLMETRY: (f"{semconv.TRACELOOP_ASSOCIATION_PREFIX}tenant_id",),
    OPENINFERENCE: ("user.id",),
    UTIL_GENAI: (semconv.TENANT_ID,),
    PYDANTIC_AI: (semconv.TENANT_ID,),
}
APP_SCOPE: Final = "the-application"


def openai_reply(
    finish_reason: str, text: str | None = None, call: int | None = None, a: int | None = None
) -> Any:
    """A Chat Completions body as OpenAI sends it: text, or one ``add`` call (``a`` its first
    argument, the call's number unless given), and the reason."""
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if call is not None:
        arguments = json.dumps({"a": call if a is None else a, "b": 1})
        function = {"name": "add", "arguments": arguments}
        message["tool_calls"] = [{"id": f"call_{call}", "type": "function", "function": function}]
    return WireResponse(
        {
            "id": f"chatcmpl-{call}",
            "object": "chat.completion",
            "created": 1763640368,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
            ],
            "usage": {"prompt_tokens": 52, "completion_tokens": 18, "total_tokens": 70},
        }
    )


def replies(scenario: str) -> list[Any]:
    calls = [openai_reply("tool_calls", call=i) for i in range(8)]
    answer = openai_reply("stop", "The sum is 2.")
    return {
        ANSWER: [calls[0], answer],
        CAP_ANSWERED: calls,
        CAP_RAISED: calls,
        BLANK: [calls[0], openai_reply("stop", "")],
        LOOP: [*(openai_reply("tool_calls", call=i, a=1) for i in range(3)), answer],
    }[scenario]


@dataclass
class Rig:
    """One instrumentation and the processor on one in-memory tracer provider."""

    name: str
    content: bool
    memory: InMemoryTelemetry
    processor: SilentBailSpanProcessor
    undo: list[Any] = field(default_factory=list)

    def run(self, scenario: str, tenant: str) -> None:
        """One agent run of ``scenario`` for ``tenant``; a raised step cap is swallowed."""
        if self.name == PYDANTIC_AI:
            run_pydantic_ai(self, scenario, tenant)
        else:
            run_langgraph(self, scenario, tenant)

    def bails(self, tenant: str) -> dict[str, float]:
        return {
            attrs[semconv.REACT_TERMINATION_REASON]: value
            for attrs, value in self.memory.points(semconv.SILENT_BAILS.name)
            if attrs.get(semconv.TENANT_ID) == tenant and isinstance(value, int | float)
        }

    def runs(self, tenant: str) -> dict[tuple[str, bool | None], float]:
        return {
            (attrs[semconv.RUN_OUTCOME], attrs.get(semconv.RESPONSE_EMPTY)): value
            for attrs, value in self.memory.points(semconv.AGENT_RUNS.name)
            if attrs.get(semconv.TENANT_ID) == tenant and isinstance(value, int | float)
        }

    def stop_reasons(self, tenant: str) -> dict[str, float]:
        return {
            attrs[semconv.RUN_STOP_REASON]: value
            for attrs, value in self.memory.points(semconv.STOP_REASONS.name)
            if attrs.get(semconv.TENANT_ID) == tenant and isinstance(value, int | float)
        }


def run_langgraph(rig: Rig, scenario: str, tenant: str) -> None:
    config: RunnableConfig = {
        "metadata": {"tenant_id": tenant, "user_id": tenant},
        "recursion_limit": {CAP_ANSWERED: 6, LOOP: 10}.get(scenario, 5),
    }
    with serve(*replies(scenario)) as server, app_request(rig, tenant):
        model = ChatOpenAI(
            model="gpt-4o-mini", api_key="test", base_url=f"{server.url}/v1", max_retries=0
        )
        if scenario == CAP_RAISED:
            graph = raw_react_graph(model, [add])
        else:
            graph = react_agent(model, [add])
        with contextlib.suppress(Exception), tenant_context(rig, tenant):  # a raised step cap
            graph.invoke({"messages": [("user", "1+1")]}, config=config)


def tenant_context(rig: Rig, tenant: str) -> contextlib.AbstractContextManager[Any]:
    """OpenInference records LangChain metadata as one JSON attribute: the tenant goes in as
    its ``user.id``, the way OpenInference takes one (``using_user``)."""
    if rig.name != OPENINFERENCE:
        return contextlib.nullcontext()
    from openinference.instrumentation import using_user

    return using_user(tenant)


@contextlib.contextmanager
def app_request(rig: Rig, tenant: str) -> Iterator[None]:
    """util-genai and Pydantic AI record no tenant: the application's own request span does,
    as a web framework's server span would, and the agent's spans nest under it."""
    if rig.name not in (UTIL_GENAI, PYDANTIC_AI):
        yield
        return
    tracer = rig.memory.tracer_provider.get_tracer(APP_SCOPE)
    with tracer.start_as_current_span("POST /chat", attributes={semconv.TENANT_ID: tenant}):
        yield


def run_pydantic_ai(rig: Rig, scenario: str, tenant: str) -> None:
    provider = rig.memory.tracer_provider
    agent = pydantic_ai_agent(scenario, provider, rig.memory.meter_provider, rig.content)
    with app_request(rig, tenant):
        run_pydantic_agent(agent, request_limit=5 if scenario == LOOP else 3)


def pydantic_ai_agent(
    scenario: str, tracer_provider: Any, meter_provider: Any, content: bool
) -> Any:
    """A Pydantic AI agent with its own instrumentation on, over a ``FunctionModel`` that calls
    ``add_numbers`` once and answers (``ANSWER``), answers blank (``BLANK``), or keeps calling
    it (``CAP_RAISED``: the request limit ends the run)."""
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if scenario == LOOP:  # three calls, then the answer after the third result
            if len(messages) >= 7:
                return ModelResponse(parts=[TextPart("The sum is 3.")])
        elif scenario != CAP_RAISED and len(messages) > 1:  # after the first tool result
            return ModelResponse(parts=[TextPart("" if scenario == BLANK else "The sum is 3.")])
        return ModelResponse(parts=[ToolCallPart("add_numbers", {"a": 1, "b": 2})])

    settings = InstrumentationSettings(
        tracer_provider=tracer_provider, meter_provider=meter_provider, include_content=content
    )
    agent = Agent(
        FunctionModel(model), name="calculator", capabilities=[Instrumentation(settings=settings)]
    )

    @agent.tool_plain
    def add_numbers(a: int, b: int) -> int:
        return a + b

    return agent


def run_pydantic_agent(agent: Any, request_limit: int = 3) -> None:
    from pydantic_ai import UsageLimits

    with contextlib.suppress(Exception):  # UsageLimitExceeded, or a rejected blank answer
        agent.run_sync("1+2", usage_limits=UsageLimits(request_limit=request_limit))


@contextlib.contextmanager
def rig(
    name: str,
    content: bool,
    monkeypatch: pytest.MonkeyPatch,
    *,
    installed: bool = True,
    **options: Any,
) -> Iterator[Rig]:
    """The instrumentation ``name`` with capture ``content``, undone at the end; the processor
    (built with ``options``) is on the tracer provider unless not ``installed``."""
    memory = InMemoryTelemetry()
    options.setdefault("tenant_attributes", TENANT_ATTRIBUTES[name])
    processor = SilentBailSpanProcessor(meter_provider=memory.meter_provider, **options)
    if installed:
        memory.tracer_provider.add_span_processor(processor)
    before = langchain_snapshot()
    instrumentor: Any = None
    if name == OPENLLMETRY:
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true" if content else "false")
        instrumentor = LangchainInstrumentor()
        instrumentor.instrument(
            tracer_provider=memory.tracer_provider, meter_provider=memory.meter_provider
        )
    elif name == OPENINFERENCE:
        from openinference.instrumentation import TraceConfig
        from openinference.instrumentation.langchain import LangChainInstrumentor

        hidden = not content
        config = TraceConfig(
            hide_inputs=hidden,
            hide_outputs=hidden,
            hide_input_messages=hidden,
            hide_output_messages=hidden,
            hide_input_text=hidden,
            hide_output_text=hidden,
        )
        instrumentor = LangChainInstrumentor()
        instrumentor.instrument(tracer_provider=memory.tracer_provider, config=config)
    elif name == UTIL_GENAI:
        from opentelemetry.instrumentation.genai.langchain import (
            LangChainInstrumentor as GenAILangChainInstrumentor,
        )

        monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
        monkeypatch.setenv(semconv.CAPTURE_CONTENT_ENV, "SPAN_ONLY" if content else "NO_CONTENT")
        instrumentor = GenAILangChainInstrumentor()
        instrumentor.instrument(
            tracer_provider=memory.tracer_provider, meter_provider=memory.meter_provider
        )
    try:
        yield Rig(name, content, memory, processor)
    finally:
        if instrumentor is not None and instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.uninstrument()
        restore_unwrapped(before)
        memory.shutdown()


# What the processor concludes, per instrumentation, capture and scenario: the bail it counts
# (None: counted as a run, no bail). Measured by tests/spans/test_span_processor_peers.py, and the
# table of the span-processor docs page is checked against it.
BAIL_STEP_CAP: Final = "tool_calls_with_no_text"
BAIL_BLANK: Final = "no_content_no_tool_calls"
SCENARIOS: Final = (CAP_ANSWERED, CAP_RAISED, BLANK, ANSWER)
SEEN: Final[dict[tuple[str, bool], dict[str, str | None]]] = {
    **{
        (name, True): {
            CAP_ANSWERED: BAIL_STEP_CAP,
            CAP_RAISED: BAIL_STEP_CAP,
            BLANK: BAIL_BLANK,
            ANSWER: None,
        }
        for name in LANGCHAIN_INSTRUMENTATIONS
    },
    **{
        (name, False): {
            CAP_ANSWERED: BAIL_STEP_CAP,
            CAP_RAISED: BAIL_STEP_CAP,
            BLANK: None,
            ANSWER: None,
        }
        for name in LANGCHAIN_INSTRUMENTATIONS
    },
    # Pydantic AI has no step cap that answers; it rejects a blank answer itself and raises.
    (PYDANTIC_AI, True): {CAP_RAISED: BAIL_STEP_CAP, BLANK: BAIL_BLANK, ANSWER: None},
    (PYDANTIC_AI, False): {CAP_RAISED: BAIL_STEP_CAP, BLANK: None, ANSWER: None},
}
# The run outcome each scenario records (the framework raised: error).
OUTCOMES: Final = {
    CAP_ANSWERED: "completed",
    CAP_RAISED: "error",
    ANSWER: "completed",
    BLANK: "completed",
}
PYDANTIC_AI_OUTCOMES: Final = {**OUTCOMES, BLANK: "error"}


# The docs table "what the span processor can see": one row per instrumentation and capture
# setting, one cell per scenario, rendered from ``SEEN``.
LABELS: Final = {
    OPENLLMETRY: "OpenLLMetry (`opentelemetry-instrumentation-langchain`)",
    OPENINFERENCE: "OpenInference (`openinference-instrumentation-langchain`)",
    UTIL_GENAI: "OpenTelemetry util-genai (`opentelemetry-instrumentation-genai-langchain`)",
    PYDANTIC_AI: "Pydantic AI (`Instrumentation`)",
}


def cell(name: str, content: bool, scenario: str) -> str:
    seen = SEEN[(name, content)]
    if scenario not in seen:
        return "n/a"
    bail = seen[scenario]
    if bail is not None:
        return f"bail `{bail}`"
    if scenario == ANSWER:  # the answer's text is known only when content is recorded
        return "run, no bail" if content else "run, no bail (`response.empty` unknown)"
    outcome = (PYDANTIC_AI_OUTCOMES if name == PYDANTIC_AI else OUTCOMES)[scenario]
    article = "an" if outcome[0] in "aeiou" else "a"
    return f"**not seen** ({article} `{outcome}` run)"


def visibility_rows() -> list[str]:
    return [
        f"| {LABELS[name]} | {'on' if content else 'off'} | "
        + " | ".join(cell(name, content, scenario) for scenario in SCENARIOS)
        + " |"
        for (name, content) in sorted(
            SEEN, key=lambda key: (list(LABELS).index(key[0]), not key[1])
        )
    ]
