"""A streamed LangChain call's time to first chunk is the first chunk's, not a later one's.

The caller reads the stream slowly after its first chunk: LangChain reports each chunk as it is
read, so the later chunks arrive a pause after the first and the two delays differ.
"""

from __future__ import annotations

import time
from typing import Any, cast

from langchain_core.runnables import RunnableConfig

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry

_PAUSE_S = 0.05  # after the first chunk


def test_the_time_to_first_chunk_is_kept_from_the_first_chunk(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    model = ScriptedChatModel(["a streamed answer in several chunks"], chunk_size=4)
    config = cast(RunnableConfig, {"callbacks": [lc]})
    chunks: list[Any] = []
    for chunk in model.stream("hi", config=config):
        chunks.append(chunk)
        if len(chunks) == 1:
            time.sleep(_PAUSE_S)  # a slow reader: every later chunk comes after this
    assert len(chunks) > 3
    (span,) = [s for s in telemetry.spans() if s.name.startswith("chat")]
    first = (span.attributes or {})[semconv.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]
    assert isinstance(first, float)
    assert span.end_time is not None and span.start_time is not None
    assert 0.0 <= first < _PAUSE_S <= (span.end_time - span.start_time) / 1e9
