"""Each framework adapter is an optional extra: importing one without its framework fails at
once, with the extra to install, never deeper with a framework's missing name."""

from __future__ import annotations

import importlib

__all__ = ["require"]


def require(module: str, adapter: str, framework: str, install: str) -> None:
    """Import the framework's ``module``, or raise an ImportError with the ``install`` line
    that brings it (its extra)."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{adapter} needs {framework}: {install}") from exc
