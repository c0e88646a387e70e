"""A model call cancelled mid-call never finished: its span says so
(``symfonic.step.unfinished``) and carries no error type, as a call that failed would.
Ctrl-C is a cancellation as much as a cancelled task: the run it ends is ``cancelled``."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.runnables import RunnableLambda

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import cfg

CANCELLATIONS = [asyncio.CancelledError, KeyboardInterrupt]


@pytest.mark.parametrize("exc", CANCELLATIONS)
def test_a_call_cancelled_mid_call_is_marked_unfinished(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, exc: type[BaseException]
) -> None:
    model = ScriptedChatModel([exc()])
    with pytest.raises(exc):
        model.invoke("hi", config=cfg(captured))
    (chat,) = [span for span in telemetry.spans() if span.name.startswith("chat")]
    attributes = chat.attributes or {}
    assert attributes.get(semconv.STEP_UNFINISHED) is True
    assert semconv.ERROR_TYPE not in attributes


@pytest.mark.parametrize("exc", CANCELLATIONS)
def test_a_run_cancelled_in_its_model_call_is_cancelled_and_interrupted(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler, exc: type[BaseException]
) -> None:
    model = ScriptedChatModel([exc()])
    run = RunnableLambda(lambda text: model.invoke(text)).with_config(run_name="agent")
    with pytest.raises(exc):
        run.invoke("hi", config=cfg(captured))
    where = {semconv.RUN_OUTCOME: "cancelled"}
    assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1
    (span,) = [s for s in telemetry.spans() if s.name.startswith("invoke_agent")]
    attributes = span.attributes or {}
    assert attributes[semconv.RUN_STOP_REASON] == "interrupted"
    assert semconv.ERROR_TYPE not in attributes
