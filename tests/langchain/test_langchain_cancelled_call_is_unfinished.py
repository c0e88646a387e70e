"""A model call cancelled mid-call never finished: its span says so
(``symfonic.step.unfinished``) and carries no error type, as a call that failed would."""

from __future__ import annotations

import asyncio

import pytest

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_shapes_support import cfg


def test_a_call_cancelled_mid_call_is_marked_unfinished(
    telemetry: InMemoryTelemetry, captured: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel([asyncio.CancelledError()])
    with pytest.raises(asyncio.CancelledError):
        model.invoke("hi", config=cfg(captured))
    (chat,) = [span for span in telemetry.spans() if span.name.startswith("chat")]
    attributes = chat.attributes or {}
    assert attributes.get(semconv.STEP_UNFINISHED) is True
    assert semconv.ERROR_TYPE not in attributes
