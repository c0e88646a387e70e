"""What the span processor sees of a LlamaIndex or smolagents step cap in OpenInference's spans.

OpenInference instruments both frameworks; the processor reads those spans. A LlamaIndex
``"force"`` cap reaches it as a run that raised ``WorkflowRuntimeError`` (a general workflow
error, not counted as a step cap), a ``"generate"`` cap and a smolagents ``max_steps`` run as
runs that answered: the processor records none of them as a bail. The adapters do (their own
tests); these tests pin what the processor's table in the docs says.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from workflows.errors import WorkflowRuntimeError

from symfonic_otel import SilentBailSpanProcessor, semconv, tenant_scope
from tests.support.llama_index_support import agent as llama_agent
from tests.support.llama_index_support import looping as llama_looping
from tests.support.llama_index_support import run as llama_run
from tests.support.smolagents_support import agent as smol_agent
from tests.support.smolagents_support import looping as smol_looping
from tests.support.smolagents_support import run as smol_run


def _values(reader: InMemoryMetricReader, name: str) -> dict[tuple[Any, ...], float]:
    found: dict[tuple[Any, ...], float] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:  # type: ignore[union-attr]
                        if point.value:  # type: ignore[union-attr]
                            found[tuple(sorted(point.attributes.items()))] = point.value  # type: ignore[union-attr]
    return found


@pytest.fixture
def traced() -> Iterator[tuple[TracerProvider, InMemoryMetricReader]]:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SilentBailSpanProcessor(meter_provider=meters))
    yield tracer_provider, reader
    tracer_provider.shutdown()
    meters.shutdown()


@contextmanager
def _instrumented(instrumentor: Any, tracer_provider: TracerProvider) -> Iterator[None]:
    """OpenInference's ``instrumentor`` on ``tracer_provider`` for one run of tenant ``acme``."""
    instrumentor.instrument(tracer_provider=tracer_provider)
    try:
        with tenant_scope("acme"):
            yield
    finally:
        instrumentor.uninstrument()


def _outcome(reader: InMemoryMetricReader) -> tuple[str, float]:
    runs = _values(reader, semconv.AGENT_RUNS.name)
    ((labels, count),) = runs.items()
    return dict(labels)[semconv.RUN_OUTCOME], count


@pytest.mark.parametrize("method", ["force", "generate"])
def test_a_llama_index_cap_in_openinference_spans_is_no_bail_for_the_processor(
    traced: tuple[TracerProvider, InMemoryMetricReader], method: str
) -> None:
    tracer_provider, reader = traced
    with _instrumented(LlamaIndexInstrumentor(), tracer_provider):
        _, error = llama_run(
            llama_agent("function", llama_looping())[0], early_stopping_method=method
        )
    assert isinstance(error, WorkflowRuntimeError) is (method == "force")
    assert _outcome(reader) == ("error" if method == "force" else "completed", 1)
    assert _values(reader, semconv.SILENT_BAILS.name) == {}


def test_a_smolagents_max_steps_run_in_openinference_spans_is_no_bail_for_the_processor(
    traced: tuple[TracerProvider, InMemoryMetricReader],
) -> None:
    tracer_provider, reader = traced
    with _instrumented(SmolagentsInstrumentor(), tracer_provider):
        result = smol_run(smol_agent("tool_calling", smol_looping(), None)[0], "full_result")
    assert result.state == "max_steps_error"
    assert _outcome(reader) == ("completed", 1)
    assert _values(reader, semconv.SILENT_BAILS.name) == {}
