"""A co-installed span processor that raises on every span end (and start) cannot break the
counts: on every way in that shares its tracer provider, each run is counted once, each bail
with its run, and the active-runs gauge comes back to zero, so the bail *rate* is exact.

The SDK calls a provider's processors in one loop and lets the first exception out of
``start_span`` / ``span.end()``, so the raising processor is placed first, where it does the
most harm.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from symfonic_otel import LangChainCallbackHandler, semconv, tenant_scope
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.event_scripts import bail_with_synthesis, react_parallel_tools, replay
from tests.support.langchain_support import scripted_agent, tool_turn

RUNS = semconv.AGENT_RUNS.name
BAILS = semconv.SILENT_BAILS.name
ACTIVE = semconv.ACTIVE_RUNS.name


class RaisingProcessor(SpanProcessor):
    """A third-party processor with a bug: it raises on every span it sees end (or start)."""

    def __init__(self, *, on_start_too: bool = False) -> None:
        self.ends = 0
        self.on_start_too = on_start_too

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.on_start_too:
            raise RuntimeError("third-party processor failed on start")

    def on_end(self, span: ReadableSpan) -> None:
        self.ends += 1
        raise RuntimeError("third-party processor failed")


def _first(telemetry: InMemoryTelemetry, processor: SpanProcessor) -> None:
    """Put ``processor`` first in the provider's loop, ahead of every other processor."""
    multi = telemetry.tracer_provider._active_span_processor  # type: ignore[attr-defined]
    with multi._lock:
        multi._span_processors = (processor, *multi._span_processors)


@pytest.fixture(params=["on_end", "on_start_and_on_end"])
def raising(request: pytest.FixtureRequest) -> Iterator[tuple[InMemoryTelemetry, RaisingProcessor]]:
    telemetry = InMemoryTelemetry()
    processor = RaisingProcessor(on_start_too=request.param != "on_end")
    _first(telemetry, processor)
    try:
        yield telemetry, processor
    finally:
        telemetry.shutdown()


def _consistent(telemetry: InMemoryTelemetry, runs: int, bails: int) -> None:
    assert telemetry.value(RUNS) == runs
    assert telemetry.value(BAILS) == bails
    assert telemetry.value(ACTIVE) == 0


def test_the_handler_counts_every_run_and_bail(
    raising: tuple[InMemoryTelemetry, RaisingProcessor],
) -> None:
    telemetry, processor = raising
    handler = telemetry.handler(tenant_id="acme")
    base = datetime(2026, 11, 30, 12, tzinfo=UTC)
    asyncio.run(replay(handler, bail_with_synthesis("run-bail", "refund?")))
    asyncio.run(replay(handler, react_parallel_tools("run-ok", base)))
    _consistent(telemetry, runs=2, bails=1)
    assert telemetry.open_runs == 0
    assert processor.ends > 0 or processor.on_start_too  # it did raise in the SDK's loop


def test_the_langchain_handler_counts_every_run_and_bail(
    raising: tuple[InMemoryTelemetry, RaisingProcessor],
) -> None:
    telemetry, _ = raising
    lc = LangChainCallbackHandler(handler=telemetry.handler())
    config: Any = {"callbacks": [lc]}
    scripted_agent(tool_turn(), AIMessage(content="")).invoke(
        {"messages": [("user", "1+2?")]}, config=config
    )
    scripted_agent(tool_turn(), "It is 3.").invoke({"messages": [("user", "1+2?")]}, config=config)
    _consistent(telemetry, runs=2, bails=1)


def test_an_adapter_that_creates_spans_counts_every_run_and_bail(
    raising: tuple[InMemoryTelemetry, RaisingProcessor],
) -> None:
    """The OpenAI Agents SDK adapter: its spans are made by the core handler on this provider."""
    from tests.support.openai_agents_support import answering, blank, installed, run_agent

    telemetry, _ = raising
    with installed(telemetry), tenant_scope("acme"):
        assert run_agent(blank()).final_output == ""
        assert run_agent(answering()).final_output == "It is sunny."
    _consistent(telemetry, runs=2, bails=1)


TOOL_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "name": "add"}]}])
TEXT_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "3"}]}])
BLANK_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": " "}]}])


def test_the_span_processor_counts_every_run_and_bail_behind_a_raising_one() -> None:
    """Ours sits after the raising one in the SDK's loop, where ``on_end`` never reaches it.

    Only ``on_end`` raises here: a processor raising in ``on_start`` stops the other
    instrumentation's own ``start_span``, so no span of that run exists to be read.
    """
    telemetry = InMemoryTelemetry()
    raising = RaisingProcessor()
    _first(telemetry, raising)
    ours = SilentBailSpanProcessor(meter_provider=telemetry.meter_provider)
    telemetry.tracer_provider.add_span_processor(ours)
    tracer = telemetry.tracer_provider.get_tracer("peer-instrumentation")

    def run(*turns: str) -> None:
        agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT, semconv.TENANT_ID: "acme"}
        # The SDK lets the peer's failure out of each span's end, as before: the peer's
        # instrumentation would see it; here each end is allowed to fail.
        with (
            contextlib.suppress(RuntimeError),
            tracer.start_as_current_span("invoke_agent peer", attributes=agent),
        ):
            for finish, output in zip(("tool_calls", "stop"), turns, strict=False):
                chat = {
                    semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
                    semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish,),
                    semconv.GEN_AI_OUTPUT_MESSAGES: output,
                }
                with (
                    contextlib.suppress(RuntimeError),
                    tracer.start_as_current_span("chat peer-model", attributes=chat),
                ):
                    pass

    try:
        run(TOOL_TURN, BLANK_TURN)
        run(TOOL_TURN, TEXT_TURN)
        assert raising.ends == 6  # every span's end raised before ours was reached
        assert ours.open_traces == 0
        assert telemetry.value(RUNS) == 2
        where = {semconv.REACT_TERMINATION_REASON: "no_content_no_tool_calls"}
        assert telemetry.value(BAILS, where) == 1
        assert telemetry.value(BAILS) == 1
    finally:
        telemetry.shutdown()


def test_without_the_raising_processor_the_counts_are_the_same() -> None:
    """The control: the same runs on a healthy provider give the same counts."""
    telemetry = InMemoryTelemetry()
    try:
        handler = telemetry.handler(tenant_id="acme")
        base = datetime(2026, 11, 30, 12, tzinfo=UTC)
        asyncio.run(replay(handler, bail_with_synthesis("run-bail", "refund?")))
        asyncio.run(replay(handler, react_parallel_tools("run-ok", base)))
        _consistent(telemetry, runs=2, bails=1)
    finally:
        telemetry.shutdown()
