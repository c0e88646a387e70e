"""``LangChainCallbackHandler``: LangChain / LangGraph callbacks -> the same agent telemetry.

The adapter only *translates*: every span and metric is made by the core
``OTelCallbackHandler``, so a LangGraph agent and a Symfonic agent land on the same dashboards
and the same silent-bail alert. What the adapter adds is the knowledge the callbacks spread over
many calls:

* **which agent run a callback belongs to.** The top-level run (no ``parent_run_id``) is the
  agent run; every other run is mapped to it through ``parent_run_id`` alone. Ambient context is
  never used to parent our spans, so async tasks, streaming, ``batch`` and thread pools cannot
  cross-wire two runs.
* **how a run ended.** LangGraph control flow (``GraphInterrupt`` and the rest of the
  ``GraphBubbleUp`` family) is not an error; cancellation is ``cancelled``; a recursion-limit
  error and a final AI message without text are silent bails (``ReactLoopEndEvent``).

No span is ever attached as the current context here: a callback handler sees a start and an end
in different frames (often different tasks), so it cannot own both the attach and the detach,
which is what produces "Failed to detach context" in other instrumentations. Code that does own
both (the instrumentor's wrapper around a tool's body) asks ``tool_context`` for the tool span.

The handler sets ``run_inline = True``: under ``ainvoke`` langchain-core would otherwise hop to a
thread pool once per callback. That is safe because every callback here is short, does no I/O,
and guards shared state with a lock that is never held while calling into the OTel SDK.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Final, Literal
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, TracerProvider

from symfonic_otel.agent.flatten import content_type, flatten_content_blocks
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    ContentType,
    LLMEndEvent,
    ReactLoopEndEvent,
    TerminationOutcome,
    TerminationReason,
)
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.logs import FailureLog

__all__ = ["LangChainCallbackHandler"]

_DEFAULT_MAX_AGENT_RUNS: Final = 10_000
# Runs (chains, model calls, tool calls) tracked inside one agent run at any time. Ended runs are
# released as they end, so only a pathological fan-out reaches this; past it, new child runs are
# not tracked (their telemetry is skipped rather than memory growing).
_MAX_RUNS_PER_AGENT: Final = 10_000
# Model calls outside any agent run (a bare ``model.invoke``) waiting for their end.
_MAX_LOOSE_CALLS: Final = 10_000
# How many of the oldest agent runs are checked against the core registry per agent start.
_PRUNE_BATCH: Final = 8
_HUMAN_ROLES: Final = frozenset({"human", "user"})
_CANCELLED_TYPES: Final = (KeyboardInterrupt, asyncio.CancelledError, GeneratorExit)

ErrorKind = Literal["ok", "control_flow", "interrupt", "cancelled", "recursion", "error"]


# --- LangGraph exception classes, imported lazily --------------------------------------------


@dataclass(frozen=True)
class _GraphErrors:
    """LangGraph's control-flow and recursion exception types (empty without LangGraph)."""

    bubble_up: tuple[type[BaseException], ...]
    interrupt: tuple[type[BaseException], ...]
    recursion: tuple[type[BaseException], ...]


@cache
def _graph_errors() -> _GraphErrors:
    """Imported on first use so that plain LangChain users need no LangGraph installed."""
    try:
        from langgraph.errors import GraphBubbleUp, GraphInterrupt, GraphRecursionError
    except Exception:
        return _GraphErrors((), (), ())
    return _GraphErrors((GraphBubbleUp,), (GraphInterrupt,), (GraphRecursionError,))


def _classify(error: BaseException) -> ErrorKind:
    """By exception *type* only: message texts change between releases and languages."""
    errors = _graph_errors()
    if errors.interrupt and isinstance(error, errors.interrupt):
        return "interrupt"
    if errors.bubble_up and isinstance(error, errors.bubble_up):
        return "control_flow"
    if isinstance(error, _CANCELLED_TYPES):
        return "cancelled"
    if errors.recursion and isinstance(error, errors.recursion):
        return "recursion"
    return "error"


def _outcome(error: BaseException | None) -> TerminationOutcome:
    """Outcome of a run or call that ended with ``error`` (None: ended normally)."""
    if error is None:
        return "completed"
    kind = _classify(error)
    if kind in ("error", "recursion"):
        return "error"
    return "cancelled" if kind == "cancelled" else "completed"


def _error_type(error: BaseException) -> str:
    return type(error).__qualname__


# --- guarded extractors: read LangChain payloads, never raise --------------------------------


