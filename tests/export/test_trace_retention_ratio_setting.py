"""``healthy_trace_ratio``: an argument is checked and refused with the option named; the
variable applies only without an argument, and a bad variable warns and leaves the default."""

from __future__ import annotations

import math
import re

import pytest

from symfonic_otel import semconv
from symfonic_otel.environment import TelemetrySettingWarning
from symfonic_otel.export.retention_rules import check_ratio, ratio_from_env

pytestmark = pytest.mark.usefixtures("clean_otel_and_symfonic_env")


@pytest.mark.parametrize(
    ("value", "expected"), [(0, 0.0), (1, 1.0), (0.0, 0.0), (1.0, 1.0), (0.25, 0.25)]
)
def test_a_ratio_from_zero_to_one_is_taken_as_a_float(value: float, expected: float) -> None:
    checked = check_ratio(value)
    assert checked == expected and type(checked) is float


@pytest.mark.parametrize(
    "bad", [-0.001, 1.001, math.inf, -math.inf, math.nan, True, False, "0.5", None]
)
def test_anything_else_is_refused_naming_the_option_and_the_value(bad: object) -> None:
    message = (
        r"^ratio_option must be a number from 0\.0 to 1\.0 \(the share of healthy runs' traces "
        r"exported; 1\.0 keeps every trace\), got " + re.escape(repr(bad)) + "$"
    )
    with pytest.raises(ValueError, match=message):
        check_ratio(bad, "ratio_option")
    with pytest.raises(ValueError, match=r"^healthy_trace_ratio must be"):
        check_ratio(bad)


def test_the_argument_wins_and_the_variable_applies_without_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert ratio_from_env(None) == 1.0  # neither: every trace is kept
    monkeypatch.setenv(semconv.HEALTHY_TRACE_RATIO_ENV, "0.25")
    assert ratio_from_env(None) == 0.25
    assert ratio_from_env(0.5) == 0.5
    assert ratio_from_env(0) == 0.0
    with pytest.raises(ValueError, match="healthy_trace_ratio"):
        ratio_from_env(2.0)


@pytest.mark.parametrize("bad", ["1.5", "-0.1", "one percent"])
def test_a_bad_variable_warns_and_the_default_applies(
    monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    monkeypatch.setenv(semconv.HEALTHY_TRACE_RATIO_ENV, bad)
    with pytest.warns(TelemetrySettingWarning, match="from 0 to 1"):
        assert ratio_from_env(None) == 1.0
