"""The edges of reading a telemetry variable: blank is unset, infinity is no number, the message
shows the default as the documentation writes it, and the log line cuts a long value."""

from __future__ import annotations

import os
import warnings

import pytest
from structlog.testing import capture_logs

from symfonic_otel.environment import (
    Setting,
    TelemetrySettingWarning,
    read_choice,
    read_flag,
    read_number,
    substituted,
)

VARIABLE = "SYMFONIC_OTEL_EXAMPLE_SETTING"


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
def test_a_blank_variable_is_read_as_unset_without_a_warning(
    monkeypatch: pytest.MonkeyPatch, blank: str
) -> None:
    monkeypatch.setenv(VARIABLE, blank)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_number(VARIABLE, 0.25) == 0.25
        assert read_choice(VARIABLE, ("a", "b"), "b") == "b"
        assert read_flag(VARIABLE, default=True) is True


def test_a_blank_variable_is_not_substituted_nor_warned_about(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(VARIABLE, "  ")
    never_valid = Setting(VARIABLE, lambda raw: False, "a number", replacement="7")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with substituted([never_valid]) as bad:
            assert bad == {} and os.environ[VARIABLE] == "  "


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "Infinity"])
def test_an_infinite_or_undefined_number_falls_back_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(VARIABLE, value)
    with pytest.warns(TelemetrySettingWarning, match=f"^{VARIABLE}='{value}' is not a number"):
        assert read_number(VARIABLE, 5.0) == 5.0


def test_a_whole_number_setting_refuses_a_fraction_and_takes_a_whole_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(VARIABLE, "2.5")
    with pytest.warns(TelemetrySettingWarning, match="is not a whole number at least 1; using"):
        assert read_number(VARIABLE, 4, minimum=1, integer=True) == 4
    monkeypatch.setenv(VARIABLE, " 3 ")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_number(VARIABLE, 4, minimum=1, integer=True) == 3


@pytest.mark.parametrize(
    ("default", "shown"), [(60_000.0, "the default, 60000"), (0.25, "the default, 0.25")]
)
def test_the_fallback_is_named_as_the_documentation_writes_it(
    monkeypatch: pytest.MonkeyPatch, default: float, shown: str
) -> None:
    monkeypatch.setenv(VARIABLE, "abc")
    with pytest.warns(TelemetrySettingWarning) as caught:
        read_number(VARIABLE, default)
    assert str(caught[0].message).endswith(f"; using {shown}")


def test_the_log_line_names_the_variable_and_cuts_a_long_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(VARIABLE, "x" * 500)
    with capture_logs() as lines, pytest.warns(TelemetrySettingWarning):
        read_number(VARIABLE, 1.0)
    [line] = [line for line in lines if line["event"] == "symfonic_otel.bad_environment_variable"]
    assert line["log_level"] == "warning"
    assert line["variable"] == VARIABLE and line["value"] == "x" * 80
    assert line["instead"] == "the default, 1" and line["expected"] == "a number 0 or more"


def test_a_choice_names_the_fallback_its_caller_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VARIABLE, "carrier-pigeon")
    with pytest.warns(TelemetrySettingWarning) as caught:
        chosen = read_choice(VARIABLE, ("grpc", "http"), "", instead="the general variable")
    assert chosen == ""
    assert str(caught[0].message) == (
        f"{VARIABLE}='carrier-pigeon' is not one of 'grpc', 'http'; using the general variable"
    )


def test_a_substituted_bad_value_is_named_without_its_surrounding_blanks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(VARIABLE, "  abc  ")
    never_valid = Setting(VARIABLE, lambda raw: False, "a number", instead="the default, 10")
    with pytest.warns(TelemetrySettingWarning) as caught, substituted([never_valid]) as bad:
        assert VARIABLE not in os.environ  # built as if unset
    assert bad == {VARIABLE: "  abc  "} and os.environ[VARIABLE] == "  abc  "
    assert str(caught[0].message) == f"{VARIABLE}='abc' is not a number; using the default, 10"
