"""Fixtures the LangChain tests share: the callback handler given at run time (``captured``,
``noded`` with node spans), and the auto-instrumentor with the check that no context detach
failed (``instrumentor``, ``no_detach_errors``)."""

from __future__ import annotations

from tests.support.agent_shapes_support import captured, noded
from tests.support.langchain_support import instrumentor, no_detach_errors

__all__ = ["captured", "instrumentor", "no_detach_errors", "noded"]
