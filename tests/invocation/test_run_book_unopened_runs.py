"""A run whose span never opened leaves no trace however it is dropped, on the real SDK.

A run started with ``open_now=False`` is known to the book only: the core handler never heard
of it. Evicted past the run cap or closed at shutdown, it must not end a run the core does not
know (which the core would count as a dropped event of an unknown run).
"""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.invocation import RunBook
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_closing_a_run_whose_span_never_opened_records_and_drops_nothing(
    telemetry: InMemoryTelemetry,
) -> None:
    book = RunBook(telemetry.handler(), "TestAdapter", 8)
    book.start("r1", "helper", open_now=False)
    book.close_all()
    assert telemetry.spans() == []
    assert telemetry.value(semconv.DROPPED_EVENTS.name) == 0
    assert book.open_runs == 0


def test_evicting_a_run_whose_span_never_opened_drops_nothing(
    telemetry: InMemoryTelemetry,
) -> None:
    book = RunBook(telemetry.handler(), "TestAdapter", 1)
    book.start("r1", "helper", open_now=False)
    book.start("r2", "helper")
    book.end("r2", "answered", answer="42")
    assert [span.name for span in telemetry.spans()] == ["invoke_agent helper"]
    assert telemetry.value(semconv.DROPPED_EVENTS.name) == 0


def test_closing_an_opened_run_ends_it_as_abandoned(telemetry: InMemoryTelemetry) -> None:
    book = RunBook(telemetry.handler(), "TestAdapter", 8)
    book.start("r1", "helper")
    book.close_all()
    [span] = telemetry.spans()
    assert span.name == "invoke_agent helper"
    assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.RUN_OUTCOME: "abandoned"}) == 1
