"""Reading ``OTEL_*`` and ``SYMFONIC_OTEL_*`` variables: one policy for a bad value.

A variable set to a value the package cannot use never stops the application. It gets one
``TelemetrySettingWarning`` (a ``RuntimeWarning``: Python prints it once per message on stderr,
``-W error::symfonic_otel.environment.TelemetrySettingWarning`` turns it into an error, a filter
silences it) naming the variable, its value and what is used instead, and the same line goes to
the package log (``symfonic_otel.bad_environment_variable``). What is used instead is the
default the variable's documentation gives: the OpenTelemetry SDK's own rule for its variables
(``OTEL_METRIC_EXPORT_INTERVAL=abc`` warns and exports every 60 s).

* ``read_choice`` / ``read_flag`` / ``read_number``: the value of one variable, or its default.
* ``substituted``: for the variables the SDK's exporters, processors and providers read
  themselves when ``configure_telemetry`` builds them (some raise on a bad value,
  ``OTEL_EXPORTER_OTLP_TIMEOUT=abc`` among them): each bad one is warned about and, for the
  construction only, replaced by its default, so the component is built as if it were unset.

Values are variables' settings, not content; a long one is cut in the message.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

from symfonic_otel.logs import get_logger

__all__ = [
    "Setting",
    "TelemetrySettingWarning",
    "bad_setting",
    "choice_setting",
    "number_setting",
    "read_choice",
    "read_flag",
    "read_number",
    "sdk_disabled",
    "substituted",
    "warn_caller",
]

_MAX_VALUE_CHARS: Final = 80
_TRUE: Final = "true"
_FALSE: Final = "false"
_lock = threading.Lock()
_PACKAGE_DIR: Final = os.path.dirname(os.path.abspath(__file__)) + os.sep


class TelemetrySettingWarning(RuntimeWarning):
    """A telemetry environment variable holds a value the package cannot use; a default is used.

    ``variable`` names it; ``problem`` says what is wrong without the fallback (a command-line
    tool that refuses bad settings prints that).
    """

    def __init__(self, message: str, *, variable: str = "", problem: str = "") -> None:
        super().__init__(message)
        self.variable = variable
        self.problem = problem or message


def _shown(value: str) -> str:
    return repr(value if len(value) <= _MAX_VALUE_CHARS else value[:_MAX_VALUE_CHARS] + "...")


def bad_setting(variable: str, value: str, expected: str, instead: str) -> str:
    """Warn once about ``variable=value``; returns the message (the demo prints it as its error)."""
    problem = f"{variable}={_shown(value)} is not {expected}"
    message = f"{problem}; using {instead}"
    get_logger().warning(
        "symfonic_otel.bad_environment_variable",
        variable=variable,
        value=value[:_MAX_VALUE_CHARS],
        expected=expected,
        instead=instead,
    )
    warn_caller(TelemetrySettingWarning(message, variable=variable, problem=problem))
    return message


def warn_caller(warning: Warning) -> None:
    """``warnings.warn`` pointing at the application's line that led here."""
    warnings.warn(warning, stacklevel=_outside_the_package())


def _outside_the_package() -> int:
    """The ``stacklevel`` of the first frame outside this package (and ``contextlib``): the
    warning then points at the application's ``configure_telemetry`` or handler line."""
    level, frame = 2, sys._getframe(2)
    while frame.f_back is not None and (
        frame.f_code.co_filename.startswith(_PACKAGE_DIR)
        or frame.f_code.co_filename == contextlib.__file__
    ):
        level, frame = level + 1, frame.f_back
    return level


def _raw(variable: str) -> str | None:
    raw = os.environ.get(variable)
    return raw.strip() if raw is not None and raw.strip() else None


def read_choice(
    variable: str, choices: Collection[str], default: str, *, instead: str | None = None
) -> str:
    """The lower-cased value when it is one of ``choices``, else ``default`` (a bad one warns)."""
    raw = _raw(variable)
    if raw is None:
        return default
    if raw.lower() in choices:
        return raw.lower()
    expected = "one of " + ", ".join(map(repr, sorted(choices)))
    bad_setting(variable, raw, expected, instead or f"the default, {default!r}")
    return default


