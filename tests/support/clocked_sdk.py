"""Handlers on one real SDK meter provider whose tenants age by a test clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from symfonic_otel import OTelCallbackHandler
from tests.support.manual_clock import Clock


@dataclass(frozen=True)
class ClockedSdk:
    """The provider and its in-memory reader; every handler made here reads ``clock``."""

    reader: InMemoryMetricReader
    provider: MeterProvider
    clock: Clock = field(default_factory=Clock)

    def handler(self, **options: Any) -> OTelCallbackHandler:
        return OTelCallbackHandler(meter_provider=self.provider, clock=self.clock, **options)
