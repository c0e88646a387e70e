"""``exports_to``: whether a handler records into the given providers.

A handler built on its own providers exports to a pair when either provider is one of its own
(a shared tracer provider with another meter provider is still its destination); a handler
built on the globals exports to a pair only when that pair is the globals.
"""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_a_handler_exports_to_a_pair_holding_either_of_its_providers(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    other_tracer, other_meter = TracerProvider(), MeterProvider()
    assert handler.exports_to(telemetry.tracer_provider, other_meter, False)
    assert handler.exports_to(other_tracer, telemetry.meter_provider, False)
    assert not handler.exports_to(other_tracer, other_meter, True)


def test_a_handler_on_the_globals_exports_only_to_the_globals() -> None:
    handler = OTelCallbackHandler()
    assert handler.exports_to(TracerProvider(), MeterProvider(), True)
    assert not handler.exports_to(TracerProvider(), MeterProvider(), False)