def read_flag(variable: str, *, default: bool) -> bool:
    """``true`` / ``false`` in any case, as the SDK reads its boolean variables."""
    chosen = read_choice(variable, (_TRUE, _FALSE), _TRUE if default else _FALSE)
    return chosen == _TRUE


def read_number(
    variable: str,
    default: float,
    *,
    minimum: float = 0.0,
    maximum: float = math.inf,
    integer: bool = False,
    unit: str = "",
) -> float:
    """A finite number from ``minimum`` to ``maximum`` (a whole one with ``integer``), else
    ``default``, with the warning (a ratio: ``minimum=0.0, maximum=1.0``)."""
    raw = _raw(variable)
    if raw is None:
        return default
    if _is_number(raw, minimum=minimum, integer=integer) and float(raw) <= maximum:
        return float(raw)
    shown_default = int(default) if integer or float(default).is_integer() else default
    expected = (
        _number_kind(minimum, integer, unit)
        if maximum == math.inf
        else f"a number from {minimum:g} to {maximum:g}" + (f" ({unit})" if unit else "")
    )
    bad_setting(variable, raw, expected, f"the default, {shown_default}")
    return default


def _is_number(raw: str, *, minimum: float, integer: bool) -> bool:
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        return False
    return math.isfinite(value) and value >= minimum


def _number_kind(minimum: float, integer: bool, unit: str) -> str:
    kind = "a whole number" if integer else "a number"
    bound = "at least 1" if minimum == 1 else ("positive" if minimum > 0 else "0 or more")
    return f"{kind} {bound}" + (f" ({unit})" if unit else "")


@dataclass(frozen=True)
class Setting:
    """A variable read by an SDK component: what a good value is, and what stands in for a bad one.

    ``replacement`` is the value the component is built with instead (``None``: as if unset,
    which is the documented default, or the general variable for a signal-specific one).
    """

    variable: str
    valid: Callable[[str], bool]
    expected: str
    replacement: str | None = None
    instead: str = "the default"


def choice_setting(variable: str, choices: Collection[str], instead: str) -> Setting:
    return Setting(
        variable,
        lambda raw: raw.strip().lower() in choices,
        "one of " + ", ".join(map(repr, sorted(choices))),
        instead=instead,
    )


def number_setting(
    variable: str,
    *,
    replacement: str | None,
    instead: str,
    minimum: float = 0.0,
    integer: bool = False,
    unit: str = "",
) -> Setting:
    return Setting(
        variable,
        lambda raw: _is_number(raw.strip(), minimum=minimum, integer=integer),
        _number_kind(minimum, integer, unit),
        replacement=replacement,
        instead=instead,
    )


@contextmanager
def substituted(settings: Collection[Setting]) -> Iterator[Mapping[str, str]]:
    """Build SDK components inside: each bad variable is warned about and replaced meanwhile.

    Yields the bad values found, by variable. The environment is restored on the way out, so
    the application's own view of it never changes; only the components built inside see the
    replacement. A lock keeps two concurrent setups from restoring each other's values.
    """
    with _lock:
        bad = [
            (setting, raw)
            for setting in settings
            if (raw := os.environ.get(setting.variable)) is not None
            and raw.strip()
            and not setting.valid(raw)
        ]
        # All warned about before anything changes: a warning filter set to "error" leaves the
        # environment as it was.
        for setting, raw in bad:
            bad_setting(setting.variable, raw.strip(), setting.expected, setting.instead)
        saved: dict[str, str] = {}
        for setting, raw in bad:
            saved[setting.variable] = raw
            if setting.replacement is None:
                del os.environ[setting.variable]
            else:
                os.environ[setting.variable] = setting.replacement
        try:
            yield dict(saved)
        finally:
            for variable, raw in saved.items():
                os.environ[variable] = raw


def sdk_disabled() -> bool:
    """``OTEL_SDK_DISABLED=true``: the SDK's off switch, which this package's own per-tenant
    counters follow too (the SDK providers then hand out no-op tracers and meters)."""
    return read_flag("OTEL_SDK_DISABLED", default=False)
