"""A pass-through stop reason already read ``_OTHER`` (the handler's label cap was full) is the
tenant's coarse set, not a detailed one: it takes none of the tenant's detailed-set slots, so a
tenant still gets all of its detailed stop reasons after one ``_OTHER``; and the known stop
reasons are never capped: they keep their names past every cap."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.emit.budget import MAX_PASSTHROUGH_STOP_REASONS, TENANT_DETAIL_SETS
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.testing.telemetry import InMemoryTelemetry

OTHER = semconv.OTHER_VALUE


def _stops(telemetry: InMemoryTelemetry, tenant: str) -> dict[object, object]:
    return {
        attributes.get(semconv.RUN_STOP_REASON): value
        for attributes, value in telemetry.points(semconv.STOP_REASONS.name)
        if attributes.get(semconv.TENANT_ID) == tenant
    }


def test_an_other_stop_reason_leaves_the_tenant_every_detailed_slot(
    telemetry: InMemoryTelemetry,
) -> None:
    assert TENANT_DETAIL_SETS <= MAX_PASSTHROUGH_STOP_REASONS
    meter = telemetry.meter_provider.get_meter("test")
    emitter = MetricEmitter(meter, "planner", meter_provider=telemetry.meter_provider)
    admitted = [f"custom_{index}" for index in range(MAX_PASSTHROUGH_STOP_REASONS)]
    for reason in admitted:  # another tenant fills the handler's label cap
        emitter.run_ended("acme", "completed", False, None, 1, reason)
    emitter.run_ended("globex", "completed", False, None, 1, "one_too_many")  # reads _OTHER
    mine = admitted[:TENANT_DETAIL_SETS]
    for reason in mine:
        emitter.run_ended("globex", "completed", False, None, 1, reason)
    assert _stops(telemetry, "globex") == {**dict.fromkeys(mine, 1), OTHER: 1}


def test_known_stop_reasons_keep_their_names_past_every_cap(telemetry: InMemoryTelemetry) -> None:
    meter = telemetry.meter_provider.get_meter("test")
    emitter = MetricEmitter(meter, "planner", meter_provider=telemetry.meter_provider)
    for index in range(MAX_PASSTHROUGH_STOP_REASONS + 1):  # the label cap and one past it
        emitter.run_ended("acme", "completed", False, None, 1, f"custom_{index}")
    for known in semconv.STOP_REASON_VALUES:
        emitter.run_ended("acme", "completed", False, None, 1, known)
    stops = _stops(telemetry, "acme")
    assert {known: stops.get(known) for known in semconv.STOP_REASON_VALUES} == dict.fromkeys(
        semconv.STOP_REASON_VALUES, 1
    )
    assert stops[OTHER] == 1
