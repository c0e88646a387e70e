"""Workloads and subjects of the overhead benchmark (see ``run.py``).

Every subject gets its own realistic SDK setup, the one a production service has: a
``TracerProvider`` with a ``BatchSpanProcessor`` and a ``MeterProvider`` with a
``PeriodicExportingMetricReader`` (60 s interval), both exporting to no-op exporters, so the
measured cost is the instrumentation's and the SDK's, not a network's.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    BaseCallbackHandler,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool, tool
from minimum import LangChainTap, Plan, SdkMinimum, discover
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from pydantic import PrivateAttr

# OpenLLMetry's content switch (its utils.TRACELOOP_TRACE_CONTENT).
TRACELOOP_TRACE_CONTENT = "TRACELOOP_TRACE_CONTENT"
# The peers' content capture: off like ours, unless ``run.py --peer-defaults`` (theirs is on).
PEER_CAPTURE = {"on": False}

SETUP_DESCRIPTION = (
    "TracerProvider + BatchSpanProcessor(no-op exporter); "
    "MeterProvider + PeriodicExportingMetricReader(no-op exporter, 60 s)"
)

# --- a realistic SDK setup -------------------------------------------------------------------


class NoopSpanExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class NoopMetricExporter(MetricExporter):
    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        return None


@dataclass
class Sdk:
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    @classmethod
    def realistic(cls) -> Sdk:
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(BatchSpanProcessor(NoopSpanExporter()))
        reader = PeriodicExportingMetricReader(NoopMetricExporter(), export_interval_millis=60_000)
        return cls(tracer_provider, MeterProvider(metric_readers=[reader]))

    def collect(self) -> None:
        """A metric collection, as the periodic reader's thread would do it."""
        self.meter_provider.force_flush()

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


# --- a zero-latency scripted model and two tools ------------------------------------------------

_USAGE = {"input_tokens": 420, "output_tokens": 48, "total_tokens": 468}


def _turn_script() -> list[Callable[[], AIMessage]]:
    """The three answers of a ReAct turn: search, calculate, answer (fresh objects each call:
    LangGraph assigns message ids in place)."""
    return [
        lambda: AIMessage(
            content="",
            tool_calls=[{"name": "search", "args": {"query": "q3 revenue"}, "id": "call_1"}],
            usage_metadata=dict(_USAGE),  # type: ignore[arg-type]
            response_metadata={"finish_reason": "tool_calls"},
        ),
        lambda: AIMessage(
            content="",
            tool_calls=[{"name": "calculator", "args": {"expression": "2*21"}, "id": "call_2"}],
            usage_metadata=dict(_USAGE),  # type: ignore[arg-type]
            response_metadata={"finish_reason": "tool_calls"},
        ),
        lambda: AIMessage(
            content="Revenue grew 42% year over year.",
            usage_metadata=dict(_USAGE),  # type: ignore[arg-type]
            response_metadata={"finish_reason": "stop"},
        ),
    ]


class CyclingChatModel(BaseChatModel):
    """Answers the three turns of ``_turn_script`` forever, with no latency and no recording."""

    model_name: str = "gpt-4o-mini"
    _cursor: int = PrivateAttr(default=0)
    _script: list[Callable[[], AIMessage]] = PrivateAttr(default_factory=_turn_script)

    @property
    def _llm_type(self) -> str:
        return "openai"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        names = [getattr(t, "name", str(t)) for t in tools]
        return self.bind(tools=names, **kwargs)

    def _next(self) -> ChatResult:
        message = self._script[self._cursor % 3]()
        self._cursor += 1
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._next()

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # Overridden: the default would hop to a thread pool, which is not the model's work.
        return self._next()


@tool
def search(query: str) -> str:
    """Search the knowledge base."""
    return f"results for {query}"


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return "42"


TOOLS: tuple[BaseTool, ...] = (search, calculator)
_TOOLS_BY_NAME = {t.name: t for t in TOOLS}


# --- the two LangChain workloads ------------------------------------------------------------------


