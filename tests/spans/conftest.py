"""Fixtures shared by the span processor tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


def _boom(*args: Any) -> None:
    raise RuntimeError("boom")


@pytest.fixture
def failing_on_end(peer: Any, monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """The module's ``peer`` processor fails in its own span-end work; returns the failure, for
    breaking more of it."""
    monkeypatch.setattr(peer.processor, "_on_end", _boom)
    return _boom
