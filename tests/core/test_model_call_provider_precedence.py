"""A model call's provider: the one its adapter names (Azure serving an OpenAI model, a
gateway) wins over the one the model catalogue knows for the model; without one, the
catalogue's is recorded."""

from __future__ import annotations

import pytest

from symfonic_otel import semconv
from symfonic_otel.events import LLMEndEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

DURATION = semconv.CLIENT_OPERATION_DURATION.name


@pytest.mark.parametrize(
    ("named", "recorded"), [("azure.ai.openai", "azure.ai.openai"), (None, "openai")]
)
def test_the_adapter_s_provider_wins_over_the_catalogue_s(
    telemetry: InMemoryTelemetry, named: str | None, recorded: str
) -> None:
    handler = telemetry.handler()
    handler.llm_end(
        LLMEndEvent(model="gpt-4o", output="hi", usage={}, duration_ms=10.0), provider=named
    )
    ((attributes, _),) = telemetry.points(DURATION)
    assert attributes[semconv.GEN_AI_PROVIDER_NAME] == recorded
    (span,) = telemetry.spans()
    assert (span.attributes or {})[semconv.GEN_AI_PROVIDER_NAME] == recorded
