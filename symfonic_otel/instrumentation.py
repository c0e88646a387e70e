"""``SymfonicLangChainInstrumentor``: LangChain / LangGraph telemetry with no code change.

Registered under the ``opentelemetry_instrumentor`` entry point, so ``opentelemetry-instrument``
(or ``SymfonicLangChainInstrumentor().instrument()``) adds one shared
``LangChainCallbackHandler`` to every LangChain callback manager. It wraps
``BaseCallbackManager.__init__`` (the approach of the established LangChain instrumentations),
because every run, sync or async, top-level or nested, builds its manager there; the handler is
added as *inheritable* so child runs see it too, and it is not added when the manager already
carries a ``LangChainCallbackHandler`` (one the user passed in ``callbacks`` by hand, or ours
inherited from the parent), so nothing is recorded twice.

It also wraps the body of LangChain's function tools (``StructuredTool`` / ``Tool`` ``_run`` and
``_arun``): the wrapper attaches the tool's ``execute_tool`` span as current and detaches it in
the same frame, so spans of HTTP or database clients called by the tool nest under it. That is
the one place where attach and detach are both ours; the callbacks never attach.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Final

from opentelemetry import context
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)
from opentelemetry.instrumentation.utils import unwrap
from wrapt import wrap_function_wrapper

from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.langchain import LangChainCallbackHandler
from symfonic_otel.logs import FailureLog

__all__ = ["SymfonicLangChainInstrumentor"]

_MANAGER: Final = ("langchain_core.callbacks.base", "BaseCallbackManager", "__init__")
# (module, class, method, is_async): the bodies of LangChain's function tools.
_TOOL_BODIES: Final = (
    ("langchain_core.tools.structured", "StructuredTool", "_run", False),
    ("langchain_core.tools.structured", "StructuredTool", "_arun", True),
    ("langchain_core.tools.simple", "Tool", "_run", False),
    ("langchain_core.tools.simple", "Tool", "_arun", True),
)
_INSTRUMENTS: Final = ("langchain-core >= 0.3",)
# ``instrument()`` options passed on to ``OTelCallbackHandler``; anything else a distro passes
# (``opentelemetry-instrument`` forwards its own keywords) is ignored rather than failing.
_HANDLER_OPTIONS: Final = frozenset(
    {
        "agent_name",
        "tenant_id",
        "capture_content",
        "max_tenants",
        "run_ttl_s",
        "max_open_runs",
        "pricing",
        "tenant_from_baggage",
    }
)


class _AddHandler:
    """wrapt wrapper for ``BaseCallbackManager.__init__``: add the shared handler once."""

    def __init__(self, handler: LangChainCallbackHandler, failures: FailureLog) -> None:
        self._handler = handler
        self._failures = failures

    def __call__(
        self,
        wrapped: Callable[..., None],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        wrapped(*args, **kwargs)
        try:
            for existing in (*instance.handlers, *instance.inheritable_handlers):
                if isinstance(existing, LangChainCallbackHandler):
                    return
            instance.add_handler(self._handler, inherit=True)
        except Exception as exc:  # a manager we cannot extend must still work
            self._failures.report("langchain.instrument_manager", exc)


class _ToolBodyInContext:
    """wrapt wrapper for a tool's ``_run`` / ``_arun``: its span is current during the body.

    Attach and detach happen in this one frame (for ``_arun``, in one coroutine), so they always
    pair up, whatever the body raises and whichever task or thread runs it.
    """

    def __init__(self, handler: LangChainCallbackHandler, is_async: bool) -> None:
        self._handler = handler
        self._is_async = is_async

    def _context(self, kwargs: dict[str, Any]) -> context.Context | None:
        run_id = getattr(kwargs.get("run_manager"), "run_id", None)
        return None if run_id is None else self._handler.tool_context(run_id)

    def __call__(
        self,
        wrapped: Callable[..., Any],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        ctx = self._context(kwargs)
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


class SymfonicLangChainInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """OpenTelemetry instrumentor adding ``LangChainCallbackHandler`` to every LangChain run.

    ``instrument(tracer_provider=..., meter_provider=...)`` (both default to the global
    providers); ``handler=`` shares an existing ``OTelCallbackHandler`` instead, and the
    ``OTelCallbackHandler`` options (``agent_name``, ``tenant_id``, ...) are passed on.
    ``uninstrument()`` restores LangChain: runs started afterwards are not recorded.
    """

    _handler: LangChainCallbackHandler | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        return _INSTRUMENTS

    @property
    def callback_handler(self) -> LangChainCallbackHandler | None:
        """The shared handler while instrumented (to share its core handler or flush runs)."""
        return self._handler

    def _instrument(self, **kwargs: Any) -> None:
        core = kwargs.get("handler")
        if isinstance(core, OTelCallbackHandler):
            handler = LangChainCallbackHandler(handler=core)
        else:
            options = {key: kwargs[key] for key in _HANDLER_OPTIONS if key in kwargs}
            handler = LangChainCallbackHandler(
                tracer_provider=kwargs.get("tracer_provider"),
                meter_provider=kwargs.get("meter_provider"),
                **options,
            )
        self._handler = handler
        module, cls, method = _MANAGER
        wrap_function_wrapper(module, f"{cls}.{method}", _AddHandler(handler, FailureLog()))
        for module, cls, method, is_async in _TOOL_BODIES:
            wrap_function_wrapper(module, f"{cls}.{method}", _ToolBodyInContext(handler, is_async))

    def _uninstrument(self, **kwargs: Any) -> None:
        for module, cls, method, *_ in (_MANAGER, *_TOOL_BODIES):
            unwrap(f"{module}.{cls}", method)
        self._handler = None
