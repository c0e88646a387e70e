"""What every translator of the adapter shares: the core, the run tree, guarded reading."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, TypeVar

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span

from symfonic_otel import semconv
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.langchain.runs import RunTree
from symfonic_otel.logs import FailureLog

__all__ = ["Part", "in_span"]

T = TypeVar("T")
_UNFINISHED: Final = {semconv.STEP_UNFINISHED: True}


def in_span(span: Span | None) -> Context | None:
    """A context with ``span`` as the parent of new spans (None for no span)."""
    return None if span is None else trace.set_span_in_context(span)


class Part:
    """Base of the translators: reads payloads so that a bad one never loses the call."""

    def __init__(self, core: OTelCallbackHandler, tree: RunTree, failures: FailureLog) -> None:
        self._core = core
        self._tree = tree
        self._failures = failures

    def _read(self, what: str, read: Callable[[Any], T], payload: object, default: T) -> T:
        """``read(payload)``, or ``default`` when the payload cannot be read (logged once)."""
        try:
            return read(payload)
        except Exception as exc:
            self._failures.report(f"langchain.read_{what}", exc)
            return default

    def _end_spans(self, spans: Iterable[Span]) -> None:
        """End spans whose own end never came (their run ended, was evicted, or refused)."""
        for span in spans:
            self._core.end_call(span, attributes=_UNFINISHED)
