"""From LangChain runs to the core handler's events: the verdicts of each start and end.

``Translator`` is what the callback entry points call once they have a run key. It asks the run
tree where a run belongs, reads payloads through ``extract``, decides how a run ended (outcome,
exit stop reason, answered or blank, silent bail) and hands the core handler one event per run
or call. Reading a payload can fail (an object whose attributes raise): that is logged once per
kind and the run is still ended with what is known, so no run is left open for the TTL to find.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span

from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
    TerminationOutcome,
    TerminationReason,
)
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.langchain import errors
from symfonic_otel.langchain.extract import (
    EMPTY_LLM_OUTPUT,
    NO_CALL_FIELDS,
    UNKNOWN_OUTPUT,
    AIShape,
    LLMOutput,
    RunKey,
    call_fields,
    final_output,
    llm_output,
    query,
    tenant,
    tool_call_id,
    tool_name,
)
from symfonic_otel.langchain.runs import AgentRun, ChatCall, RunTree
from symfonic_otel.logs import FailureLog

__all__ = ["Translator"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _UntrackedEnd:
    """AgentEnd for a run the adapter lost track of: no duration (the core measures it)."""

    run_id: str
    outcome: TerminationOutcome
    final_response: str | None = None
    duration_ms: float | None = None
    node_count: int | None = None
    stop_reason: str | None = None
    error_type: str | None = None


def _bail_reason(shape: AIShape) -> TerminationReason:
    return "tool_calls_with_no_text" if shape.tool_call_count else "no_content_no_tool_calls"


class Translator:
    """Turns run starts and ends into core events; see the module docstring."""

    def __init__(self, core: OTelCallbackHandler, tree: RunTree, failures: FailureLog) -> None:
        self._core = core
        self._tree = tree
        self._failures = failures

    @staticmethod
    def is_interrupt(error: object) -> bool:
        return errors.classify(error) == "interrupt"

    # --- agent runs ---------------------------------------------------------------------------

    def start_agent(self, key: RunKey, inputs: object, metadata: Mapping[str, Any]) -> None:
        agent = AgentRun(key=key, run_id=str(key), started_monotonic=time.monotonic())
        added, evicted = self._tree.open_agent(agent)
        if not added:
            return
        self._core.agent_start(
            AgentStartEvent(query=self._read("query", query, inputs, ""), run_id=agent.run_id),
            tenant_id=self._read("run_metadata", tenant, metadata, None),
        )
        agent.announced = True
        if not self._core.is_open(agent.run_id):  # refused (a redelivered start): keep nothing
            evicted.extend(self._tree.discard(agent))
        self._end_spans(evicted)
        self._prune()

    def end_agent(self, key: RunKey, outputs: object, error: BaseException | None) -> None:
        agent, leftovers = self._tree.close_agent(key)
        if agent is None:
            self._end_untracked(key, error)
            return
        self._end_spans(leftovers)  # children end before their parent

        kind = errors.classify(error)
        outcome = errors.outcome(kind)
        final = UNKNOWN_OUTPUT
        if kind == "ok" and not agent.interrupted:
            final = self._read(
                "run_output",
                lambda out: final_output(out, render=self._core.capture_content),
                outputs,
                UNKNOWN_OUTPUT,
            )
        stop = errors.exit_reason(kind)
        if stop is None and agent.interrupted:
            stop = errors.STOP_INTERRUPTED
        if stop is None:
            last = final.ai or agent.last_ai
            stop = last.stop_reason if last is not None else None

        bail = final.bail
        if kind == "recursion":
            self._report_bail(agent, agent.last_ai, "tool_calls_with_no_text")
        elif bail is not None:
            self._report_bail(agent, bail, _bail_reason(bail))

        error_type = errors.error_type(error, kind)
        self._core.agent_end(
            AgentEndEvent(
                run_id=agent.run_id,
                final_response=final.text,
                duration_ms=max(time.monotonic() - agent.started_monotonic, 0.0) * 1000.0,
                node_count=None,
                outcome=outcome,
                stop_reason=stop,
                error_type=error_type,
            ),
            error_type=error_type,
            answered=final.answered if outcome == "completed" else None,
        )

    def _report_bail(
        self, agent: AgentRun, shape: AIShape | None, reason: TerminationReason
    ) -> None:
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

    def _end_untracked(self, key: RunKey, error: BaseException | None) -> None:
        """A top-level end without adapter state (evicted here, or the start was missed).

        If the core still has the run open, end it there rather than leaving it to the TTL.
        """
        run_id = str(key)
        if not self._core.is_open(run_id):
            return
        kind = errors.classify(error)
        error_type = errors.error_type(error, kind)
        self._core.agent_end(
            _UntrackedEnd(
                run_id=run_id,
                outcome=errors.outcome(kind),
                stop_reason=errors.exit_reason(kind),
                error_type=error_type,
            ),
            error_type=error_type,
        )

    def _prune(self) -> None:
        """Drop state of the oldest runs the core no longer has open (TTL or cap eviction).

        The core evicts oldest-first, so checking from the oldest end and stopping at the first
        run still open is enough; only a few are checked per start to keep starts cheap.
        """
        spans: list[Span] = []
        for agent in self._tree.prune_candidates():
            if self._core.is_open(agent.run_id):
                break
            spans.extend(self._tree.discard(agent))
        self._end_spans(spans)

    # --- model calls --------------------------------------------------------------------------

    def start_call(
        self,
        key: RunKey,
        parent: RunKey | None,
        metadata: Mapping[str, Any],
        kwargs: Mapping[str, Any],
        current: Context,
    ) -> None:
        started_ns = time.time_ns()
        fields = self._read(
            "call_metadata", lambda meta: call_fields(meta, kwargs), metadata, NO_CALL_FIELDS
        )
        call = ChatCall(
            agent=None,
            started_ns=started_ns,
            model=fields.model,
            provider=fields.provider,
            node=fields.node,
            iteration=0,
            tenant=fields.tenant,
            parent=current,
        )
        self._tree.start_call(key, parent, call)

    def end_call(self, key: RunKey, response: object, error: BaseException | None) -> None:
        ended_ns = time.time_ns()
        kind = errors.classify(error)
        output: LLMOutput = EMPTY_LLM_OUTPUT
        if kind == "ok":
            output = self._read("llm_output", llm_output, response, EMPTY_LLM_OUTPUT)
        call = self._tree.end_call(key, output.shape)
        if call is None:
            return
        agent = call.agent
        error_type = errors.error_type(error, kind)
        parent: Context | None = None
        if agent is None:  # standalone: under the caller's span (or its standalone tool)
            span = call.parent_span
            parent = trace.set_span_in_context(span) if span is not None else call.parent
        self._core.llm_end(
            LLMEndEvent(
                model=call.model,
                output=output.text,
                usage=output.usage,
                run_id=agent.run_id if agent is not None else "",
                node_name=call.node,
                iteration_index=call.iteration,
                outcome=errors.outcome(kind),
                stop_reason=output.stop_reason,
                error_type=error_type,
            ),
            provider=call.provider,
            start_time_ns=call.started_ns,
            end_time_ns=max(ended_ns, call.started_ns),
            error_type=error_type,
            tenant_id=call.tenant,
            parent=parent,
        )

    # --- tools --------------------------------------------------------------------------------

    def start_tool(
        self,
        key: RunKey,
        parent: RunKey | None,
        serialized: object,
        kwargs: Mapping[str, Any],
        metadata: Mapping[str, Any],
        current: Context,
    ) -> None:
        claim = self._tree.claim_tool(key, parent)
        if claim is None:  # a duplicate start, or a run at its child cap
            return
        name = self._read("tool_name", lambda ser: tool_name(ser, kwargs), serialized, "")
        call_id = self._read("tool_call_id", tool_call_id, kwargs, None)
        span: Span | None
        if claim.agent is not None:
            span = self._core.start_tool(claim.agent.run_id, name, call_id=call_id)
        else:
            under = claim.parent_span
            span = self._core.start_tool(
                "",
                name,
                call_id=call_id,
                tenant_id=self._read("tool_metadata", tenant, metadata, None),
                parent=trace.set_span_in_context(under) if under is not None else current,
            )
        if not self._tree.attach_tool(key, claim, span) and span is not None:
            self._core.end_tool(span)  # the run ended (or was evicted) meanwhile
        if claim.agent is None:
            self._end_spans(self._tree.evict_loose_tools())

    def end_tool(self, key: RunKey, error: BaseException | None) -> None:
        kind = errors.classify(error)
        span = self._tree.end_tool(key, interrupted=kind == "interrupt")
        if span is not None:
            self._core.end_tool(span, error_type=errors.error_type(error, kind))

    # --- helpers ------------------------------------------------------------------------------

    def _read(self, what: str, read: Callable[[Any], T], payload: object, default: T) -> T:
        """``read(payload)``, or ``default`` when the payload cannot be read (logged once)."""
        try:
            return read(payload)
        except Exception as exc:
            self._failures.report(f"langchain.read_{what}", exc)
            return default

    def _end_spans(self, spans: Iterable[Span]) -> None:
        for span in spans:
            self._core.end_tool(span)
