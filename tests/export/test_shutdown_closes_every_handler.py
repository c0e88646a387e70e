"""At shutdown every handler's runs close, though one handler's close raises."""

from __future__ import annotations

import atexit
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel import OTelCallbackHandler
from symfonic_otel.events import AgentStartEvent
from symfonic_otel.export import lifecycle
from symfonic_otel.testing.telemetry import InMemoryTelemetry

# --- shutdown: every handler's runs close, though one handler's close raises ------------------


class _BrokenHandler:
    def __init__(self) -> None:
        self.asked = 0

    def exports_to(self, tracer_provider: object, meter_provider: object, is_global: bool) -> bool:
        return True

    def close_open_runs(self) -> int:
        self.asked += 1
        raise RuntimeError("close failed")


@pytest.fixture
def three_handlers(telemetry: InMemoryTelemetry) -> Iterator[list[OTelCallbackHandler]]:
    handlers = [telemetry.handler() for _ in range(3)]
    for index, handler in enumerate(handlers):
        handler.agent_start(AgentStartEvent("q", f"run-{index}"))
    yield handlers
    for handler in handlers:
        handler.close_open_runs()


@pytest.mark.parametrize("broken_at", [0, 1, 2, 3])
@pytest.mark.parametrize("closer", ["close_runs_of", "close_all"])
def test_every_handler_closes_its_runs_though_one_close_raises(
    telemetry: InMemoryTelemetry,
    three_handlers: list[OTelCallbackHandler],
    monkeypatch: pytest.MonkeyPatch,
    broken_at: int,
    closer: str,
) -> None:
    broken = _BrokenHandler()
    ordered: list[Any] = list(three_handlers)
    ordered.insert(broken_at, broken)
    monkeypatch.setattr(lifecycle, "_handlers", ordered)  # iteration order under test control
    if closer == "close_runs_of":
        closed = lifecycle.close_runs_of(telemetry.tracer_provider, telemetry.meter_provider, False)
    else:
        closed = lifecycle.close_all()
    assert closed == 3 and broken.asked == 1
    assert [h.open_runs for h in three_handlers] == [0, 0, 0]
    assert telemetry.value("symfonic.agent.runs", {"symfonic.run.outcome": "abandoned"}) == 3


@pytest.mark.parametrize("shared", ["tracer provider", "meter provider"])
def test_a_handler_sharing_either_provider_has_its_runs_closed(
    telemetry: InMemoryTelemetry, shared: str
) -> None:
    """A handler records to this configuration if it shares either of its providers."""
    other_meters = MeterProvider(shutdown_on_exit=False)
    other_tracers = TracerProvider(shutdown_on_exit=False)
    if shared == "tracer provider":
        providers = (telemetry.tracer_provider, other_meters)
    else:
        providers = (other_tracers, telemetry.meter_provider)
    handler = OTelCallbackHandler(tracer_provider=providers[0], meter_provider=providers[1])
    handler.agent_start(AgentStartEvent("q", "run-open"))
    closed = lifecycle.close_runs_of(telemetry.tracer_provider, telemetry.meter_provider, False)
    assert closed >= 1 and handler.open_runs == 0
    other_meters.shutdown()


# --- interpreter exit: one hook closes every live handler's runs ------------------------------


class _Quiet:
    def exports_to(self, tracer_provider: object, meter_provider: object, is_global: bool) -> bool:
        return False

    def close_open_runs(self) -> int:
        return 0


def test_the_exit_hook_is_registered_with_the_first_handler_and_only_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """However many handlers a process builds, one exit hook: its count of them stays flat."""
    monkeypatch.setattr(lifecycle, "_handlers", weakref.WeakSet())
    monkeypatch.setattr(lifecycle, "_exit_hook_registered", False)
    atexit.unregister(lifecycle.close_all)  # as in a process that built no handler yet
    try:
        before = atexit._ncallbacks()
        handlers = [_Quiet() for _ in range(3)]
        for handler in handlers:
            lifecycle.register(handler)
        registered = atexit._ncallbacks() - before
    finally:
        atexit.unregister(lifecycle.close_all)
        atexit.register(lifecycle.close_all)  # the process's own hook, back
    assert registered == 1
