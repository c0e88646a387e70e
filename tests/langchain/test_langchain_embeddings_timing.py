"""An ``embeddings`` span covers the embeddings call it records: it starts before the call
body runs and ends after it returned (or raised), and the duration metric, in seconds, holds at
least the body's own time. Under the instrumentor, with the real langchain-core embeddings base."""

from __future__ import annotations

import time

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from symfonic_otel import semconv
from symfonic_otel.instrumentation import SymfonicLangChainInstrumentor
from symfonic_otel.testing.telemetry import InMemoryTelemetry

pytestmark = pytest.mark.usefixtures("no_detach_errors")

_BODY_NS = 200_000  # the body's own time: 0.2 ms, spun (not slept) so it is never shorter


class TimedEmbedding(DeterministicFakeEmbedding):
    """Notes when its body ran; spins for ``_BODY_NS`` in between."""

    entered: int = 0
    left: int = 0
    fail: bool = False

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.entered = time.time_ns()
        while time.time_ns() - self.entered < _BODY_NS:
            pass
        self.left = time.time_ns()
        if self.fail:
            raise TimeoutError("embedding service slow")
        return super().embed_documents(texts)


@pytest.mark.parametrize("fail", [False, True])
def test_the_embeddings_span_covers_the_call_and_its_duration_is_in_seconds(
    telemetry: InMemoryTelemetry, instrumentor: SymfonicLangChainInstrumentor, fail: bool
) -> None:
    model = TimedEmbedding(size=4)
    model.fail = fail
    if fail:
        with pytest.raises(TimeoutError):
            model.embed_documents(["a", "b", "c"])
    else:
        assert len(model.embed_documents(["a", "b", "c"])) == 3
    (span,) = [s for s in telemetry.spans() if s.name == "embeddings"]
    assert span.start_time is not None and span.end_time is not None
    assert span.start_time <= model.entered
    assert span.end_time >= model.left
    assert span.end_time - span.start_time >= _BODY_NS
    assert (span.attributes or {})[semconv.EMBEDDINGS_INPUT_COUNT] == 3
    assert (span.attributes or {}).get(semconv.ERROR_TYPE) == ("TimeoutError" if fail else None)
    ((_, point),) = [
        (a, p)
        for a, p in telemetry.points(semconv.CLIENT_OPERATION_DURATION.name)
        if a.get(semconv.GEN_AI_OPERATION_NAME) == "embeddings"
    ]
    seconds = point.sum  # type: ignore[union-attr]
    assert _BODY_NS / 1e9 <= seconds < 5.0  # seconds: neither nanoseconds nor milliseconds