@dataclass(frozen=True, slots=True)
class _MessageShape:
    """What the silent-bail check needs to know about an AI message."""

    text: str
    content_type: ContentType
    tool_call_count: int


def _content_text_or_empty(content: object) -> str:
    return flatten_content_blocks(content) or ""


def _message_role(message: object) -> str:
    """``human`` / ``ai`` / ... for message objects, ``(role, text)`` tuples and role dicts."""
    if isinstance(message, tuple) and len(message) == 2:
        return str(message[0])
    if isinstance(message, Mapping):
        return str(message.get("role") or message.get("type") or "")
    role = getattr(message, "type", "")
    return role if isinstance(role, str) else ""


def _message_content(message: object) -> object:
    if isinstance(message, tuple) and len(message) == 2:
        return message[1]
    if isinstance(message, Mapping):
        return message.get("content")
    return getattr(message, "content", None)


def _message_list(value: object) -> Sequence[Any] | None:
    """The message list of a graph state / input, or of a bare message list."""
    if isinstance(value, Mapping):
        value = value.get("messages")
    if isinstance(value, list | tuple) and not (
        isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)
    ):
        return value
    return None


def _query(inputs: object) -> str:
    """The text of the last human message of a run's input ("" when there is none)."""
    if isinstance(inputs, str):
        return inputs
    messages = _message_list(inputs)
    if messages is not None:
        for message in reversed(messages):
            if isinstance(message, str):
                return message
            if _message_role(message).lower() in _HUMAN_ROLES:
                return _content_text_or_empty(_message_content(message))
        return ""
    if isinstance(inputs, Mapping):
        for key in ("input", "query", "question"):
            value = inputs.get(key)
            if isinstance(value, str):
                return value
    return ""


def _ai_shape(message: object) -> _MessageShape | None:
    """The shape of an AI message; None for anything that is not one."""
    if _message_role(message) not in ("ai", "AIMessageChunk", "assistant"):
        return None
    content = _message_content(message)
    tool_calls = (
        message.get("tool_calls")
        if isinstance(message, Mapping)
        else getattr(message, "tool_calls", None)
    )
    count = len(tool_calls) if isinstance(tool_calls, list | tuple) else 0
    return _MessageShape(_content_text_or_empty(content), content_type(content), count)


def _final_message(outputs: object) -> tuple[_MessageShape | None, str | None]:
    """(shape of the final AI message, final response text) of a top-level run's output.

    Only a message-list state (what a LangGraph ReAct agent returns) yields a shape, i.e. can be
    a silent bail; other outputs only give the response text when they have one.
    """
    messages = _message_list(outputs)
    if messages:
        shape = _ai_shape(messages[-1])
        if shape is not None:
            return shape, shape.text
        return None, _content_text_or_empty(_message_content(messages[-1]))
    if isinstance(outputs, str):
        return None, outputs
    shape = _ai_shape(outputs)
    if shape is not None:
        return None, shape.text
    if isinstance(outputs, Mapping):
        value = outputs.get("output")
        if isinstance(value, str):
            return None, value
    return None, None


