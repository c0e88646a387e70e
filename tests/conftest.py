"""Shared fixtures: in-memory telemetry that fails any test leaving spans or runs open."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from symfonic_otel.testing.telemetry import InMemoryTelemetry


@pytest.fixture
def telemetry() -> Iterator[InMemoryTelemetry]:
    """In-memory providers; the test fails if it leaves an unended span or an open run."""
    memory = InMemoryTelemetry()
    yield memory
    leaked_spans = memory.unended_spans
    open_runs = memory.open_runs
    memory.shutdown()
    assert not leaked_spans, f"test left spans unended: {leaked_spans}"
    assert open_runs == 0, f"test left {open_runs} agent run(s) open"
