"""The demo's final flush: the SDK is given the budget in milliseconds, a flush that reports
failure or logs an export warning meanwhile is not a success, and the SDK's loggers are given
back as they were afterwards."""

from __future__ import annotations

import logging

import pytest

from symfonic_otel.demo.flush import ExportWarnings, bounded_flush, quiet_logs


class _Flush:
    """What the demo flushes: records the timeout it is given; may log an export warning."""

    def __init__(self, result: bool = True, warn: bool = False) -> None:
        self.result, self.warn = result, warn
        self.timeouts: list[int] = []

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        self.timeouts.append(timeout_millis)
        if self.warn:
            logging.getLogger("opentelemetry.exporter.otlp").warning("Failed to export")
        return self.result


def test_a_flush_is_given_its_budget_in_milliseconds() -> None:
    telemetry = _Flush()
    with quiet_logs() as warnings:
        assert bounded_flush(telemetry, warnings, 1.5)
    assert telemetry.timeouts == [1500]


def test_a_flush_that_reports_failure_is_no_success() -> None:
    with quiet_logs() as warnings:
        assert not bounded_flush(_Flush(result=False), warnings, 1.0)


def test_an_export_warning_during_the_flush_makes_it_no_success() -> None:
    with quiet_logs() as warnings:
        assert not bounded_flush(_Flush(warn=True), warnings, 1.0)
        assert warnings.count == 1


def test_the_sdk_s_loggers_are_given_back_after_the_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    sdk = logging.getLogger("opentelemetry.sdk")
    package = logging.getLogger("symfonic_otel")
    monkeypatch.setattr(sdk, "propagate", True)  # as the application had them
    monkeypatch.setattr(package, "propagate", True)
    before = (sdk.propagate, list(sdk.handlers), package.propagate, list(package.handlers))
    with quiet_logs() as warnings:
        assert isinstance(warnings, ExportWarnings)
        assert warnings in sdk.handlers
        assert warnings not in package.handlers  # the package's own lines are muted, not counted
        assert not sdk.propagate and not package.propagate
    assert (sdk.propagate, list(sdk.handlers), package.propagate, list(package.handlers)) == before
