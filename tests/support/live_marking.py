"""The fast lane's marking (`pytest -m "not live"`): which tests start a real process or server.

A test is ``live`` when it, a fixture it uses or a helper of the test modules it calls starts a
real process or server: a subprocess (the CLI, an instrumented app), Debian's Prometheus or
Alertmanager, an OTLP receiver. The marking is derived from the code, so a new live test needs
no marker of its own; modules that are slow for another reason (load and scale) are listed.
``tests/conftest.py`` applies it at collection.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from types import CodeType
from typing import Final

_TESTS_DIR = Path(__file__).resolve().parents[1]
# Names whose use makes a test live: they start processes or servers.
_LIVE_NAMES: Final = frozenset(
    {
        "subprocess",
        "PrometheusServer",
        "AlertmanagerServer",
        "GrpcOtlpReceiver",
        "HttpOtlpReceiver",
        "HangingServer",
        "DemoProcess",
        "require_binary",
    }
)
# Slow without any of those: sustained load, many threads, big scales (whole modules, or single
# tests of a module whose other tests are quick), each with the reason.
LIVE_MODULES: Final = {
    "test_reliability_collector": "sustained load against a stuck exporter; memory over time",
    "test_reliability_concurrency": "thousands of concurrent runs and tenants",
    "test_claude_agent_sdk": "the SDK starts its bundled CLI, a real process, for each run",
}
LIVE_TESTS: Final = {
    "test_tenant_churn::test_churn_memory_stays_flat": "50,000 tenants come and go over a "
    "simulated week, memory traced",
    "test_tenant_churn::test_churn_a_week_of_50000_tenants_1000_active_at_a_time": "50,000 "
    "tenants come and go over a simulated week, collected as they go",
    "test_series_budget::test_five_hundred_tenants_each_keep_a_series_on_every_instrument": "500 "
    "tenants' series through every instrument and a real exposition",
    "test_handler_robustness::test_ten_thousand_generated_events_per_method": "10,000 events "
    "per public method (about 15 s each)",
    "test_handler_robustness::test_memory_is_bounded_in_bytes_for_distinct_large_ids": "fills "
    "every bound with large ids and measures memory",
    "test_handler_robustness::test_random_events_never_raise_and_open_runs_stay_capped": "a long "
    "random event stream past the open-run cap",
}


def _code_objects(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _code_objects(const)


def _referenced(obj: object) -> Iterator[object]:
    """Functions and classes of the test modules that ``obj`` calls or names."""
    if isinstance(obj, type):
        for member in vars(obj).values():
            yield from _referenced(getattr(member, "__func__", member))
        return
    code = getattr(obj, "__code__", None)
    module_globals = getattr(obj, "__globals__", {})
    if not isinstance(code, CodeType):
        return
    for inner in _code_objects(code):
        yield inner
        for name in inner.co_names:
            found = module_globals.get(name)
            if inspect.isfunction(found):
                yield inspect.unwrap(found)  # a helper behind a decorator (a context manager)
            elif inspect.isclass(found):
                yield found


def is_live(obj: object, seen: set[int] | None = None) -> bool:
    """Whether ``obj`` (a test, a fixture's function) or what it calls in tests/ starts one."""
    seen = set() if seen is None else seen
    stack = [obj]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, CodeType):
            if _LIVE_NAMES.intersection(current.co_names):
                return True
            continue
        try:
            source = inspect.getsourcefile(current)  # type: ignore[arg-type]
        except TypeError:  # built-in, or a C-level wrapper
            source = None
        if source is None or _TESTS_DIR not in Path(source).resolve().parents:
            if getattr(current, "__name__", None) in _LIVE_NAMES:
                return True
            continue  # library code: its own names say nothing about the test
        stack.extend(_referenced(current))
    return False
