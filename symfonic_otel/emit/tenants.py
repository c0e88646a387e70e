"""Active tenants: who holds one of the ``max_tenants`` slots now, and since when it was idle.

A tenant takes a slot when its first run starts and keeps it while it sends work; once idle for
longer than ``idle_s`` it gives the slot back, and everything listening (the per-tenant counter
store) forgets it, so a tenant that left costs nothing and one that returns starts again at
zero. ``max_tenants`` therefore bounds tenants active *at once*, not tenants ever seen: past it,
a new tenant's runs are counted under ``__overflow__`` until a slot frees up.

Tenants are kept in least-recently-active order, so expiry only looks at the oldest entries and
costs nothing when no tenant is due. The clock is injectable (seconds, monotonic) so tests can
simulate days.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Final

from symfonic_otel import semconv
from symfonic_otel.emit.budget import DEFAULT_MAX_TENANTS
from symfonic_otel.emit.tenancy import sanitise_tenant

# The longest window a shipped rule reads is the slow-burn alert's 3 days; 6 hours more let a
# tenant that pauses for exactly that long keep its series through the window's last evaluation.
DEFAULT_TENANT_IDLE_S: Final = 3 * 86_400.0 + 6 * 3_600.0

Clock = Callable[[], float]
Listener = Callable[[str], object]


class ActiveTenants:
    """Sanitises a raw tenant and admits it to a slot (or ``__overflow__`` when all are taken).

    Call it with the raw tenant when a run starts; ``touch`` marks activity of an admitted
    tenant (every per-tenant count does); ``expire`` frees the slots of tenants idle for more
    than ``idle_s`` (exactly ``idle_s`` still holds it) and tells the listeners.
    """

    __slots__ = ("_always", "_clock", "_idle_s", "_last", "_listeners", "_lock", "_max")

    def __init__(
        self,
        max_tenants: int = DEFAULT_MAX_TENANTS,
        idle_s: float = DEFAULT_TENANT_IDLE_S,
        clock: Clock = time.monotonic,
        always: Iterable[str] = (semconv.TENANT_UNKNOWN,),
    ) -> None:
        self._max = max_tenants
        self._idle_s = float(idle_s)
        self._clock = clock
        # Reserved labels take no slot and are never forgotten (there is at most one of each).
        self._always = frozenset((*always, semconv.OVERFLOW_VALUE))
        self._last: OrderedDict[str, float] = OrderedDict()
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    @property
    def max_tenants(self) -> int:
        return self._max

    @property
    def idle_s(self) -> float:
        return self._idle_s

    def clock(self) -> float:
        return self._clock()

    def on_evict(self, listener: Listener) -> None:
        """Call ``listener(tenant)`` whenever a tenant gives its slot back."""
        self._listeners.append(listener)

    def __call__(self, raw: object) -> str:
        """The tenant label of a new run: the sanitised tenant, or ``__overflow__``."""
        tenant = sanitise_tenant(raw)
        if tenant in self._always:
            return tenant
        now = self._clock()
        with self._lock:
            if tenant in self._last:
                self._last[tenant] = now
                self._last.move_to_end(tenant)
                return tenant
        if len(self._last) >= self._max:
            self.expire(now)  # pragma: no mutate: None reads the same clock; a slot may be due
        with self._lock:
            if tenant not in self._last and len(self._last) >= self._max:
                return semconv.OVERFLOW_VALUE
            self._last[tenant] = now
            self._last.move_to_end(tenant)
        return tenant

    def touch(self, tenant: str) -> None:
        """Activity of ``tenant``: it keeps (or takes back) its slot.

        A tenant evicted while one of its runs was still open takes its slot back here, even
        past the cap: its counts are never refused, and the next expiry frees it again.
        """
        if tenant in self._always:
            return
        now = self._clock()
        with self._lock:
            self._last[tenant] = now
            self._last.move_to_end(tenant)

    def expire(self, now: float | None = None) -> list[str]:
        """Free the slots of tenants idle for more than ``idle_s``; returns them, oldest first."""
        if now is None:
            now = self._clock()
        expired: list[str] = []
        with self._lock:
            last = self._last
            while last:
                tenant, seen = next(iter(last.items()))
                if now - seen <= self._idle_s:
                    break
                del last[tenant]
                expired.append(tenant)
        for tenant in expired:
            for listener in self._listeners:
                # A listener failing must not keep other tenants' slots.
                with contextlib.suppress(Exception):
                    listener(tenant)
        return expired

    def __contains__(self, tenant: object) -> bool:
        return tenant in self._last or tenant in self._always

    def __len__(self) -> int:
        """Tenants holding a slot now (reserved labels excluded)."""
        return len(self._last)
