"""Reading a telemetry variable: spaces around a good value are no error, the SDK's off switch
reads like every flag, the warning carries its variable and its problem, a long value is cut in
the message, and substitution changes nothing until every bad value has been warned about."""

from __future__ import annotations

import os
import warnings

import pytest

from symfonic_otel.environment import (
    Setting,
    TelemetrySettingWarning,
    bad_setting,
    read_choice,
    read_flag,
    read_number,
    sdk_disabled,
    substituted,
)
from symfonic_otel.export.sdk_settings import SDK_SETTINGS, settings_for

VARIABLE = "SYMFONIC_OTEL_EXAMPLE_SETTING"
OTHER = "SYMFONIC_OTEL_OTHER_EXAMPLE_SETTING"


@pytest.mark.parametrize("spaced", [" Delta ", "\tdelta\n"])
def test_a_good_choice_with_spaces_around_it_is_read_without_a_warning(
    monkeypatch: pytest.MonkeyPatch, spaced: str
) -> None:
    monkeypatch.setenv(VARIABLE, spaced)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_choice(VARIABLE, ("cumulative", "delta"), "cumulative") == "delta"


def test_a_good_flag_or_number_with_spaces_around_it_is_read_without_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        monkeypatch.setenv(VARIABLE, "  FALSE ")
        assert read_flag(VARIABLE, default=True) is False
        monkeypatch.setenv(VARIABLE, " 0.5\n")
        assert read_number(VARIABLE, 0.25, maximum=1.0) == 0.5


@pytest.mark.parametrize("value", ["true", "TRUE", " True "])
def test_the_sdk_off_switch_reads_true_in_any_case_and_spacing(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", value)
    assert sdk_disabled() is True


def test_a_bad_sdk_off_switch_warns_and_leaves_the_sdk_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "yes")
    with pytest.warns(TelemetrySettingWarning, match="OTEL_SDK_DISABLED='yes'"):
        assert sdk_disabled() is False
    monkeypatch.delenv("OTEL_SDK_DISABLED")
    assert sdk_disabled() is False


def test_the_warning_names_its_variable_and_its_problem_without_the_fallback() -> None:
    with pytest.warns(TelemetrySettingWarning) as caught:
        message = bad_setting(VARIABLE, "abc", "a number", "the default, 5")
    warning = caught[0].message
    assert isinstance(warning, TelemetrySettingWarning)
    assert str(warning) == message == f"{VARIABLE}='abc' is not a number; using the default, 5"
    assert warning.variable == VARIABLE
    assert warning.problem == f"{VARIABLE}='abc' is not a number"


def test_a_long_value_is_cut_in_the_warning_message() -> None:
    value = "x" * 80 + "TAIL"
    with pytest.warns(TelemetrySettingWarning) as caught:
        message = bad_setting(VARIABLE, value, "a number", "the default")
    assert "TAIL" not in message and "'" + "x" * 80 + "...'" in message
    assert "TAIL" not in str(caught[0].message)
    with pytest.warns(TelemetrySettingWarning):
        whole = bad_setting(VARIABLE, "x" * 80, "a number", "the default")
    assert "'" + "x" * 80 + "'" in whole and "..." not in whole


def test_an_error_filter_on_a_later_bad_value_leaves_every_variable_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(VARIABLE, "bad-one")
    monkeypatch.setenv(OTHER, "bad-two")
    settings = [
        Setting(VARIABLE, lambda raw: False, "a number", replacement="1"),
        Setting(OTHER, lambda raw: False, "a number", replacement=None),
    ]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=f"^{VARIABLE}=")
        warnings.filterwarnings("error", message=f"^{OTHER}=", category=TelemetrySettingWarning)
        with pytest.raises(TelemetrySettingWarning), substituted(settings):
            pass  # never reached: the second warning raises
    assert os.environ[VARIABLE] == "bad-one"
    assert os.environ[OTHER] == "bad-two"


def test_the_providers_variables_are_checked_whatever_else_is_built() -> None:
    providers = set(settings_for(otlp=True, periodic=True, batch_spans=True))
    for otlp in (False, True):
        for periodic in (False, True):
            for batch_spans in (False, True):
                chosen = settings_for(otlp=otlp, periodic=periodic, batch_spans=batch_spans)
                assert {s.variable for s in chosen} >= {
                    "OTEL_METRICS_EXEMPLAR_FILTER",
                    "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
                    "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT",
                }
                assert set(chosen) <= providers
    nothing_built = settings_for(otlp=False, periodic=False, batch_spans=False)
    assert "OTEL_EXPORTER_OTLP_TIMEOUT" not in {s.variable for s in nothing_built}
    assert set(SDK_SETTINGS) == providers
