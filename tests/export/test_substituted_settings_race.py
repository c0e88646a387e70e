"""Two telemetry setups at once, both seeing one bad environment variable: the second waits
until the first has built its components and restored the variable, then finds the bad value
itself, so each builds with the replacement and neither sees the other's restore.

The interleaving is forced, not hoped for: the first setup holds its components' build open
(bounded) while the second begins on this thread. With the substitution's lock held by the
first, the second waits; the hold ends by its timeout.
"""

from __future__ import annotations

import os
import threading
import warnings

import pytest

from symfonic_otel.environment import Setting, TelemetrySettingWarning, substituted

# How long the first setup holds its build open for the second (see the module docstring).
_HOLD_S = 0.1
_VARIABLE = "SYMFONIC_TEST_SUBSTITUTED_SETTING"
_SETTING = Setting(_VARIABLE, lambda raw: raw == "good", "'good'", replacement="good")


def test_a_setup_begun_while_another_builds_waits_and_substitutes_for_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(_VARIABLE, "bad")
    building, release = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def first() -> None:
        with substituted([_SETTING]) as bad:
            seen["first"] = (dict(bad), os.environ.get(_VARIABLE))
            building.set()
            release.wait(_HOLD_S)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetrySettingWarning)
        thread = threading.Thread(target=first)
        thread.start()
        try:
            assert building.wait(2.0)
            with substituted([_SETTING]) as bad:
                seen["second"] = (dict(bad), os.environ.get(_VARIABLE))
            release.set()
        finally:
            release.set()
            thread.join()
    assert seen["first"] == ({_VARIABLE: "bad"}, "good")
    assert seen["second"] == ({_VARIABLE: "bad"}, "good")
    assert os.environ[_VARIABLE] == "bad"  # the application's own view is restored
