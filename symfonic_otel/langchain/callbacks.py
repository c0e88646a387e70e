"""``LangChainCallbackHandler``: LangChain / LangGraph callbacks -> the same agent telemetry.

The adapter only *translates*: every span and metric is made by the core
``OTelCallbackHandler``, so a LangGraph agent and a Symfonic agent land on the same dashboards
and the same silent-bail alert. What the adapter adds is the knowledge the callbacks spread over
many calls: which agent run a callback belongs to (``runs``), what a payload says (``extract``)
and how a run ended (``errors``, and the verdict on its output).

No span is ever attached as the current context here: a callback handler sees a start and an end
in different frames (often different tasks), so it cannot own both the attach and the detach,
which is what produces "Failed to detach context" in other instrumentations. Code that does own
both (the instrumentor's wrapper around a tool's body) asks ``tool_context`` for the tool span.

The handler sets ``run_inline = True``: under ``ainvoke`` langchain-core would otherwise hop to a
thread pool once per callback. That is safe because every callback here is short, does no I/O,
and guards shared state with a lock that is never held while calling into the OTel SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from opentelemetry import context, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import TracerProvider

from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.langchain.extract import run_key
from symfonic_otel.langchain.runs import RunTree
from symfonic_otel.langchain.translate import Translator
from symfonic_otel.logs import FailureLog

__all__ = ["LangChainCallbackHandler"]

_DEFAULT_MAX_AGENT_RUNS: Final = 10_000


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


class LangChainCallbackHandler(BaseCallbackHandler):
    """Add to ``config={"callbacks": [...]}`` of a LangChain runnable or LangGraph graph.

    Translates LangChain callbacks into the core handler's events: the top-level run is the
    agent run (``invoke_agent`` span), model calls are ``chat`` spans with duration and token
    metrics, tool calls are ``execute_tool`` spans, and a LangGraph ReAct agent whose final
    message has no text is counted as a silent bail. Attached to a model or a tool instead (its
    ``callbacks=``), or called without a graph, its calls are recorded as standalone ``chat`` /
    ``execute_tool`` spans under the caller's current span. Pass ``handler=`` to share one
    ``OTelCallbackHandler`` (and its open-run registry) with other agents; otherwise one is built
    from the providers and ``handler_kwargs`` (``agent_name``, ``tenant_id``, ...).
    """

    run_inline: bool = True
    raise_error: bool = False

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        handler: OTelCallbackHandler | None = None,
        **handler_kwargs: Any,
    ) -> None:
        super().__init__()
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
        max_runs = handler_kwargs.get("max_open_runs", _DEFAULT_MAX_AGENT_RUNS)
        self._core = handler
        self._failures = FailureLog()
        self._tree = RunTree(int(max_runs))
        self._translate = Translator(handler, self._tree, self._failures)

    @property
    def handler(self) -> OTelCallbackHandler:
        """The core handler doing the telemetry (share it, or close its runs at shutdown)."""
        return self._core

    def tool_context(self, run_id: UUID) -> Context | None:
        """A context with the open ``execute_tool`` span of tool run ``run_id`` as current.

        For code that owns both the attach and the detach around the tool's body (the
        instrumentor's tool wrapper), so client spans made inside the tool nest under it.
        """
        try:
            key = run_key(run_id)
            span = self._tree.tool_span(key) if key is not None else None
            return None if span is None else trace.set_span_in_context(span)
        except Exception as exc:
            self._failures.report("langchain.tool_context", exc)
            return None

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

    # --- chains: the top-level one is the agent run -------------------------------------------

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
        try:
            key = run_key(run_id)
            if key is None:
                return
            parent = run_key(parent_run_id)
            if parent is None:
                self._translate.start_agent(key, inputs, _mapping(metadata))
            else:
                self._tree.adopt(key, parent)
        except Exception as exc:
            self._failures.report("langchain.on_chain_start", exc, run_id=run_id)

    def on_chain_end(
        self,
        outputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            key = run_key(run_id)
            if key is None:
                return
            if parent_run_id is None:
                self._translate.end_agent(key, outputs, None)
            else:
                self._tree.release(key)
        except Exception as exc:
            self._failures.report("langchain.on_chain_end", exc, run_id=run_id)

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            key = run_key(run_id)
            if key is None:
                return
            if parent_run_id is None:
                self._translate.end_agent(key, None, error)
            else:
                self._tree.release(key, interrupted=self._translate.is_interrupt(error))
        except Exception as exc:
            self._failures.report("langchain.on_chain_error", exc, run_id=run_id)

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
        self._start_call("langchain.on_chat_model_start", run_id, parent_run_id, metadata, kwargs)

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
        self._start_call("langchain.on_llm_start", run_id, parent_run_id, metadata, kwargs)

    def on_llm_end(
        self,
        response: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            key = run_key(run_id)
            if key is not None:
                self._translate.end_call(key, response, None)
        except Exception as exc:
            self._failures.report("langchain.on_llm_end", exc, run_id=run_id)

    def on_llm_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            key = run_key(run_id)
            if key is not None:
                self._translate.end_call(key, None, error)
        except Exception as exc:
            self._failures.report("langchain.on_llm_error", exc, run_id=run_id)

    def _start_call(
        self,
        kind: str,
        run_id: object,
        parent_run_id: object,
        metadata: object,
        kwargs: Mapping[str, Any],
    ) -> None:
        try:
            key = run_key(run_id)
            if key is not None:
                self._translate.start_call(
                    key, run_key(parent_run_id), _mapping(metadata), kwargs, context.get_current()
                )
        except Exception as exc:
            self._failures.report(kind, exc, run_id=run_id)

    # --- tools --------------------------------------------------------------------------------

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
        try:
            key = run_key(run_id)
            if key is None:
                return
            self._translate.start_tool(
                key,
                run_key(parent_run_id),
                serialized,
                kwargs,
                _mapping(metadata),
                context.get_current(),
            )
        except Exception as exc:
            self._failures.report("langchain.on_tool_start", exc, run_id=run_id)

    def on_tool_end(
        self,
        output: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            key = run_key(run_id)
            if key is not None:
                self._translate.end_tool(key, None)
        except Exception as exc:
            self._failures.report("langchain.on_tool_end", exc, run_id=run_id)

    def on_tool_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            key = run_key(run_id)
            if key is not None:
                self._translate.end_tool(key, error)
        except Exception as exc:
            self._failures.report("langchain.on_tool_error", exc, run_id=run_id)
