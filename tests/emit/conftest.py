"""Fixtures shared by the metric-emission tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from symfonic_otel.emit.budget import cardinality_view
from tests.support.clocked_sdk import ClockedSdk


@pytest.fixture
def sdk() -> Iterator[tuple[InMemoryMetricReader, MeterProvider]]:
    """A real SDK meter provider with the package's cardinality view and an in-memory reader."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], views=[cardinality_view()])
    yield reader, provider
    provider.shutdown()


@pytest.fixture
def clocked(sdk: tuple[InMemoryMetricReader, MeterProvider]) -> ClockedSdk:
    """The ``sdk`` provider with handlers on a test clock."""
    return ClockedSdk(*sdk)


@pytest.fixture
def switch_often() -> Iterator[None]:
    """Threads switch every microsecond: a sum or a check outside its lock then goes wrong."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)
