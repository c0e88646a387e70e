"""An adapter's guard runs its hooks one at a time: a hook posted from another thread (a
framework's parallel tools) waits until the running one is done, and a hook may run another
guarded hook from inside itself (the same thread takes the guard again).

The interleaving is forced, not hoped for: the first hook pauses (bounded) once it has begun,
while a second hook is posted from this thread. With the guard held by the first, the second
waits; the pause ends by its timeout.
"""

from __future__ import annotations

import threading

from symfonic_otel.invocation import RunBook
from symfonic_otel.testing.telemetry import InMemoryTelemetry

# How long the first hook waits for the second (see the module docstring).
_PAUSE_S = 0.1


def test_a_hook_posted_while_another_runs_waits_for_it(telemetry: InMemoryTelemetry) -> None:
    guard = RunBook(telemetry.handler(), "TestAdapter", 8).guard
    began, resume = threading.Event(), threading.Event()
    order: list[str] = []

    def first() -> None:
        order.append("first began")
        began.set()
        resume.wait(_PAUSE_S)
        order.append("first done")

    thread = threading.Thread(target=guard, args=("hook", first))
    thread.start()
    try:
        assert began.wait(2.0)
        guard("hook", lambda: order.append("second"))
        resume.set()
    finally:
        resume.set()
        thread.join()
    assert order == ["first began", "first done", "second"]


def test_a_hook_may_run_another_guarded_hook_inside_itself(telemetry: InMemoryTelemetry) -> None:
    guard = RunBook(telemetry.handler(), "TestAdapter", 8).guard
    ran: list[str] = []

    def outer() -> None:
        guard("inner", lambda: ran.append("inner"))
        ran.append("outer")

    # On a thread of its own, so that a guard which cannot be taken again fails this test
    # instead of hanging it.
    thread = threading.Thread(target=guard, args=("outer", outer), daemon=True)
    thread.start()
    thread.join(2.0)
    assert not thread.is_alive()
    assert ran == ["inner", "outer"]
