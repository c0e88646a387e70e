"""Shared fixtures: in-memory telemetry that fails any test leaving spans or runs open."""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Iterator

import pytest

from symfonic_otel.langchain import LangChainCallbackHandler
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import DetachErrors
from tests.support.live_marking import LIVE_MODULES, LIVE_TESTS, is_live

gc.disable()  # until the tests run (pytest_runtestloop): importing makes no garbage to find


@pytest.fixture
def telemetry() -> Iterator[InMemoryTelemetry]:
    """In-memory providers; the test fails if it leaves an unended span or an open run."""
    memory = InMemoryTelemetry()
    yield memory
    leaked_spans = memory.unended_spans
    open_runs = memory.open_runs
    memory.shutdown()
    assert not leaked_spans, f"test left spans unended: {leaked_spans}"
    assert open_runs == 0, f"test left {open_runs} agent run(s) open"


def _clear_environment(monkeypatch: pytest.MonkeyPatch, *prefixes: str) -> None:
    for name in list(os.environ):
        if name.startswith(prefixes):
            monkeypatch.delenv(name)


@pytest.fixture
def clean_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``OTEL_*`` variable leaks in from the machine (a module opts in with
    ``pytestmark = pytest.mark.usefixtures("clean_otel_env")``)."""
    _clear_environment(monkeypatch, "OTEL_")


@pytest.fixture
def clean_otel_and_symfonic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``OTEL_*`` nor ``SYMFONIC_OTEL_*`` variable leaks in from the machine."""
    _clear_environment(monkeypatch, "OTEL_", "SYMFONIC_OTEL_")


@pytest.fixture
def detach_log() -> Iterator[DetachErrors]:
    """Fails the test if OpenTelemetry logs a "Failed to detach context" error."""
    collector = DetachErrors()
    logger = logging.getLogger("opentelemetry.context")
    logger.addHandler(collector)
    yield collector
    logger.removeHandler(collector)
    assert not collector.messages, collector.messages


@pytest.fixture
def lc(
    telemetry: InMemoryTelemetry, detach_log: DetachErrors
) -> Iterator[LangChainCallbackHandler]:
    """A LangChain handler on in-memory telemetry that must hold no state once runs end."""
    handler = LangChainCallbackHandler(handler=telemetry.handler())
    yield handler
    assert handler.tracked_runs == 0, "adapter kept state for an ended run"
    assert handler.tracked_calls == 0, "adapter kept state for ended child runs"


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Collection is done: everything imported so far lives for the whole run. Frozen, the
    garbage collector stops walking it at each full pass (a fifth less CPU in the in-process
    tests); objects a test makes are collected as before. It was off while the test modules
    were imported (their objects are not garbage): a fifth of the collection time."""
    gc.collect()
    gc.freeze()
    gc.enable()


# --- the fast lane: `pytest -m "not live"` (tests/support/live_marking.py says what is live)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    verdicts: dict[object, bool] = {}  # by code object: stable, unlike the ids of wrappers
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        roots: list[object] = [getattr(item, "function", None)]
        fixtures = getattr(item, "_fixtureinfo", None)
        if fixtures is not None:
            for name in fixtures.names_closure:
                for definition in fixtures.name2fixturedefs.get(name, ()):
                    roots.append(definition.func)
        name = getattr(item, "originalname", item.name)
        live = module in LIVE_MODULES or f"{module}::{name}" in LIVE_TESTS
        for root in roots:
            if live:
                break
            if root is None:
                continue
            key = getattr(root, "__code__", root)
            if key not in verdicts:
                verdicts[key] = is_live(root)
            live = verdicts[key]
        if live:
            item.add_marker(pytest.mark.live)
