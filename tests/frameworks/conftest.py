"""Fixtures of the framework adapter tests. The framework environments load this too, so a
fixture imports its framework's support only when a test asks for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from symfonic_otel.testing.telemetry import InMemoryTelemetry


@pytest.fixture
def processor(telemetry: InMemoryTelemetry) -> Iterator[Any]:
    """A ``SymfonicTracingProcessor`` installed as the OpenAI Agents SDK's trace processor."""
    from tests.support.openai_agents_support import installed

    with installed(telemetry) as made:
        yield made
