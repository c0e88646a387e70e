"""Embeddings calls -> ``embeddings`` spans, for the instrumentor.

LangChain's ``Embeddings`` interface has no callbacks, so a handler in ``callbacks`` never sees
an embeddings call. The instrumentor wraps the ``embed_*`` / ``aembed_*`` methods of every
``Embeddings`` subclass (those defined later too, through ``__init_subclass__``) and records each
outermost call through the core's ``llm_end`` (operation ``embeddings``): a span under the span
current at the call (a retrieval's, under the instrumentor) with the input count and the vector
size, and the duration metric. Providers report no token usage here, so the cost is unknown.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry import context, trace

from symfonic_otel import semconv
from symfonic_otel.events import LLMEndEvent
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.langchain.extract import bounded
from symfonic_otel.langchain.subclasses import SubclassMethods
from symfonic_otel.logs import FailureLog

__all__ = ["EmbeddingsWrapper"]

_METHODS: Final = ("embed_documents", "embed_query", "aembed_documents", "aembed_query")
_ASYNC: Final = frozenset({"aembed_documents", "aembed_query"})
_MODEL_FIELDS: Final = ("model", "model_name", "model_id", "deployment")
# Set while an embeddings call is recorded: a method delegating to another (``aembed_query`` to
# ``embed_query``) is one call, not two.
_INSIDE: contextvars.ContextVar[bool] = contextvars.ContextVar("symfonic_embeddings", default=False)


def _model(instance: object) -> str:
    for name in _MODEL_FIELDS:
        found = bounded(getattr(instance, name, None))
        if found is not None:
            return found
    return ""


def _dimensions(result: object) -> int | None:
    vector = (
        result[0] if isinstance(result, list) and result and isinstance(result[0], list) else result
    )
    return len(vector) if isinstance(vector, list) else None


def _run_tenant() -> str | None:
    """The tenant of the span current at the call when it is one of ours (a retrieval's, a
    tool's): an embeddings call made inside a run is the run's tenant's, not the default's."""
    span = trace.get_current_span()
    scope = getattr(span, "instrumentation_scope", None)
    if getattr(scope, "name", None) != semconv.SCOPE_NAME:
        return None
    attributes = getattr(span, "attributes", None)
    tenant = attributes.get(semconv.TENANT_ID) if isinstance(attributes, Mapping) else None
    return tenant if isinstance(tenant, str) and tenant else None


@dataclass(slots=True)
class _Call:
    result: object = None


class EmbeddingsWrapper:
    """Wraps and unwraps the embeddings methods; see the module docstring."""

    def __init__(self, core: OTelCallbackHandler, failures: FailureLog) -> None:
        self._core = core
        self._failures = failures
        wrappers = {
            name: self._record_async if name in _ASYNC else self._record for name in _METHODS
        }
        self._methods = SubclassMethods(wrappers, failures, "langchain.embeddings_wrap")

    def install(self) -> None:
        try:
            from langchain_core.embeddings import Embeddings
        except Exception:  # no langchain-core embeddings: nothing to wrap
            return
        # The base class's own async methods (a thread running the sync one) stay unwrapped:
        # the sync call they make is the one recorded.
        self._methods.install(Embeddings, include_base=False)

    def uninstall(self) -> None:
        self._methods.uninstall()

    # --- wrappers -----------------------------------------------------------------------------

    def _record(self, wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any) -> Any:
        if _INSIDE.get():
            return wrapped(*args, **kwargs)
        with self._outermost(instance, args) as call:
            call.result = wrapped(*args, **kwargs)
        return call.result

    async def _record_async(
        self, wrapped: Callable[..., Any], instance: Any, args: Any, kwargs: Any
    ) -> Any:
        if _INSIDE.get():
            return await wrapped(*args, **kwargs)
        with self._outermost(instance, args) as call:
            call.result = await wrapped(*args, **kwargs)
        return call.result

    @contextmanager
    def _outermost(self, instance: object, args: Any) -> Iterator[_Call]:
        """The outermost call, sync or async: calls it makes are not recorded again, and it is
        recorded when it ends, with the result set on the yielded ``_Call`` or what it raised."""
        token = _INSIDE.set(True)
        started = time.time_ns()
        call = _Call()
        try:
            yield call
        except BaseException as exc:
            self._end(instance, args, None, started, exc)
            raise
        finally:
            _INSIDE.reset(token)
        self._end(instance, args, call.result, started, None)

    def _end(
        self,
        instance: object,
        args: Any,
        result: object,
        started_ns: int,
        error: BaseException | None,
    ) -> None:
        try:
            texts = args[0] if args else None
            count = len(texts) if isinstance(texts, list) else 1
            attributes: dict[str, Any] = {semconv.EMBEDDINGS_INPUT_COUNT: count}
            dimensions = _dimensions(result)
            if dimensions is not None:
                attributes[semconv.GEN_AI_EMBEDDINGS_DIMENSION_COUNT] = dimensions
            error_type = type(error).__name__[:128] if isinstance(error, Exception) else None
            self._core.llm_end(
                LLMEndEvent(
                    model=_model(instance),
                    output="",
                    usage={},
                    pricing_unknown=True,
                    outcome="error" if error_type else "completed",
                    error_type=error_type,
                ),
                start_time_ns=started_ns,
                end_time_ns=max(time.time_ns(), started_ns),
                error_type=error_type,
                parent=context.get_current(),
                tenant_id=_run_tenant(),
                attributes=attributes,
                operation_name=semconv.OP_EMBEDDINGS,
            )
        except Exception as exc:
            self._failures.report("langchain.embeddings", exc)
            self._core.adapter_failed("langchain.embeddings")
