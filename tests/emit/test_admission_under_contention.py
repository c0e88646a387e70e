"""First come, first served admissions hold under contention: a second caller arriving while the
first is between its check and its admission waits for it (one lock around both), so a cap is
never passed and one name never gets two views.

Each interleaving is forced (``tests/support/paused_section.py``): the first caller is paused
just before it admits, and the second runs then.
"""

from __future__ import annotations

from symfonic_otel.emit.agents import AgentEmitters
from symfonic_otel.emit.budget import DetailPool
from symfonic_otel.emit.labels import BoundedLabels
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.emit.vocabulary import OTHER, label_or_other
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.paused_section import PausedBefore


def test_a_detail_pool_at_its_last_slot_admits_one_of_two_keys_arriving_together() -> None:
    pool = DetailPool(1)
    with PausedBefore(DetailPool.admit, "self._admitted.add(key)") as first:
        first.start(pool.admit, ("search", "acme"))
        second = pool.admit(("fetch", "acme"))
        assert first.finish() is True
    assert second is False
    assert len(pool) == 1


def test_bounded_labels_at_the_cap_give_the_second_of_two_new_values_the_overflow() -> None:
    labels = BoundedLabels(1, OTHER, label_or_other)
    with PausedBefore(BoundedLabels.__call__, "self._admitted.add(value)") as first:
        first.start(labels, "researcher")
        second = labels("triage")
        assert first.finish() == "researcher"
    assert second == OTHER
    assert len(labels) == 1


def test_two_runs_naming_a_new_agent_at_once_share_its_one_view(
    telemetry: InMemoryTelemetry,
) -> None:
    emitters = AgentEmitters(MetricEmitter(telemetry.meter_provider.get_meter("t"), "ops"))
    with PausedBefore(AgentEmitters.__call__, "_NamedEmitter(self._default, label)") as first:
        first.start(emitters, "researcher")
        second = emitters("researcher")
        view = first.finish()
    assert view is second
    assert emitters("researcher") is view
    assert emitters.names() == ["ops", "researcher"]
