"""Shared fixtures: in-memory telemetry that fails any test leaving spans or runs open."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from langchain_support import DetachErrors

from symfonic_otel.langchain import LangChainCallbackHandler
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


@pytest.fixture
def detach_log() -> Iterator[DetachErrors]:
    """Fails the test if OpenTelemetry logs a "Failed to detach context" error."""
    collector = DetachErrors()
    logger = logging.getLogger("opentelemetry.context")
    logger.addHandler(collector)
    yield collector
    logger.removeHandler(collector)
    assert not collector.messages, collector.messages


@pytest.fixture
def lc(
    telemetry: InMemoryTelemetry, detach_log: DetachErrors
) -> Iterator[LangChainCallbackHandler]:
    """A LangChain handler on in-memory telemetry that must hold no state once runs end."""
    handler = LangChainCallbackHandler(handler=telemetry.handler())
    yield handler
    assert handler.tracked_runs == 0, "adapter kept state for an ended run"
    assert handler.tracked_calls == 0, "adapter kept state for ended child runs"
