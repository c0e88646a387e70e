"""Retriever bodies run with their ``retrieval`` span current, for the instrumentor.

``BaseRetriever.invoke`` runs the retriever's ``_get_relevant_documents`` (``ainvoke``:
``_aget_relevant_documents``) in its own frame, between the callbacks' start and end and outside
the step contexts the instrumentor sets up, so a span the body opens (its vector store's HTTP
call, its embeddings call) would not be a child of the ``retrieval`` span. The instrumentor wraps
both methods on every ``BaseRetriever`` subclass (those defined later too, through
``BaseRetriever.__init_subclass__``; and the base class's default async body, which runs the sync
one in a thread) so the body runs with that span current. Attach and detach happen in the
wrapper's one frame (for the async body, in one coroutine), so they always pair up, whatever the
body raises and whichever task or thread runs it. The span is found through the ``run_manager``
LangChain passes the body; a retriever whose body takes none (the old signature) runs without.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from opentelemetry import context

from symfonic_otel.langchain.callbacks import LangChainCallbackHandler
from symfonic_otel.langchain.subclasses import SubclassMethods
from symfonic_otel.logs import FailureLog

__all__ = ["RetrieverBodies", "recorder_of"]

_BODIES: Final = (("_get_relevant_documents", False), ("_aget_relevant_documents", True))


def recorder_of(manager: object) -> LangChainCallbackHandler | None:
    """The ``LangChainCallbackHandler`` a callback manager hands its runs to (the
    instrumentor's, or one the user passed, which replaces it), if any."""
    for handler in getattr(manager, "handlers", ()):
        if isinstance(handler, LangChainCallbackHandler):
            return handler
    return None


class _BodyInContext:
    """The wrapper of one retriever body: its run's span is current while it runs."""

    def __init__(self, handler: LangChainCallbackHandler, is_async: bool) -> None:
        self._handler = handler
        self._is_async = is_async

    def __call__(
        self,
        wrapped: Callable[..., Any],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        manager = kwargs.get("run_manager")
        run_id = getattr(manager, "run_id", None)
        recorder = recorder_of(manager) or self._handler
        ctx = None if run_id is None else recorder.span_context(run_id)
        if ctx is None:
            return wrapped(*args, **kwargs)
        if self._is_async:
            return self._in_context_async(ctx, wrapped, args, kwargs)
        token = context.attach(ctx)
        try:
            return wrapped(*args, **kwargs)
        finally:
            context.detach(token)

    @staticmethod
    async def _in_context_async(
        ctx: context.Context,
        wrapped: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        token = context.attach(ctx)
        try:
            return await wrapped(*args, **kwargs)
        finally:
            context.detach(token)


class RetrieverBodies:
    """Wraps and unwraps the retriever bodies; see the module docstring."""

    def __init__(self, handler: LangChainCallbackHandler, failures: FailureLog) -> None:
        wrappers = {name: _BodyInContext(handler, is_async) for name, is_async in _BODIES}
        self._methods = SubclassMethods(wrappers, failures, "langchain.retriever_body")

    def install(self) -> None:
        from langchain_core.retrievers import BaseRetriever

        self._methods.install(BaseRetriever)

    def uninstall(self) -> None:
        self._methods.uninstall()
