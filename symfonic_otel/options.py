"""The handler's constructor options, checked up front: each error names the argument at fault.

A handler is built once, at start-up, so a bad option fails there, loudly; the events it then
receives never fail.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

from symfonic_otel.emit.budget import CARDINALITY_LIMIT, series_budget
from symfonic_otel.logs import get_logger
from symfonic_otel.read.sanitise import clean_label, is_real


def is_positive_seconds(value: object) -> bool:
    """A finite number of seconds above zero (a bool is no number of seconds)."""
    return is_real(value) and value > 0


def check_handler_options(
    *,
    agent_name: object,
    tenant_id: object,
    max_tenants: object,
    run_ttl_s: object,
    max_open_runs: object,
    tenant_from_baggage: object,
    node_spans: object = False,
    tenant_idle_s: object = 1.0,
    tenant_histograms: object = False,
    clock: object = None,
) -> None:
    if not isinstance(agent_name, str) or not clean_label(agent_name):
        raise ValueError(f"agent_name must be a non-empty str, got {agent_name!r}")
    if tenant_id is not None and not isinstance(tenant_id, str):
        raise TypeError(f"tenant_id must be a str or None, got {tenant_id!r}")
    if isinstance(max_tenants, bool) or not isinstance(max_tenants, int) or max_tenants < 1:
        raise ValueError(f"max_tenants must be an int >= 1, got {max_tenants!r}")
    if not is_positive_seconds(run_ttl_s):
        raise ValueError(f"run_ttl_s must be a positive number of seconds, got {run_ttl_s!r}")
    if isinstance(max_open_runs, bool) or not isinstance(max_open_runs, int) or max_open_runs < 1:
        raise ValueError(f"max_open_runs must be an int >= 1, got {max_open_runs!r}")
    if not isinstance(tenant_from_baggage, bool):
        raise TypeError(f"tenant_from_baggage must be a bool, got {tenant_from_baggage!r}")
    if not isinstance(node_spans, bool):
        raise TypeError(f"node_spans must be a bool, got {node_spans!r}")
    if not is_positive_seconds(tenant_idle_s):
        raise ValueError(
            f"tenant_idle_s must be a positive number of seconds, got {tenant_idle_s!r}"
        )
    if not isinstance(tenant_histograms, bool):
        raise TypeError(f"tenant_histograms must be a bool, got {tenant_histograms!r}")
    if clock is not None and not callable(clock):
        raise TypeError(f"clock must be a callable returning seconds, got {clock!r}")


def warn_if_over_limit(
    max_tenants: int, tenant_histograms: bool = False, agent_names: int = 1
) -> None:
    """Say so when this many tenants need more series than ``configure_telemetry`` allows."""
    needed = max(series_budget(max_tenants, tenant_histograms, agent_names).values())
    if needed > CARDINALITY_LIMIT:
        get_logger().warning(
            "symfonic_otel.series_budget_above_limit",
            max_tenants=max_tenants,
            series_per_instrument=needed,
            configured_limit=CARDINALITY_LIMIT,
            hint="use your own MeterProvider with budget.cardinality_view(limit)",
        )


def unexpected_option(owner: str, name: str, options: Iterable[str]) -> str:
    """The TypeError message for an unknown keyword, with the closest option (``tenant`` ->
    ``tenant_id``) when one is close."""
    close = difflib.get_close_matches(name, sorted(options), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{owner}() got an unexpected keyword argument {name!r}{hint}"


@cache
def keyword_defaults(function: Callable[..., Any]) -> dict[str, object]:
    """A function's keyword-only parameters and their defaults."""
    parameters = inspect.signature(function).parameters.values()
    return {p.name: p.default for p in parameters if p.kind is p.KEYWORD_ONLY}
