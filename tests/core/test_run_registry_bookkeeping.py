"""The registry of open runs: a run expired, evicted or ended is remembered as ended (a late or
repeated end is ignored), a second start of an open run keeps the first, the age bound is
measured against the starting run's own stamp, and a run's iterations span its loop indices
whatever order its model calls arrive in.

The races are forced, not hoped for: the oldest run's start stamp is a ``float`` whose
comparison with the deadline (the expiry's age check) pauses the expiring thread after it has
picked that run and before it takes it out, while another operation runs on this thread. With
the registry's lock held by the expiry, that operation waits; the pause ends by its timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN

from symfonic_otel import semconv
from symfonic_otel.core import runs
from symfonic_otel.core.runs import OpenRun, RunRegistry

# How long the paused expiry waits for the other operation (see the module docstring).
_PAUSE_S = 0.1


def _run(run_id: str, started: float) -> OpenRun:
    return OpenRun(run_id, INVALID_SPAN, Context(), "acme", started_monotonic=started)


def test_a_run_expired_by_age_is_remembered_as_ended() -> None:
    registry = RunRegistry(ttl_s=10.0, max_open=8)
    run = _run("old", 0.0)
    registry.add(run)
    assert registry.expire(now=100.0) == [run]
    assert registry.was_ended("old")  # its end, arriving late, opens and counts nothing


def test_runs_drained_at_shutdown_are_remembered_as_ended() -> None:
    registry = RunRegistry(ttl_s=10.0, max_open=8)
    first, second = _run("a", 0.0), _run("b", 1.0)
    registry.add(first)
    registry.add(second)
    assert registry.drain() == [first, second]
    assert len(registry) == 0
    assert registry.was_ended("a")
    assert registry.was_ended("b")


def test_the_age_bound_at_a_start_is_measured_from_that_run_s_start() -> None:
    # Stamps far past this process's clock: only the new run's stamp can age the first one.
    base = time.monotonic() + 1e6
    registry = RunRegistry(ttl_s=10.0, max_open=8)
    first = _run("first", base)
    registry.add(first)
    added, evicted = registry.add(_run("second", base + 100.0))
    assert added
    assert evicted == [first]
    assert registry.was_ended("first")


def test_a_second_start_of_an_open_run_is_refused_and_keeps_the_first() -> None:
    registry = RunRegistry(ttl_s=10.0, max_open=8)
    first = _run("r", 0.0)
    assert registry.add(first) == (True, [])
    assert registry.add(_run("r", 1.0)) == (False, [])
    assert registry.get("r") is first
    assert len(registry) == 1


def test_the_ended_ids_forget_the_oldest_first_past_their_cap() -> None:
    registry = RunRegistry(ttl_s=10.0, max_open=8)
    count = runs._RECENTLY_ENDED_CAP + 1
    for index in range(count):
        registry.add(_run(f"r{index}", 0.0))
        registry.pop(f"r{index}")
    assert not registry.was_ended("r0")
    assert registry.was_ended("r1")
    assert registry.was_ended(f"r{count - 1}")  # the run that just ended is the last forgotten


@pytest.mark.parametrize(
    ("indices", "iterations"),
    [((2, 5), 4), ((7, 2), 6), ((3, 3, 3), 3)],
    ids=["in order, a gap", "out of order", "repeated index"],
)
def test_iterations_span_the_run_s_loop_indices_whatever_order_its_calls_arrive(
    indices: tuple[int, ...], iterations: int
) -> None:
    run = _run("r", 0.0)
    for index in indices:
        run.count_call(semconv.NODE_REACT, index)
    assert run.iterations == iterations


class _PausingStamp(float):
    """A start stamp long past: the first age check taken on it pauses that thread."""

    paused: threading.Event
    resume: threading.Event
    armed = False

    def __new__(cls) -> _PausingStamp:
        stamp = super().__new__(cls, 0.0)
        stamp.paused, stamp.resume = threading.Event(), threading.Event()
        return stamp

    def __gt__(self, deadline: object) -> bool:
        if self.armed and not self.paused.is_set():
            self.paused.set()
            self.resume.wait(_PAUSE_S)
        assert isinstance(deadline, float)
        return float(self) > deadline


_NOW = 12.0  # the expiry's clock: the paused run (started at 0) is past the TTL, not the fresh


def _pop(registry: RunRegistry) -> list[OpenRun]:
    run = registry.pop("old")
    return [] if run is None else [run]


def _add(registry: RunRegistry) -> list[OpenRun]:
    return registry.add(_run("new", _NOW))[1]


def _expire(registry: RunRegistry) -> list[OpenRun]:
    return registry.expire(now=_NOW)


_RACERS: dict[str, Callable[[RunRegistry], list[OpenRun]]] = {
    "the run ends": _pop,
    "a run starts": _add,
    "shutdown drains": RunRegistry.drain,
    "a second expiry": _expire,
}


@pytest.mark.parametrize("racer", list(_RACERS), ids=list(_RACERS))
def test_a_run_expiring_while_another_thread_takes_it_is_handed_out_once(racer: str) -> None:
    registry = RunRegistry(ttl_s=10.0, max_open=8)
    stamp = _PausingStamp()
    old, fresh = _run("old", stamp), _run("fresh", 5.0)
    registry.add(old)
    registry.add(fresh)
    stamp.armed = True
    expired: list[OpenRun] = []
    errors: list[BaseException] = []

    def expire() -> None:
        try:
            expired.extend(registry.expire(now=_NOW))
        except BaseException as error:  # what the handler's expiry would see
            errors.append(error)

    thread = threading.Thread(target=expire)
    thread.start()
    try:
        assert stamp.paused.wait(2.0)
        taken = _RACERS[racer](registry)
        stamp.resume.set()
    finally:
        stamp.resume.set()
        thread.join()
    assert errors == []
    assert expired == [old]  # the expiry had picked it first: the other side finds it gone
    assert [run for run in taken if run is old] == []
    if racer != "shutdown drains":
        assert registry.get("fresh") is fresh  # not taken out in the old run's place
    assert registry.was_ended("old")