def _is_blank(text: str | None) -> bool:
    return text is None or not text.strip()


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _model_name(metadata: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> str:
    """``ls_model_name`` metadata, else the invocation params' ``model`` / ``model_name``."""
    name = _str_or_none((metadata or {}).get("ls_model_name"))
    if name:
        return name
    params = kwargs.get("invocation_params")
    if isinstance(params, Mapping):
        for key in ("model", "model_name", "model_id", "deployment_name"):
            name = _str_or_none(params.get(key))
            if name:
                return name
    return ""


def _first_generation(response: object) -> object:
    generations = getattr(response, "generations", None)
    if isinstance(generations, list) and generations:
        first = generations[0]
        if isinstance(first, list) and first:
            return first[0]
    return None


def _int_usage(source: Mapping[Any, Any]) -> dict[str, int]:
    return {
        str(key): value
        for key, value in source.items()
        if isinstance(value, int) and not isinstance(value, bool)
    }


def _llm_output(response: object) -> tuple[str, _MessageShape | None, dict[str, int]]:
    """(output text, AI message shape, token usage) of an ``LLMResult``."""
    generation = _first_generation(response)
    message = getattr(generation, "message", None)
    shape = _ai_shape(message) if message is not None else None
    if shape is not None:
        text = shape.text
    else:
        raw = getattr(generation, "text", "")
        text = raw if isinstance(raw, str) else ""
    usage_metadata = getattr(message, "usage_metadata", None)
    if isinstance(usage_metadata, Mapping) and usage_metadata:
        return text, shape, _int_usage(usage_metadata)
    llm_output = getattr(response, "llm_output", None)
    if isinstance(llm_output, Mapping):
        for key in ("token_usage", "usage"):
            usage = llm_output.get(key)
            if isinstance(usage, Mapping) and usage:
                return text, shape, _int_usage(usage)
    return text, shape, {}


def _tool_name(serialized: object, kwargs: Mapping[str, Any]) -> str:
    name = _str_or_none(kwargs.get("name"))
    if name is None and isinstance(serialized, Mapping):
        name = _str_or_none(serialized.get("name"))
    return name or ""


# --- per-run state -----------------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class _AgentRun:
    """What the adapter remembers about one open top-level run."""

    key: UUID
    run_id: str
    started_monotonic: float
    members: set[UUID] = field(default_factory=set)
    tools: dict[UUID, Span] = field(default_factory=dict)
    chat_calls: int = 0
    last_ai: _MessageShape | None = None
    interrupted: bool = False
    announced: bool = False  # the core has seen its AgentStart


@dataclass(frozen=True, slots=True)
class _UntrackedEnd:
    """AgentEnd for a run the adapter lost track of: no duration (the core measures it)."""

    run_id: str
    outcome: TerminationOutcome
    final_response: str | None = None
    duration_ms: float | None = None
    node_count: int | None = None


@dataclass(slots=True, eq=False)
class _ChatCall:
    """A model call between its start and its end."""

    agent: _AgentRun | None
    started_ns: int
    model: str
    provider: str | None
    node: str
    iteration: int


class LangChainCallbackHandler(BaseCallbackHandler):
    """Add to ``config={"callbacks": [...]}`` of a LangChain runnable or LangGraph graph.

    Translates LangChain callbacks into the core handler's events: the top-level run is the
    agent run (``invoke_agent`` span), model calls are ``chat`` spans with duration and token
    metrics, tool calls are ``execute_tool`` spans, and a LangGraph ReAct agent whose final
    message has no text is counted as a silent bail. Pass ``handler=`` to share one
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
        elif tracer_provider is not None or meter_provider is not None or handler_kwargs:
            raise TypeError(
                "pass either handler= or the providers / handler options, not both: "
                "a shared handler is configured where it is built"
            )
        max_runs = handler_kwargs.get("max_open_runs", _DEFAULT_MAX_AGENT_RUNS)
        self._max_agents = max(int(max_runs), 1)
        self._core = handler
        self._lock = threading.Lock()
        self._agents: OrderedDict[UUID, _AgentRun] = OrderedDict()
        self._owner: dict[UUID, _AgentRun] = {}
        self._chats: OrderedDict[UUID, _ChatCall] = OrderedDict()
        self._failures = FailureLog()

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
            with self._lock:
                agent = self._owner.get(run_id)
                span = agent.tools.get(run_id) if agent is not None else None
            return None if span is None else trace.set_span_in_context(span)
        except Exception as exc:
            self._failures.report("langchain.tool_context", exc, run_id=run_id)
            return None

    @property
    def tracked_runs(self) -> int:
        """Agent runs the adapter holds state for (for tests and health checks)."""
        with self._lock:
            return len(self._agents)

    @property
    def tracked_calls(self) -> int:
        """Child runs and pending model calls the adapter holds state for."""
        with self._lock:
            return len(self._owner) + len(self._chats)

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
            if parent_run_id is None:
                self._start_agent(run_id, inputs, metadata)
            else:
                with self._lock:
                    self._adopt_locked(run_id, parent_run_id)
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
            if parent_run_id is None:
                self._end_agent(run_id, outputs, None)
            else:
                with self._lock:
                    self._release_locked(run_id)
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
            if parent_run_id is None:
                self._end_agent(run_id, None, error)
            else:
                interrupted = _classify(error) == "interrupt"
                with self._lock:
                    agent = self._release_locked(run_id)
                    if agent is not None and interrupted:
                        agent.interrupted = True
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
        try:
            self._start_call(run_id, parent_run_id, metadata, kwargs)
        except Exception as exc:
            self._failures.report("langchain.on_chat_model_start", exc, run_id=run_id)

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
        try:
            self._start_call(run_id, parent_run_id, metadata, kwargs)
        except Exception as exc:
            self._failures.report("langchain.on_llm_start", exc, run_id=run_id)

    def on_llm_end(
        self,
        response: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            self._end_call(run_id, response, None)
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
            self._end_call(run_id, None, error)
        except Exception as exc:
            self._failures.report("langchain.on_llm_error", exc, run_id=run_id)

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
            self._start_tool(run_id, parent_run_id, serialized, kwargs)
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
            self._end_tool(run_id, None)
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
            self._end_tool(run_id, error)
        except Exception as exc:
            self._failures.report("langchain.on_tool_error", exc, run_id=run_id)

    # --- agent runs ---------------------------------------------------------------------------

    def _start_agent(self, key: UUID, inputs: object, metadata: Mapping[str, Any] | None) -> None:
        agent = _AgentRun(key=key, run_id=str(key), started_monotonic=time.monotonic())
        with self._lock:
            if key in self._owner:
                return
            agent.members.add(key)
            self._agents[key] = agent
            self._owner[key] = agent
            overflow = self._evict_oldest_locked()
        tenant = (metadata or {}).get("tenant_id")
        self._core.agent_start(
            AgentStartEvent(query=_query(inputs), run_id=agent.run_id),
            tenant_id=tenant if isinstance(tenant, str) else None,
        )
        agent.announced = True
        self._end_spans(overflow)
        self._prune()

    def _end_agent(self, key: UUID, outputs: object, error: BaseException | None) -> None:
        with self._lock:
            agent = self._agents.pop(key, None)
            leftovers = self._forget_locked(agent) if agent is not None else []
        if agent is None:
            self._end_untracked(key, error)
            return
        self._end_spans(leftovers)  # children end before their parent

        kind: ErrorKind = "ok" if error is None else _classify(error)
        shape, final_text = _final_message(outputs) if error is None else (None, None)
        reason: TerminationReason | None = None
        outcome: TerminationOutcome = "completed"
        if kind == "recursion":
            outcome, reason, shape = "error", "tool_calls_with_no_text", agent.last_ai
        elif kind == "error":
            outcome = "error"
        elif kind == "cancelled":
            outcome = "cancelled"
        elif kind == "ok" and not agent.interrupted and shape is not None and _is_blank(shape.text):
            reason = (
                "tool_calls_with_no_text" if shape.tool_call_count else "no_content_no_tool_calls"
            )

        if reason is not None:
            self._core.react_loop_end(
                ReactLoopEndEvent(
                    run_id=agent.run_id,
                    iteration_index=max(agent.chat_calls - 1, 0),
                    content_type=shape.content_type if shape is not None else "NoneType",
                    has_tool_calls=shape is not None and shape.tool_call_count > 0,
                    tool_call_count=shape.tool_call_count if shape is not None else 0,
                    termination_reason=reason,
                )
            )
        self._core.agent_end(
            AgentEndEvent(
                run_id=agent.run_id,
                final_response=final_text or "",
                duration_ms=max(time.monotonic() - agent.started_monotonic, 0.0) * 1000.0,
                node_count=None,
                outcome=outcome,
            ),
            error_type=_error_type(error) if error is not None and outcome == "error" else None,
        )

    def _end_untracked(self, key: UUID, error: BaseException | None) -> None:
        """A top-level end without adapter state (evicted here, or the start was missed).

        If the core still has the run open, end it there rather than leaving it to the TTL.
        """
        run_id = str(key)
        if not self._core.is_open(run_id):
            return
        outcome = _outcome(error)
        self._core.agent_end(
            _UntrackedEnd(run_id=run_id, outcome=outcome),
            error_type=_error_type(error) if error is not None and outcome == "error" else None,
        )

    # --- model calls --------------------------------------------------------------------------

    def _start_call(
        self,
        key: UUID,
        parent: UUID | None,
        metadata: Mapping[str, Any] | None,
        kwargs: Mapping[str, Any],
    ) -> None:
        started_ns = time.time_ns()
        meta = metadata or {}
        model = _model_name(meta, kwargs)
        provider = _str_or_none(meta.get("ls_provider"))
        node = _str_or_none(meta.get("langgraph_node")) or ""
        with self._lock:
            agent: _AgentRun | None = None
            if parent is not None:
                agent = self._adopt_locked(key, parent)
                if agent is None:  # inside a run we do not track: not ours to report
                    return
            iteration = 0
            if agent is not None:
                iteration = agent.chat_calls
                agent.chat_calls += 1
            self._chats[key] = _ChatCall(agent, started_ns, model, provider, node, iteration)
            if agent is None and len(self._chats) > _MAX_LOOSE_CALLS:
                self._chats.popitem(last=False)

    def _end_call(self, key: UUID, response: object, error: BaseException | None) -> None:
        ended_ns = time.time_ns()
        text, shape, usage = _llm_output(response) if error is None else ("", None, {})
        with self._lock:
            call = self._chats.pop(key, None)
            if call is None:
                return
            agent = call.agent
            if agent is not None:
                self._release_locked(key)
                if shape is not None:
                    agent.last_ai = shape
        outcome = _outcome(error)
        self._core.llm_end(
            LLMEndEvent(
                model=call.model,
                output=text,
                usage=usage,
                run_id=agent.run_id if agent is not None else "",
                node_name=call.node,
                iteration_index=call.iteration,
                outcome=outcome,
            ),
            provider=call.provider,
            start_time_ns=call.started_ns,
            end_time_ns=max(ended_ns, call.started_ns),
            error_type=_error_type(error) if error is not None and outcome == "error" else None,
        )

    # --- tools --------------------------------------------------------------------------------

    def _start_tool(
        self,
        key: UUID,
        parent: UUID | None,
        serialized: object,
        kwargs: Mapping[str, Any],
    ) -> None:
        if parent is None:
            return  # a tool called outside any agent run has no run span to hang under
        with self._lock:
            agent = self._adopt_locked(key, parent)
        if agent is None:
            return
        span = self._core.start_tool(
            agent.run_id,
            _tool_name(serialized, kwargs),
            call_id=_str_or_none(kwargs.get("tool_call_id")),
        )
        if span is None:
            return
        with self._lock:
            live = self._agents.get(agent.key) is agent and key in agent.members
            if live:
                agent.tools[key] = span
        if not live:  # the run ended (or was evicted) while the span was being started
            self._core.end_tool(span)

    def _end_tool(self, key: UUID, error: BaseException | None) -> None:
        kind: ErrorKind = "ok" if error is None else _classify(error)
        with self._lock:
            agent = self._release_locked(key)
            span = agent.tools.pop(key, None) if agent is not None else None
            if agent is not None and kind == "interrupt":
                agent.interrupted = True
        if span is not None:
            failed = error is not None and kind in ("error", "recursion")
            self._core.end_tool(span, error_type=_error_type(error) if failed and error else None)

    # --- bookkeeping (``*_locked``: caller holds ``self._lock``; no OTel calls inside) --------

    def _adopt_locked(self, key: UUID, parent: UUID) -> _AgentRun | None:
        """Map ``key`` to the agent run of ``parent``; None if the parent is not tracked."""
        agent = self._owner.get(parent)
        if agent is None:
            return None
        if key not in agent.members:
            if len(agent.members) >= _MAX_RUNS_PER_AGENT:
                return None
            agent.members.add(key)
            self._owner[key] = agent
        return agent

    def _release_locked(self, key: UUID) -> _AgentRun | None:
        """Forget a child run that ended; returns its agent run (None if untracked)."""
        agent = self._owner.get(key)
        if agent is None or agent.key == key:
            return agent
        del self._owner[key]
        agent.members.discard(key)
        return agent

    def _forget_locked(self, agent: _AgentRun) -> list[Span]:
        """Drop every trace of ``agent``; returns its tool spans still open, to end outside."""
        for member in agent.members:
            if self._owner.get(member) is agent:
                del self._owner[member]
            call = self._chats.get(member)
            if call is not None and call.agent is agent:
                del self._chats[member]
        agent.members.clear()
        spans = list(agent.tools.values())
        agent.tools.clear()
        return spans

    def _evict_oldest_locked(self) -> list[Span]:
        spans: list[Span] = []
        while len(self._agents) > self._max_agents:
            _, oldest = self._agents.popitem(last=False)
            spans.extend(self._forget_locked(oldest))
        return spans

    def _prune(self) -> None:
        """Drop state of the oldest runs the core no longer has open (TTL or cap eviction).

        The core evicts oldest-first, so checking from the oldest end and stopping at the first
        run still open is enough; only a few are checked per start to keep starts cheap.
        """
        with self._lock:
            candidates: list[_AgentRun] = []
            for agent in self._agents.values():
                if not agent.announced or len(candidates) >= _PRUNE_BATCH:
                    break
                candidates.append(agent)
        stale: list[_AgentRun] = []
        for agent in candidates:
            if self._core.is_open(agent.run_id):
                break
            stale.append(agent)
        if not stale:
            return
        spans: list[Span] = []
        with self._lock:
            for agent in stale:
                if self._agents.get(agent.key) is agent:
                    del self._agents[agent.key]
                    spans.extend(self._forget_locked(agent))
        self._end_spans(spans)

    def _end_spans(self, spans: Iterable[Span]) -> None:
        for span in spans:
            self._core.end_tool(span)
