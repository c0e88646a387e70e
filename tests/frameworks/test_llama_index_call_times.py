"""A LlamaIndex model call's times: its span in epoch nanoseconds, its first chunk's delay.

The adapter stamps a call at its ``LLMChatStartEvent`` and measures the time to the first
``LLMChatInProgressEvent``; later chunks do not move it. The scripted model streams two chunks
with a pause between them, so the delay to the first and the delay to the last differ.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatResponse
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.callbacks import llm_chat_callback
from llama_index.core.llms.mock import MockFunctionCallingLLM

from symfonic_otel import semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.llama_index_support import ANSWER, instrumented, run

_PAUSE_S = 0.05  # between the two chunks


class _TwoChunkLLM(MockFunctionCallingLLM):
    """Streams its answer in two chunks, the second ``_PAUSE_S`` after the first."""

    @llm_chat_callback()
    async def astream_chat(  # type: ignore[override]
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> AsyncGenerator[ChatResponse, None]:
        async def chunks() -> AsyncGenerator[ChatResponse, None]:
            half = len(ANSWER) // 2
            yield ChatResponse(
                message=ChatMessage(role="assistant", content=ANSWER[:half]), delta=ANSWER[:half]
            )
            await asyncio.sleep(_PAUSE_S)
            yield ChatResponse(
                message=ChatMessage(role="assistant", content=ANSWER), delta=ANSWER[half:]
            )

        return chunks()


def test_a_streamed_call_is_timed_in_epoch_ns_and_its_first_chunk_delay_is_kept(
    telemetry: InMemoryTelemetry,
) -> None:
    built = FunctionAgent(name="helper", llm=_TwoChunkLLM(), tools=[], streaming=True)
    before = time.time_ns()
    with instrumented(telemetry):
        result, error = run(built)
    after = time.time_ns()
    assert error is None and str(result) == ANSWER
    (chat,) = [s for s in telemetry.spans() if s.name.startswith("chat")]
    assert chat.start_time is not None and chat.end_time is not None
    assert before <= chat.start_time < chat.end_time <= after
    ttfc = (chat.attributes or {})[semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]
    assert isinstance(ttfc, float)
    assert 0 <= ttfc < _PAUSE_S <= (chat.end_time - chat.start_time) / 1e9
