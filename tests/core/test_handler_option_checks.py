"""Each handler option is checked at construction, naming the argument at fault, with the
smallest good value accepted; the series-budget warning fires one tenant past the limit, not at
it, and counts every agent name."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest
from structlog.testing import capture_logs

from symfonic_otel.emit.budget import CARDINALITY_LIMIT
from symfonic_otel.options import warn_if_over_limit
from symfonic_otel.testing.telemetry import InMemoryTelemetry

# The most tenants whose series fit the default limit exactly, with one agent name.
AT_THE_LIMIT = 79_998


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("max_tenants", True, ValueError),
        ("max_tenants", 0, ValueError),
        ("max_open_runs", True, ValueError),
        ("max_open_runs", 0, ValueError),
        ("run_ttl_s", 0, ValueError),
        ("tenant_idle_s", 0.0, ValueError),
        ("tenant_from_baggage", "true", TypeError),
        ("node_spans", 1, TypeError),
        ("tenant_histograms", "yes", TypeError),
        ("clock", 5.0, TypeError),
        ("tenant_id", 42, TypeError),
    ],
)
def test_a_bad_option_fails_at_construction_naming_it(
    telemetry: InMemoryTelemetry, option: str, value: Any, error: type[Exception]
) -> None:
    with pytest.raises(error, match=f"^{option} must be"):
        telemetry.handler(**{option: value})


def test_the_smallest_good_values_are_accepted(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(
        max_tenants=1, max_open_runs=1, run_ttl_s=0.001, tenant_idle_s=0.001, clock=lambda: 0.0
    )
    assert handler.open_runs == 0


def _budget_lines(max_tenants: int, agent_names: int = 1) -> list[MutableMapping[str, Any]]:
    with capture_logs() as lines:
        warn_if_over_limit(max_tenants, False, agent_names)
    return [line for line in lines if line["event"] == "symfonic_otel.series_budget_above_limit"]


def test_the_budget_warning_fires_one_tenant_past_the_limit_not_at_it() -> None:
    assert _budget_lines(AT_THE_LIMIT) == []
    [line] = _budget_lines(AT_THE_LIMIT + 1)
    assert line["log_level"] == "warning"
    assert line["max_tenants"] == AT_THE_LIMIT + 1
    assert line["configured_limit"] == CARDINALITY_LIMIT
    assert line["series_per_instrument"] > CARDINALITY_LIMIT


def test_the_budget_warning_counts_every_agent_name() -> None:
    assert _budget_lines(60_000, agent_names=1) == []
    assert len(_budget_lines(60_000, agent_names=2)) == 1
