"""SymfonicLangChainInstrumentor: spans with no callbacks passed, none after uninstrument."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from langchain_core.callbacks import BaseCallbackManager
from langchain_core.tools import StructuredTool

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.instrumentation import SymfonicLangChainInstrumentor
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import (
    AGENT_SPAN,
    assert_one_tree_per_run,
    react_agent,
    scripted_agent,
    tool_turn,
)
from tests.support.processes import run_ok

pytestmark = pytest.mark.usefixtures("no_detach_errors")


def run_agent(**config: object) -> None:
    scripted_agent(tool_turn(), "The sum is 3.").invoke(
        {"messages": [("user", "1+2")]}, config=config or None
    )


def test_dependencies() -> None:
    assert SymfonicLangChainInstrumentor().instrumentation_dependencies() == (
        "langchain-core >= 0.3",
    )


def test_instrument_records_without_callbacks(
    telemetry: InMemoryTelemetry, instrumentor: SymfonicLangChainInstrumentor
) -> None:
    run_agent()
    assert_one_tree_per_run(telemetry.spans(), runs=1, chats=2, tools=1)
    assert telemetry.value(semconv.AGENT_RUNS.name) == 1


async def test_instrument_records_async(
    telemetry: InMemoryTelemetry, instrumentor: SymfonicLangChainInstrumentor
) -> None:
    await scripted_agent(tool_turn(), "3").ainvoke({"messages": [("user", "1+2")]})
    assert_one_tree_per_run(telemetry.spans(), runs=1, chats=2, tools=1)


def test_uninstrument_stops_recording(telemetry: InMemoryTelemetry) -> None:
    original = BaseCallbackManager.__init__
    instrumentor = SymfonicLangChainInstrumentor()
    instrumentor.instrument(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    run_agent()
    assert len([s for s in telemetry.spans() if s.name == AGENT_SPAN]) == 1
    instrumentor.uninstrument()
    assert BaseCallbackManager.__init__ is original
    assert instrumentor.callback_handler is None
    run_agent()
    assert len([s for s in telemetry.spans() if s.name == AGENT_SPAN]) == 1


def test_handler_added_by_hand_is_not_duplicated(
    telemetry: InMemoryTelemetry, instrumentor: SymfonicLangChainInstrumentor
) -> None:
    mine = InMemoryTelemetry()
    try:
        by_hand = LangChainCallbackHandler(handler=mine.handler())
        run_agent(callbacks=[by_hand])
        assert telemetry.spans() == []  # the instrumentor's handler stayed out
        assert_one_tree_per_run(mine.spans(), runs=1, chats=2, tools=1)
        assert mine.value(semconv.AGENT_RUNS.name) == 1
    finally:
        mine.shutdown()


def test_instrument_twice_adds_one_handler(
    telemetry: InMemoryTelemetry, instrumentor: SymfonicLangChainInstrumentor
) -> None:
    instrumentor.instrument(tracer_provider=telemetry.tracer_provider)  # no-op: already on
    run_agent()
    assert len([s for s in telemetry.spans() if s.name == AGENT_SPAN]) == 1
    assert telemetry.value(semconv.CLIENT_OPERATION_DURATION.name) == 2


def test_unknown_instrument_options_are_ignored(telemetry: InMemoryTelemetry) -> None:
    instrumentor = SymfonicLangChainInstrumentor()
    instrumentor.instrument(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        agent_name="support-bot",
        something_a_distro_passes=True,
    )
    try:
        handler = instrumentor.callback_handler
        assert handler is not None
        telemetry.track(handler.handler)
        run_agent()
        assert len(telemetry.spans()) == 4
        assert telemetry.span(semconv.agent_span_name("support-bot"))
    finally:
        instrumentor.uninstrument()


@pytest.mark.parametrize(
    ("variable", "argument", "expected"),
    [
        ("returns-desk", None, "returns-desk"),  # the variable names the agent
        ("  returns-desk  ", None, "returns-desk"),  # trimmed, as every label
        ("returns-desk", "support-bot", "support-bot"),  # the argument wins
        ("\x07\x1b", None, "symfonic"),  # nothing printable: ignored, the default kept
        ("", None, "symfonic"),  # empty: unset
    ],
)
def test_the_agent_name_variable_names_the_instrumented_agent(
    telemetry: InMemoryTelemetry,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    argument: str | None,
    expected: str,
) -> None:
    monkeypatch.setenv(semconv.AGENT_NAME_ENV, variable)
    instrumentor = SymfonicLangChainInstrumentor()
    named = {} if argument is None else {"agent_name": argument}
    instrumentor.instrument(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        **named,
    )
    try:
        handler = instrumentor.callback_handler
        assert handler is not None
        telemetry.track(handler.handler)
        run_agent()
        assert telemetry.span(semconv.agent_span_name(expected))
    finally:
        instrumentor.uninstrument()


INSTRUMENTOR_NAME = "symfonic_langchain"
APP = '''
import json
import warnings

warnings.simplefilter("ignore")
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from symfonic_otel.testing import ScriptedChatModel

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


call = {"name": "add", "args": {"a": 1, "b": 2}, "id": "c1"}
model = ScriptedChatModel([AIMessage("", tool_calls=[call]), "3"])
create_react_agent(model, [add]).invoke({"messages": [("user", "1+2")]})
print(json.dumps(sorted(span.name for span in exporter.get_finished_spans())))
'''


def test_opentelemetry_instrument_needs_no_code_change(tmp_path: Path) -> None:
    """The real ``opentelemetry-instrument`` finds the instrumentor through its entry point."""
    command = shutil.which("opentelemetry-instrument")
    registered = any(
        e.name == INSTRUMENTOR_NAME
        and e.value == "symfonic_otel.instrumentation:SymfonicLangChainInstrumentor"
        for e in entry_points(group="opentelemetry_instrumentor")
    )
    if command is None or not registered:
        pytest.skip("opentelemetry-instrument or the installed entry point is not available")
    app = tmp_path / "app.py"
    app.write_text(APP)
    # ``opentelemetry-instrument`` loads every installed instrumentor; other LangChain ones
    # (OpenLLMetry, OpenInference, installed for the benchmarks) would add their own spans.
    # Disabled by entry-point name, so ours is still the one found through its entry point.
    others = sorted(
        {e.name for e in entry_points(group="opentelemetry_instrumentor")} - {INSTRUMENTOR_NAME}
    )
    env = {
        **os.environ,
        "OTEL_TRACES_EXPORTER": "none",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": ",".join(others),
    }
    done = run_ok(
        [command, sys.executable, str(app)],
        env=env,
        cwd=tmp_path,
    )
    names = json.loads(done.stdout.strip().splitlines()[-1])
    assert names == ["chat scripted-chat", "chat scripted-chat", "execute_tool add", AGENT_SPAN]


@pytest.mark.parametrize("use_async", [False, True])
async def test_client_spans_inside_a_tool_nest_under_it(
    telemetry: InMemoryTelemetry,
    instrumentor: SymfonicLangChainInstrumentor,
    use_async: bool,
) -> None:
    """The instrumentor owns attach + detach around the tool body, so a client span nests."""
    tracer = telemetry.tracer_provider.get_tracer("http-client")

    def fetch(a: int, b: int) -> int:
        """Add remotely."""
        with tracer.start_as_current_span("GET /add"):
            return a + b

    async def afetch(a: int, b: int) -> int:
        """Add remotely."""
        with tracer.start_as_current_span("GET /add"):
            await asyncio.sleep(0)
            return a + b

    remote = StructuredTool.from_function(
        func=None if use_async else fetch, coroutine=afetch if use_async else None, name="add"
    )
    model = ScriptedChatModel([tool_turn(), "3"])
    agent = react_agent(model, [remote])
    if use_async:
        await agent.ainvoke({"messages": [("user", "1+2")]})
    else:
        agent.invoke({"messages": [("user", "1+2")]})

    client = telemetry.span("GET /add")
    tool_span = telemetry.span("execute_tool add")
    assert client.parent is not None and tool_span.context is not None
    assert client.parent.span_id == tool_span.context.span_id
    assert_one_tree_per_run(
        [s for s in telemetry.spans() if s is not client], runs=1, chats=2, tools=1
    )


def test_uninstrument_restores_what_it_wrapped(telemetry: InMemoryTelemetry) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.runnables import config as runnable_config
    from langchain_core.vectorstores import VectorStoreRetriever
    from langgraph._internal import _runnable

    originals = (
        runnable_config._set_config_context,
        _runnable._set_config_context,
        VectorStoreRetriever._get_relevant_documents,
        DeterministicFakeEmbedding.embed_query,
    )
    instrumentor = SymfonicLangChainInstrumentor()
    instrumentor.instrument(tracer_provider=telemetry.tracer_provider)
    wrapped = (
        runnable_config._set_config_context,
        _runnable._set_config_context,
        VectorStoreRetriever._get_relevant_documents,
        DeterministicFakeEmbedding.embed_query,
    )
    assert all(now is not before for now, before in zip(wrapped, originals, strict=True))
    instrumentor.uninstrument()
    assert (
        runnable_config._set_config_context,
        _runnable._set_config_context,
        VectorStoreRetriever._get_relevant_documents,
        DeterministicFakeEmbedding.embed_query,
    ) == originals
