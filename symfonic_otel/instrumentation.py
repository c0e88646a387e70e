"""``SymfonicLangChainInstrumentor``: LangChain / LangGraph telemetry with no code change.

Registered under the ``opentelemetry_instrumentor`` entry point, so ``opentelemetry-instrument``
(or ``SymfonicLangChainInstrumentor().instrument()``) adds one shared
``LangChainCallbackHandler`` to every LangChain callback manager. It wraps
``BaseCallbackManager.__init__`` (the approach of the established LangChain instrumentations),
because every run, sync or async, top-level or nested, builds its manager there; the handler is
added as *inheritable* so child runs see it too, and it is not added when the manager already
carries a ``LangChainCallbackHandler`` (one the user passed in ``callbacks`` by hand, or ours
inherited from the parent). A handler of the user's wins over ours: where one joins a manager
that inherited ours (``callbacks=[handler]`` of a sub-graph, its ``with_config``, a model's or a
tool's own ``callbacks``), ours leaves that manager's list (``BaseCallbackManager.add_handler``
is wrapped too), so each run is recorded once, by the user's handler, whose spans still nest
under ours through the current context. Lists are replaced, never edited, as managers share
them.

Under the instrumentor the bodies of runs execute with our span current, so spans the
application or its HTTP clients make inside (and the ``traceparent`` they send) join the trace:

- LangChain and LangGraph run every step of a run (a sequence step, a graph node's function, a
  tool's body, a model called from there) in a private copy of the context, set up by their
  ``_set_config_context``; the instrumentor wraps it and, in that copy, makes current the span of
  the run the step belongs to (``LangChainCallbackHandler.span_context`` of the handler recording
  it, ours or the user's: a tool's or a node's span, else its agent run's). The copy is
  discarded when the step ends, so nothing is detached and nothing leaks into the caller; it is
  how LangSmith propagates its own run tree.
- Retriever bodies (``_get_relevant_documents`` of every ``BaseRetriever`` subclass, sync and
  async) run with their ``retrieval`` span current, attached and detached in the wrapper's frame
  (``langchain.retrievers``), so a vector store's embeddings call or HTTP request nests under it.
- ``Embeddings`` methods (which have no callbacks) are recorded as ``embeddings`` spans.

The callback handler alone (passed in ``callbacks``) never makes a span current.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from importlib import import_module
from typing import Any, Final

from opentelemetry import context, metrics, trace
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)
from wrapt import BoundFunctionWrapper, FunctionWrapper, wrap_function_wrapper

from symfonic_otel import semconv
from symfonic_otel.environment import bad_setting
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.langchain import LangChainCallbackHandler
from symfonic_otel.langchain.embeddings import EmbeddingsWrapper
from symfonic_otel.langchain.retrievers import RetrieverBodies, recorder_of
from symfonic_otel.logs import FailureLog, get_logger
from symfonic_otel.read.sanitise import clean_label

__all__ = ["SymfonicLangChainInstrumentor"]

_MANAGER: Final = ("langchain_core.callbacks.base", "BaseCallbackManager")
# Where LangChain and LangGraph set up the private context of each step of a run.
_CONFIG_CONTEXTS: Final = (
    ("langchain_core.runnables.config", "_set_config_context"),
    ("langgraph._internal._runnable", "_set_config_context"),
)
_INSTRUMENTS: Final = ("langchain-core >= 0.3",)
_said_no_sdk = False  # the "no SDK" line is logged once per process


def _say_once_if_no_sdk(tracer_provider: object, meter_provider: object) -> None:
    """One warning when neither provider is an SDK's: runs would be recorded into no-ops
    (``opentelemetry-instrument`` without ``opentelemetry-distro``, no ``configure_telemetry``)."""
    global _said_no_sdk
    if _said_no_sdk:
        return
    tracer_provider = tracer_provider or trace.get_tracer_provider()
    meter_provider = meter_provider or metrics.get_meter_provider()
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

    if isinstance(tracer_provider, TracerProvider) or isinstance(meter_provider, MeterProvider):
        return
    _said_no_sdk = True
    get_logger().warning(
        "symfonic_otel.instrumentor_without_sdk",
        hint="no OpenTelemetry SDK is configured, so nothing is exported: under "
        "opentelemetry-instrument, pip install opentelemetry-distro; in code, call "
        "configure_telemetry() before instrument()",
    )


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
        "tenant_idle_s",
        "tenant_histograms",
    }
)


def _agent_name_from_env() -> str | None:
    """``OTEL_INSTRUMENTATION_SYMFONIC_AGENT_NAME``, if set to a usable name.

    Under ``opentelemetry-instrument`` the environment is the only way to configure us; a value
    that cleans to nothing is logged and ignored rather than failing the whole instrumentation.
    """
    raw = os.environ.get(semconv.AGENT_NAME_ENV)
    if raw is None or not raw.strip():
        return None
    name = clean_label(raw)
    if not name:
        bad_setting(
            semconv.AGENT_NAME_ENV,
            raw,
            "a name with printable characters",
            "the default agent name",
        )
        return None
    return name


def _yield_to_others(manager: Any, ours: LangChainCallbackHandler) -> None:
    """Drop ours from each handler list of ``manager`` that holds another one of the kind."""
    for name in ("handlers", "inheritable_handlers"):
        present = getattr(manager, name)
        if ours in present and any(
            isinstance(h, LangChainCallbackHandler) and h is not ours for h in present
        ):
            setattr(manager, name, [h for h in present if h is not ours])


class _Wrapper:
    """A wrapt wrapper of ours; once ``active`` is off it only calls through.

    Off at ``uninstrument()``: another instrumentation may still hold it (OpenInference saves
    the method it wraps and puts it back when it is uninstrumented, our wrapper included).
    """

    def __init__(self, handler: LangChainCallbackHandler, failures: FailureLog) -> None:
        self._handler = handler
        self._failures = failures
        self.active = True

    failure_event = "langchain.instrument_manager"

    def __call__(
        self,
        wrapped: Callable[..., Any],
        instance: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        result = wrapped(*args, **kwargs)
        if self.active:
            try:
                self._after(instance, args, kwargs)
            except Exception as exc:  # what we cannot read or extend must still work
                self._failures.report(self.failure_event, exc)
        return result

    def _after(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """What the wrapper adds once the wrapped call has returned."""
        raise NotImplementedError


class _AddHandler(_Wrapper):
    """wrapt wrapper for ``BaseCallbackManager.__init__``: add the shared handler once."""

    def _after(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        present = (*instance.handlers, *instance.inheritable_handlers)
        if any(isinstance(h, LangChainCallbackHandler) for h in present):
            _yield_to_others(instance, self._handler)
        else:
            instance.add_handler(self._handler, inherit=True)


class _YieldOnAdd(_Wrapper):
    """wrapt wrapper for ``BaseCallbackManager.add_handler``: a user's handler replaces ours.

    LangChain adds ``callbacks`` after building the manager (``merge_configs``, a model's or a
    tool's own callbacks in ``CallbackManager.configure``), so ``__init__`` alone misses them.
    """

    def _after(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        added = args[0] if args else kwargs.get("handler")
        if isinstance(added, LangChainCallbackHandler) and added is not self._handler:
            _yield_to_others(instance, self._handler)


class _StepInSpan(_Wrapper):
    """wrapt wrapper for ``_set_config_context``: the step runs under its run's span.

    Called inside the private context copy the step will run in (``ctx.run(...)``), so the
    attach below only ever affects that copy, which is discarded with the step.
    """

    failure_event = "langchain.step_context"

    def _after(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        config = args[0] if args else kwargs.get("config")
        callbacks = config.get("callbacks") if isinstance(config, Mapping) else None
        run_id = getattr(callbacks, "parent_run_id", None)
        recorder = recorder_of(callbacks)
        if run_id is not None and recorder is not None:
            ctx = recorder.span_context(run_id)
            if ctx is not None:
                context.attach(ctx)


def _unwrap(owner: Any, name: str, wrapper: _Wrapper) -> None:
    """Take ``wrapper`` out of ``owner.name``, wherever it sits in the chain of wrapt proxies.

    ``opentelemetry.instrumentation.utils.unwrap`` drops the outermost proxy, which is another
    instrumentation's when it wrapped the same method after us (OpenLLMetry and OpenInference
    wrap ``BaseCallbackManager.__init__`` too): theirs would go and ours stay.
    """
    wrapper.active = False
    outer: Any = None
    current = vars(owner).get(name)
    while isinstance(current, (FunctionWrapper, BoundFunctionWrapper)):
        inner = current.__wrapped__
        if getattr(current, "_self_wrapper", None) is wrapper:
            if outer is None:
                setattr(owner, name, inner)
            else:
                outer.__wrapped__ = inner
            return
        outer, current = current, inner


class SymfonicLangChainInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """OpenTelemetry instrumentor adding ``LangChainCallbackHandler`` to every LangChain run.

    ``instrument(tracer_provider=..., meter_provider=...)`` (both default to the global
    providers); ``handler=`` shares an existing ``OTelCallbackHandler`` instead, and the
    ``OTelCallbackHandler`` options (``agent_name``, ``tenant_id``, ...) are passed on, as is
    ``node_spans=True`` (a span per LangGraph node). Without ``agent_name``,
    ``OTEL_INSTRUMENTATION_SYMFONIC_AGENT_NAME`` names the agent (default ``symfonic``).
    ``uninstrument()`` restores LangChain: runs started afterwards are not recorded.
    """

    _handler: LangChainCallbackHandler | None = None
    _wrappers: tuple[tuple[Any, str, _Wrapper], ...] = ()
    _embeddings: EmbeddingsWrapper | None = None
    _retrievers: RetrieverBodies | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        return _INSTRUMENTS

    @property
    def callback_handler(self) -> LangChainCallbackHandler | None:
        """The shared handler while instrumented (to share its core handler or flush runs)."""
        return self._handler

    def _instrument(self, **kwargs: Any) -> None:
        core = kwargs.get("handler")
        node_spans = kwargs.get("node_spans") is True
        if not isinstance(core, OTelCallbackHandler):
            _say_once_if_no_sdk(kwargs.get("tracer_provider"), kwargs.get("meter_provider"))
        if isinstance(core, OTelCallbackHandler):
            handler = LangChainCallbackHandler(handler=core, node_spans=node_spans)
        else:
            options = {key: kwargs[key] for key in _HANDLER_OPTIONS if key in kwargs}
            if "agent_name" not in options:
                named = _agent_name_from_env()
                if named is not None:
                    options["agent_name"] = named
            handler = LangChainCallbackHandler(
                tracer_provider=kwargs.get("tracer_provider"),
                meter_provider=kwargs.get("meter_provider"),
                node_spans=node_spans,
                **options,
            )
        self._handler = handler
        failures = FailureLog()
        module, cls = _MANAGER
        manager = getattr(import_module(module), cls)
        wrappers: list[tuple[Any, str, _Wrapper]] = [
            (manager, "__init__", _AddHandler(handler, failures)),
            (manager, "add_handler", _YieldOnAdd(handler, failures)),
        ]
        for owner, name, wrapper in wrappers:
            wrap_function_wrapper(owner, name, wrapper)
        for module, function in _CONFIG_CONTEXTS:
            try:  # LangGraph is optional, and its private layout may change
                step = import_module(module)
                wrapper = _StepInSpan(handler, failures)
                wrap_function_wrapper(step, function, wrapper)
            except Exception:
                continue
            wrappers.append((step, function, wrapper))
        self._wrappers = tuple(wrappers)
        self._retrievers = RetrieverBodies(handler, failures)
        self._retrievers.install()
        self._embeddings = EmbeddingsWrapper(handler.handler, failures)
        self._embeddings.install()

    def _uninstrument(self, **kwargs: Any) -> None:
        for owner, name, wrapper in reversed(self._wrappers):
            _unwrap(owner, name, wrapper)
        self._wrappers = ()
        if self._retrievers is not None:
            self._retrievers.uninstall()
            self._retrievers = None
        if self._embeddings is not None:
            self._embeddings.uninstall()
            self._embeddings = None
        self._handler = None
