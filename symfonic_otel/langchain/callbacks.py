"""``LangChainCallbackHandler``: LangChain / LangGraph callbacks -> the same agent telemetry.

The adapter only *translates*: every span and metric is made by the core
``OTelCallbackHandler``, so a LangGraph agent and a Symfonic agent land on the same dashboards
and the same silent-bail alert. What the adapter adds is the knowledge the callbacks spread over
many calls: which agent run a callback belongs to (``runs``), what a payload says (``extract``)
and how a run ended (``errors``, and the verdict on its output).

No span is ever attached as the current context here: a callback handler sees a start and an end
in different frames (often different tasks), so it cannot own both the attach and the detach,
which is what produces "Failed to detach context" in other instrumentations. Code that does own
both (the instrumentor, around the body of each step LangChain and LangGraph run) asks
``span_context`` for the span a run's body should run under.

The handler sets ``run_inline = True``: under ``ainvoke`` langchain-core would otherwise hop to a
thread pool once per callback. That is safe because every callback here is short, does no I/O,
and guards shared state with a lock that is never held while calling into the OTel SDK.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Never
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from opentelemetry import context, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from symfonic_otel.core.loops import DEFAULT_LOOP_THRESHOLD, DEFAULT_RUNAWAY_CALLS
from symfonic_otel.emit.budget import DEFAULT_MAX_TENANTS
from symfonic_otel.emit.pricing import ModelPrice
from symfonic_otel.emit.tenants import DEFAULT_TENANT_IDLE_S
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.langchain.extract import RunKey, run_key
from symfonic_otel.langchain.models import ModelCalls
from symfonic_otel.langchain.runs import RunTree
from symfonic_otel.langchain.tools import ToolCalls
from symfonic_otel.langchain.translate import Translator
from symfonic_otel.logs import FailureLog
from symfonic_otel.options import keyword_defaults, unexpected_option
from symfonic_otel.semconv import OP_CHAT, OP_TEXT_COMPLETION

__all__ = ["LangChainCallbackHandler"]

_DEFAULT_MAX_AGENT_RUNS: Final = 10_000

if TYPE_CHECKING:
    _HandlerBase = BaseCallbackHandler
else:
    try:  # LangGraph (>= 1.2) sends its lifecycle callbacks (interrupt, resume) to these only
        from langgraph.callbacks import GraphCallbackHandler as _HandlerBase
    except Exception:
        _HandlerBase = BaseCallbackHandler


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


class LangChainCallbackHandler(_HandlerBase):
    """Add to ``config={"callbacks": [...]}`` of a LangChain runnable or LangGraph graph.

    Translates LangChain callbacks into the core handler's events: the top-level run is the
    agent run (``invoke_agent`` span), a graph inside it a sub-agent run of its own, model calls
    are ``chat`` (``text_completion``) spans with duration and token metrics, tool calls
    ``execute_tool`` spans, retrievers ``retrieval`` spans, and a LangGraph ReAct agent whose
    final message has no text is counted as a silent bail. ``node_spans=True`` adds an
    ``invoke_node`` span per LangGraph node. Attached to a model or a tool instead (its
    ``callbacks=``), or called without a graph, its calls are recorded as standalone spans under
    the caller's current span; attached to a sub-graph only, that sub-graph is the agent run.
    Pass ``handler=`` to share one ``OTelCallbackHandler`` (and its open-run registry) with
    other agents; otherwise one is built from the providers and the options, which are
    ``OTelCallbackHandler``'s (``agent_name``, ``tenant_id``, ``max_tenants``...).
    """

    run_inline: bool = True
    raise_error: bool = False

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        handler: OTelCallbackHandler | None = None,
        node_spans: bool = False,
        agent_name: str = "symfonic",
        tenant_id: str | None = None,
        capture_content: bool | None = None,
        max_tenants: int = DEFAULT_MAX_TENANTS,
        run_ttl_s: float = 3600.0,
        max_open_runs: int = _DEFAULT_MAX_AGENT_RUNS,
        pricing: Mapping[str, ModelPrice] | None = None,
        tenant_from_baggage: bool = False,
        tenant_idle_s: float = DEFAULT_TENANT_IDLE_S,
        tenant_histograms: bool = False,
        clock: Callable[[], float] | None = None,
        loop_threshold: int = DEFAULT_LOOP_THRESHOLD,
        runaway_calls: int = DEFAULT_RUNAWAY_CALLS,
        **unexpected: Never,
    ) -> None:
        super().__init__()
        if unexpected:  # say so here, with the closest option: the user called this class
            name = next(iter(unexpected))
            options = keyword_defaults(LangChainCallbackHandler.__init__)
            raise TypeError(unexpected_option("LangChainCallbackHandler", name, options))
        if not isinstance(node_spans, bool):
            raise TypeError(f"node_spans must be True or False, got {node_spans!r}")
        given: dict[str, Any] = {
            "agent_name": agent_name,
            "tenant_id": tenant_id,
            "capture_content": capture_content,
            "max_tenants": max_tenants,
            "run_ttl_s": run_ttl_s,
            "max_open_runs": max_open_runs,
            "pricing": pricing,
            "tenant_from_baggage": tenant_from_baggage,
            "tenant_idle_s": tenant_idle_s,
            "tenant_histograms": tenant_histograms,
            "clock": clock,
            "loop_threshold": loop_threshold,
            "runaway_calls": runaway_calls,
        }
        # Options left at the core handler's defaults are not passed on (nor clash with handler=).
        defaults = keyword_defaults(OTelCallbackHandler.__init__)
        handler_kwargs = {k: v for k, v in given.items() if v != defaults[k]}
        if handler is None:
            handler = OTelCallbackHandler(
                tracer_provider=tracer_provider, meter_provider=meter_provider, **handler_kwargs
            )
        elif not isinstance(handler, OTelCallbackHandler):
            raise TypeError(
                f"handler= takes an OTelCallbackHandler to share, got {type(handler).__name__}"
            )
        elif tracer_provider is not None or meter_provider is not None or handler_kwargs:
            raise TypeError(
                "pass either handler= or the providers / handler options, not both: "
                "a shared handler is configured where it is built"
            )
        max_runs = max_open_runs
        self._core = handler
        self._failures = FailureLog()
        self._tree = RunTree(int(max_runs))
        self._models = ModelCalls(handler, self._tree, self._failures)
        self._translate = Translator(
            handler, self._tree, self._failures, self._models.unfinished, node_spans=node_spans
        )
        self._tools = ToolCalls(handler, self._tree, self._failures)

    @property
    def handler(self) -> OTelCallbackHandler:
        """The core handler doing the telemetry (share it, or close its runs at shutdown)."""
        return self._core

    def span_context(self, run_id: UUID) -> Context | None:
        """A context with the span that run ``run_id``'s body runs under as current.

        The run's own span (a tool, a retrieval, a graph node with ``node_spans``), else the span
        it runs inside, else its agent run's span; None for a run the adapter does not track.
        For code that owns both the attach and the detach around the body (the instrumentor),
        so spans made inside, HTTP client spans included, join the trace.
        """
        try:
            key = run_key(run_id)
            if key is None:
                return None
            agent, span = self._tree.span_of(key)
            if span is not None:
                return trace.set_span_in_context(span)
            return self._core.run_context(agent.run_id) if agent is not None else None
        except Exception as exc:
            self._failures.report("langchain.span_context", exc)
            return None

    def tool_context(self, run_id: UUID) -> Context | None:
        """``span_context`` of a tool run (kept for callers of earlier releases)."""
        return self.span_context(run_id)

    @property
    def tracked_runs(self) -> int:
        """Agent runs the adapter holds state for (for tests and health checks)."""
        return self._tree.agent_count

    @property
    def tracked_calls(self) -> int:
        """Child runs, pending model calls and standalone tools the adapter holds state for."""
        return self._tree.call_count

    @property
    def internal_failures(self) -> dict[str, int]:
        """The adapter's own failures per kind (a payload it could not read, a bug)."""
        return self._failures.counts()

    def _guarded(self, kind: str, run_id: object, work: Callable[[RunKey], None]) -> None:
        """``work(key)`` for the run's key; anything it raises is logged, never raised."""
        try:
            key = run_key(run_id)
            if key is not None:
                work(key)
        except Exception as exc:
            self._failures.report(f"langchain.{kind}", exc, run_id=run_id)
            self._core.adapter_failed(f"langchain.{kind}")

    # --- chains: the top-level one is the agent run, graphs inside it sub-agent runs ----------

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        def start(key: RunKey) -> None:
            parent = run_key(parent_run_id)
            name, meta = kwargs.get("name"), _mapping(metadata)
            if parent is None:
                self._translate.start_agent(key, inputs, meta, name, serialized)
                return
            outside, under = self._tree.outside(key, parent)
            if outside:  # the handler's own top: a run, under a standalone span if any
                self._translate.start_agent(key, inputs, meta, name, serialized, under)
            else:
                self._translate.start_chain(key, parent, inputs, meta, tags, name)

        self._guarded("on_chain_start", run_id, start)

    def on_chain_end(
        self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        end = self._translate.end_agent if parent_run_id is None else self._translate.end_chain
        inputs = kwargs.get("inputs")  # a streamed run's input, known only now
        self._guarded("on_chain_end", run_id, lambda key: end(key, outputs, None, inputs))

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        end = self._translate.end_agent if parent_run_id is None else self._translate.end_chain
        inputs = kwargs.get("inputs")
        self._guarded("on_chain_error", run_id, lambda key: end(key, None, error, inputs))

    # --- LangGraph lifecycle: a graph paused (``interrupt()``, static breakpoints) or resumed -

    def on_interrupt(self, event: Any) -> None:
        """The graph run stopped on an interrupt: unless it had answered, it ends paused (no
        verdict, not a bail), static breakpoints included."""
        try:
            run_id = event.run_id
        except Exception as exc:
            self._failures.report("langchain.on_interrupt", exc)
            self._core.adapter_failed("langchain.on_interrupt")
            return
        self._guarded("on_interrupt", run_id, self._tree.pause)

    def on_resume(self, event: Any) -> None:
        """A resumed graph is an ordinary run (its input the resume value): nothing to add."""

    # --- model calls --------------------------------------------------------------------------

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[Any]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        self._start_call(
            "on_chat_model_start", run_id, parent_run_id, metadata, kwargs, messages, OP_CHAT
        )

    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._start_call(
            "on_llm_start", run_id, parent_run_id, metadata, kwargs, prompts, OP_TEXT_COMPLETION
        )

    def _start_call(
        self,
        kind: str,
        run_id: object,
        parent_run_id: object,
        metadata: object,
        kwargs: Mapping[str, Any],
        inputs: object,
        operation: str,
    ) -> None:
        def start(key: RunKey) -> None:
            self._models.start_call(
                key,
                run_key(parent_run_id),
                _mapping(metadata),
                kwargs,
                context.get_current(),
                inputs,
                operation,
            )

        self._guarded(kind, run_id, start)

    def on_llm_new_token(self, token: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._guarded("on_llm_new_token", run_id, self._models.new_token)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._guarded("on_llm_end", run_id, lambda key: self._models.end_call(key, response, None))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._guarded("on_llm_error", run_id, lambda key: self._models.end_call(key, None, error))

    # --- tools and retrievers -----------------------------------------------------------------

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        def start(key: RunKey) -> None:
            self._tools.start_tool(
                key,
                run_key(parent_run_id),
                serialized,
                kwargs,
                _mapping(metadata),
                context.get_current(),
                inputs,
                input_str,
            )

        self._guarded("on_tool_start", run_id, start)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._guarded("on_tool_end", run_id, lambda key: self._tools.end_tool(key, output, None))

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._guarded("on_tool_error", run_id, lambda key: self._tools.end_tool(key, None, error))

    def on_retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        def start(key: RunKey) -> None:
            self._tools.start_retriever(
                key,
                run_key(parent_run_id),
                query,
                _mapping(metadata),
                kwargs.get("name"),
                context.get_current(),
            )

        self._guarded("on_retriever_start", run_id, start)

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._guarded(
            "on_retriever_end",
            run_id,
            lambda key: self._tools.end_retriever(key, documents, None),
        )

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._guarded(
            "on_retriever_error", run_id, lambda key: self._tools.end_retriever(key, None, error)
        )
