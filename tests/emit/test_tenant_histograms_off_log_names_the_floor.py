"""Asking for per-tenant histograms on an SDK that cannot bound them logs which SDK is needed."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from symfonic_otel.emit import budget


def test_the_refusal_log_names_the_sdk_version_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "sdk_bounds_series", lambda: False)  # as SDK 1.43 / 1.44 answer
    with capture_logs() as logs, pytest.warns(RuntimeWarning):
        assert budget.histograms_per_tenant(True) is False
    (entry,) = [e for e in logs if e["event"] == "symfonic_otel.tenant_histograms_off"]
    assert entry["needs"] == "1.45"
