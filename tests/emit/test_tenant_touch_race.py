"""A count's ``touch`` and an expiry on another thread: the touch is whole against the expiry
(its stamp and its move to the newest end happen under the lock), so it never raises out of the
count and never leaves a slot the expiry half removed.

The interleaving is forced, not hoped for: the tenant label is a ``str`` whose hash pauses the
touching thread between stamping the slot and moving it, while the expiry runs on this thread.
"""

from __future__ import annotations

import threading

from symfonic_otel.emit.tenants import ActiveTenants

# How long the paused touch waits for the expiry; with the lock held the expiry cannot run
# meanwhile, so the pause ends by this timeout.
_PAUSE_S = 0.1


class _PausingLabel(str):
    """The tenant label, which pauses the thread at its second hash once armed."""

    armed = False
    hashes = 0

    def arm(self) -> None:
        self.paused, self.resume = threading.Event(), threading.Event()
        self.hashes = 0
        self.armed = True

    def __hash__(self) -> int:
        if self.armed:
            self.hashes += 1
            if self.hashes == 2:  # the stamp was the first; the move to the end is next
                self.armed = False
                self.paused.set()
                self.resume.wait(_PAUSE_S)
        return str.__hash__(self)


def test_a_touch_racing_an_expiry_completes_and_the_expiry_frees_the_slot_after_it() -> None:
    label = _PausingLabel("acme")

    def clock() -> float:
        if label.hashes < 0:
            label.arm()  # touch reads the clock, then stamps the slot and moves it
        return 0.0

    tenants = ActiveTenants(max_tenants=2, idle_s=10.0, clock=clock)
    label.hashes = 0
    assert tenants("acme") == "acme"
    label.hashes = -1
    errors: list[BaseException] = []

    def touch() -> None:
        try:
            tenants.touch(label)
        except BaseException as error:  # what the count would see
            errors.append(error)

    thread = threading.Thread(target=touch)
    thread.start()
    try:
        assert label.paused.wait(2.0)
        expired = tenants.expire(now=100.0)  # the slot is long idle by then
        label.resume.set()
    finally:
        label.resume.set()
        thread.join()
    assert errors == []
    assert expired == ["acme"]
    assert len(tenants) == 0
    assert "acme" not in tenants