def react_turn_runnable(model: BaseChatModel) -> Runnable[Any, Any]:
    """One agent chain (RunnableLambda), 3 chat-model calls, 2 tool calls: 6 LangChain runs."""

    def turn(inputs: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages: list[BaseMessage] = [HumanMessage(inputs["input"])]
        for _ in range(3):
            answer = model.invoke(messages, config)
            messages.append(answer)
            for call in answer.tool_calls:  # type: ignore[attr-defined]
                selected = _TOOLS_BY_NAME[call["name"]]
                messages.append(selected.invoke({**call, "type": "tool_call"}, config))
        return {"messages": messages}

    async def aturn(inputs: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        messages: list[BaseMessage] = [HumanMessage(inputs["input"])]
        for _ in range(3):
            answer = await model.ainvoke(messages, config)
            messages.append(answer)
            for call in answer.tool_calls:  # type: ignore[attr-defined]
                selected = _TOOLS_BY_NAME[call["name"]]
                messages.append(await selected.ainvoke({**call, "type": "tool_call"}, config))
        return {"messages": messages}

    return RunnableLambda(turn, afunc=aturn, name="react_agent")


def langgraph_agent(model: BaseChatModel) -> Runnable[Any, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        graph: Runnable[Any, Any] = create_react_agent(model, list(TOOLS))
    return graph


WORKLOADS: dict[str, tuple[Callable[[BaseChatModel], Runnable[Any, Any]], Any]] = {
    "ReAct turn (RunnableLambda)": (react_turn_runnable, {"input": "How did revenue grow?"}),
    "LangGraph prebuilt agent": (
        langgraph_agent,
        {"messages": [("user", "How did revenue grow?")]},
    ),
}


# --- subjects ---------------------------------------------------------------------------------


class DoNothingHandler(BaseCallbackHandler):
    """Every callback a no-op: what langchain-core's dispatch alone costs."""

    run_inline = True

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        # Overridden: the base class raises NotImplementedError, and langchain-core then
        # stringifies every message for an ``on_llm_start`` fallback.
        return None


def _symfonic(sdk: Any) -> list[BaseCallbackHandler]:
    from symfonic_otel import LangChainCallbackHandler

    return [
        LangChainCallbackHandler(
            tracer_provider=sdk.tracer_provider,
            meter_provider=sdk.meter_provider,
            capture_content=False,
        )
    ]


def _openllmetry(sdk: Sdk) -> list[BaseCallbackHandler]:
    """OpenLLMetry's handler, built as its instrumentor builds it (spans + 2 histograms).

    Passed explicitly rather than through the instrumentor's global ``CallbackManager`` patch,
    so that it is active for its own slices only; the handler is the same object either way.
    Content capture off, like ours (its default is on; it reads the variable at every call).
    """
    os.environ[TRACELOOP_TRACE_CONTENT] = "true" if PEER_CAPTURE["on"] else "false"
    from opentelemetry.instrumentation.langchain import __version__ as version
    from opentelemetry.instrumentation.langchain.callback_handler import TraceloopCallbackHandler
    from opentelemetry.semconv_ai import Meters

    tracer = sdk.tracer_provider.get_tracer("opentelemetry.instrumentation.langchain", version)
    meter = sdk.meter_provider.get_meter("opentelemetry.instrumentation.langchain", version)
    duration = meter.create_histogram(Meters.LLM_OPERATION_DURATION, unit="s")
    tokens = meter.create_histogram(Meters.LLM_TOKEN_USAGE, unit="token")
    return [TraceloopCallbackHandler(tracer, duration, tokens)]


def _openinference(sdk: Sdk) -> list[BaseCallbackHandler]:
    """OpenInference's tracer, built as its instrumentor builds it (passed explicitly), with
    inputs and outputs hidden: content capture off, like ours."""
    from openinference.instrumentation import OITracer, TraceConfig
    from openinference.instrumentation.langchain import __version__ as version
    from openinference.instrumentation.langchain._tracer import OpenInferenceTracer

    tracer = OITracer(
        sdk.tracer_provider.get_tracer("openinference.instrumentation.langchain", version),
        config=TraceConfig()
        if PEER_CAPTURE["on"]
        else TraceConfig(hide_inputs=True, hide_outputs=True),
    )
    return [OpenInferenceTracer(tracer, False)]  # type: ignore[arg-type]


def _installed(module: str) -> bool:
    try:
        __import__(module)
    except Exception:
        return False
    return True


@dataclass
class Subject:
    name: str
    make: Callable[[Sdk], list[BaseCallbackHandler]]
    sdk: Sdk = field(default_factory=Sdk.realistic)
    callbacks: list[BaseCallbackHandler] = field(default_factory=list)

    def build(self) -> Subject:
        self.callbacks = self.make(self.sdk)
        return self


BASELINE = "none (uninstrumented)"
NOOP = "do-nothing handler"
MINIMUM = "SDK minimum, same telemetry"
OURS = "LangChainCallbackHandler"
OPENLLMETRY = "OpenLLMetry"
OPENINFERENCE = "OpenInference"


def _turn(build: Callable[[BaseChatModel], Runnable[Any, Any]], payload: Any, mode: str) -> Any:
    """One turn of a fresh runnable with the given handlers, a tap after them (discovery)."""
    runnable = build(CyclingChatModel())

    def turn(callbacks: list[BaseCallbackHandler], step: Callable[[], None]) -> None:
        config: RunnableConfig = {"callbacks": [*callbacks, LangChainTap(step)]}
        if mode == "invoke":
            runnable.invoke(payload, config=config)
        else:
            asyncio.run(runnable.ainvoke(payload, config=config))

    return turn


def minimum_plan(build: Callable[[BaseChatModel], Runnable[Any, Any]], payload: Any) -> Plan:
    """Our telemetry of one turn of the workload, the same under ``invoke`` and ``ainvoke``;
    checked by replaying it on the spy: the replay makes the same telemetry."""
    plan = discover(_symfonic, _turn(build, payload, "invoke"))
    if discover(_symfonic, _turn(build, payload, "ainvoke")).shape() != plan.shape():
        raise RuntimeError("invoke and ainvoke make different telemetry: no single minimum")

    def replay(sdk: Any) -> list[BaseCallbackHandler]:
        return [SdkMinimum(sdk.tracer_provider, sdk.meter_provider, plan)]

    if discover(replay, _turn(build, payload, "invoke")).shape() != plan.shape():
        raise RuntimeError("the replay does not make our telemetry")
    return plan


def langchain_subjects(plan: Plan | None = None) -> list[Subject]:
    """The subjects; with ``plan`` (from ``minimum_plan``), the SDK minimum among them."""
    subjects = [Subject(BASELINE, lambda sdk: []), Subject(NOOP, lambda sdk: [DoNothingHandler()])]
    if plan is not None:
        subjects.append(
            Subject(
                MINIMUM,
                lambda sdk: [SdkMinimum(sdk.tracer_provider, sdk.meter_provider, plan)],
            )
        )
    subjects.append(Subject(OURS, _symfonic))
    if _installed("opentelemetry.instrumentation.langchain.callback_handler"):
        subjects.append(Subject(OPENLLMETRY, _openllmetry))
    if _installed("openinference.instrumentation.langchain._tracer"):
        subjects.append(Subject(OPENINFERENCE, _openinference))
    return [s.build() for s in subjects]


_ids = itertools.count()


def next_run_id() -> str:
    return f"bench-{next(_ids)}"
