"""The demo's levers: which tenants run, which of them are noisy and how, and for how long.

Values come from ``DemoOptions`` (the CLI flags); errors name the flag, so the CLI can show them
as one line.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from symfonic_otel import semconv
from symfonic_otel.demo.scenarios import NOISY_KINDS, NoisyKind
from symfonic_otel.emit.tenancy import sanitise_tenant

__all__ = [
    "DEFAULT_NOISY",
    "LOST_RUN_EVERY",
    "MAX_TENANTS",
    "RETRIED_END_EVERY",
    "TENANT_NAMES",
    "Faults",
    "NoisyClock",
    "noisy_tenants",
    "tenant_names",
]

TENANT_NAMES: Final = ("acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "wonka")
MAX_TENANTS: Final = 1000
# Without --noisy: globex, when it is one of the tenants, bails several times as often as the rest.
DEFAULT_NOISY: Final[Mapping[str, NoisyKind]] = {"globex": "silent_bail"}
LOST_RUN_EVERY: Final = 60  # with --faults: one run in ~60 starts on a worker that "crashes"
RETRIED_END_EVERY: Final = 40  # with --faults: one run in ~40 has its AgentEnd delivered twice
_RESERVED: Final = frozenset({semconv.TENANT_UNKNOWN, semconv.OVERFLOW_VALUE, semconv.OTHER_VALUE})


def tenant_names(spec: int | Sequence[str]) -> list[str]:
    """``--tenants``: a count (the first names of ``TENANT_NAMES``, then ``tenant-N``) or names.

    A count always keeps the default noisy tenant: ``1`` is ``globex`` alone, not ``acme``.
    """
    if isinstance(spec, int) and not isinstance(spec, bool):
        if spec < 1:
            raise ValueError(f"--tenants must be at least 1, got {spec}")
        if spec > MAX_TENANTS:
            raise ValueError(f"--tenants must be at most {MAX_TENANTS}, got {spec}")
        names = list(TENANT_NAMES[:spec]) if spec > 1 else list(DEFAULT_NOISY)
        names.extend(f"tenant-{i + 1}" for i in range(len(names), spec))
        return names
    if isinstance(spec, str) or not isinstance(spec, Sequence) or not spec:
        raise ValueError(f"--tenants must be a count or a list of names, got {spec!r}")
    names = []
    for name in spec:
        if name in _RESERVED:  # before sanitising, which rewrites reserved values
            raise ValueError(f"--tenants: {name!r} is a reserved label value")
        if not isinstance(name, str) or not name or sanitise_tenant(name) != name:
            raise ValueError(f"--tenants: {name!r} is not a usable tenant name")
        if "," in name or "=" in name:
            raise ValueError(f"--tenants: tenant names cannot contain ',' or '=', got {name!r}")
        if name in names:
            raise ValueError(f"--tenants: {name!r} is listed twice")
        names.append(name)
    if len(names) > MAX_TENANTS:
        raise ValueError(f"--tenants must name at most {MAX_TENANTS} tenants, got {len(names)}")
    return names


def noisy_tenants(
    spec: Sequence[tuple[str, str]] | None, names: Sequence[str]
) -> dict[str, NoisyKind]:
    """``--noisy``: tenant -> kind; ``None`` is the default, an empty spec means none."""
    if spec is None:
        return {tenant: kind for tenant, kind in DEFAULT_NOISY.items() if tenant in names}
    noisy: dict[str, NoisyKind] = {}
    for tenant, kind in spec:
        if tenant not in names:
            raise ValueError(f"--noisy: {tenant!r} is not one of the tenants ({', '.join(names)})")
        if kind not in NOISY_KINDS:
            raise ValueError(
                f"--noisy: unknown kind {kind!r} for {tenant}, expected one of "
                + ", ".join(NOISY_KINDS)
            )
        if tenant in noisy:
            raise ValueError(f"--noisy: {tenant!r} is given twice")
        noisy[tenant] = kind
    return noisy


class NoisyClock:
    """Whether noisy tenants still misbehave: for ``seconds`` after ``start()``, or always."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = seconds
        self._until: float | None = None

    def start(self) -> None:
        if self.seconds is not None:
            self._until = time.monotonic() + self.seconds

    def __call__(self) -> bool:
        return self._until is None or time.monotonic() < self._until


@dataclass(frozen=True)
class Faults:
    """``--faults``: telemetry-health faults on top of the scenario mix, off by default.

    On, some workers die mid-run (their AgentEnd never arrives: orphaned runs, closed as
    abandoned) and some emitters deliver AgentEnd twice (the duplicate is a dropped event), as
    in a real fleet. Off, the default mix fires one alert only, the silent-bail page it is there
    to show, instead of telemetry-health alerts that read as a fault of the demo.
    """

    enabled: bool = False

    def draw(self, rng: random.Random) -> tuple[bool, bool]:
        """(lost worker, retried end) for one run.

        Drawn whether on or off, so one seed plans the same runs with and without faults.
        """
        lost = rng.randrange(LOST_RUN_EVERY) == 0
        retried = rng.randrange(RETRIED_END_EVERY) == 0
        return lost and self.enabled, retried and self.enabled
