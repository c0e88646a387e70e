"""From LangChain chain runs to agent runs: the verdicts of each start and end.

``Translator`` is what the chain callbacks call once they have a run key. The top-level run is
an agent run; a graph inside it (found when its first node starts) is a sub-agent run of its
own under it; graph nodes are optional spans (``node_spans``). At an agent run's end it decides
how the run ended (outcome, exit stop reason, answered or blank, silent bail) and hands the core
handler one event. Reading a payload can fail (an object whose attributes raise): that is logged
once per kind and the run is still ended with what is known, so no run is left for the TTL.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from langchain_core.messages import BaseMessage
from opentelemetry.context import Context
from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.core.run_end import AdapterRunEnd
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    ReactLoopEndEvent,
    TerminationReason,
)
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.langchain import errors, step_caps
from symfonic_otel.langchain.attributes import agent_name, conversation_id, is_graph_node
from symfonic_otel.langchain.base import Part, in_span
from symfonic_otel.langchain.extract import (
    UNKNOWN_OUTPUT,
    AIShape,
    FinalOutput,
    RunKey,
    final_output,
    query,
    run_id_text,
    tenant,
)
from symfonic_otel.langchain.runs import RunTree
from symfonic_otel.langchain.state import AgentRun, ChainStart, ChatCall
from symfonic_otel.logs import FailureLog
from symfonic_otel.read.content import messages_json

__all__ = ["Translator"]

_GRAPH_INTEGRATION = "langgraph"


@dataclass(frozen=True, slots=True)
class _Paused:
    """The core's InterruptEvent for a run LangGraph paused with ``interrupt()`` (no name:
    LangGraph's interrupts have none)."""

    run_id: str
    name: str = ""


def _answer_of(outputs: object) -> object:
    """What a run's answer is judged on: a state that ends on the user's own message is judged
    on its other keys when they hold something (a node wrote its structured answer there)."""
    if not isinstance(outputs, Mapping):
        return outputs
    messages = outputs.get("messages")
    if not isinstance(messages, list) or not messages:
        return outputs
    last = messages[-1]
    if not isinstance(last, BaseMessage) or last.type != "human":
        return outputs
    rest = {key: _plain(value) for key, value in outputs.items() if key != "messages"}
    return rest if final_output(rest, render=False).answered else outputs


def _plain(value: object) -> object:
    """A Pydantic answer as plain data, so it renders as JSON inside the state."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) and not isinstance(value, type) else value


def _resumed_with(inputs: object) -> object:
    """The value a ``Command(resume=...)`` input resumes with (the user's reply), else None."""
    command = _command_type()
    return getattr(inputs, "resume", None) if command and isinstance(inputs, command) else None


@cache
def _command_type() -> type | None:
    """LangGraph's ``Command``, imported on first use (plain LangChain has no LangGraph)."""
    try:
        from langgraph.types import Command
    except Exception:
        return None
    return Command


def _mid_loop(final: FinalOutput) -> bool:
    """A run stopped at a breakpoint is paused unless it had answered: LangGraph also reports
    an ``interrupt_after`` on the node that gave the final answer."""
    return not final.answered or (final.ai is not None and final.ai.tool_call_count > 0)


def _bail_reason(shape: AIShape) -> TerminationReason:
    return "tool_calls_with_no_text" if shape.tool_call_count else "no_content_no_tool_calls"


class Translator(Part):
    """Turns chain starts and ends into agent runs and node spans; see the module docstring."""

    def __init__(
        self,
        core: OTelCallbackHandler,
        tree: RunTree,
        failures: FailureLog,
        unfinished: Callable[[ChatCall], None],
        *,
        node_spans: bool = False,
    ) -> None:
        super().__init__(core, tree, failures)
        self._node_spans = node_spans
        self._unfinished = unfinished

    @staticmethod
    def is_interrupt(error: object) -> bool:
        return errors.classify(error) == "interrupt"

    # --- agent runs ---------------------------------------------------------------------------

    def start_agent(
        self,
        key: RunKey,
        inputs: object,
        metadata: Mapping[str, Any],
        name: object,
        ser: object,
        under: Span | None = None,
    ) -> None:
        agent = AgentRun(key=key, run_id=run_id_text(key), started_monotonic=time.monotonic())
        added, evicted = self._tree.open_agent(agent)
        if not added:
            return
        attributes = self._run_attributes(
            metadata, self._read("run_name", lambda n: agent_name(n, ser), name, None)
        )
        self._core.agent_start(
            AgentStartEvent(query=self._query(inputs), run_id=agent.run_id),
            tenant_id=self._read("run_metadata", tenant, metadata, None),
            parent=in_span(under),
            attributes=attributes,
        )
        agent.announced = True
        if not self._core.is_open(agent.run_id):  # refused (a redelivered start): keep nothing
            evicted.extend(self._tree.discard(agent))
        self._end_spans(evicted)
        self._prune()

    def _query(self, inputs: object) -> str:
        """The run's input as captured text (only computed with capture on)."""
        if not self._core.capture_content:
            return ""
        return self._read("query", lambda i: query(_resumed_with(i) or i), inputs, "")

    def _run_attributes(
        self, metadata: Mapping[str, Any], name: str | None
    ) -> dict[str, AttributeValue]:
        attributes: dict[str, AttributeValue] = {}
        conversation = self._read("conversation", conversation_id, metadata, None)
        if conversation is not None:
            attributes[semconv.GEN_AI_CONVERSATION_ID] = conversation
        if name is not None:
            attributes[semconv.GEN_AI_AGENT_NAME] = name
        return attributes

    def end_agent(
        self, key: RunKey, outputs: object, error: BaseException | None, inputs: object = None
    ) -> None:
        agent, leftovers, subagents, calls = self._tree.close_agent(key)
        if agent is None:
            self._end_untracked(key, error)
            return
        kind = errors.classify(error)
        for call in calls:  # recorded while their runs are still open
            self._read("unfinished_call", self._unfinished, call, None)
        self._end_spans(leftovers)  # children end before their parent
        for sub in subagents:
            self._end_lost(sub.run_id, error)

        outcome = errors.outcome(kind)
        final = UNKNOWN_OUTPUT
        if kind == "ok" and not agent.interrupted:
            final = self._read(
                "run_output",
                lambda out: final_output(_answer_of(out), render=self._core.capture_content),
                outputs,
                UNKNOWN_OUTPUT,
            )
            if agent.at_breakpoint and _mid_loop(final):
                agent.interrupted, final = True, UNKNOWN_OUTPUT
        # A budget message in place of an answer: the framework's own step cap fired.
        capped = not agent.interrupted and step_caps.capped(
            agent.last_ai, agent.closing_message, final.ai
        )
        stop = errors.STOP_RECURSION_LIMIT if capped else errors.exit_reason(kind)
        if stop is None and agent.interrupted:
            stop = errors.STOP_INTERRUPTED
        if stop is None:
            last = final.ai or agent.last_ai
            stop = last.stop_reason if last is not None else None
        if agent.parent is not None and (kind == "interrupt" or agent.interrupted):
            agent.parent.interrupted = True
        if capped and agent.parent is not None and final.ai is not None and final.ai.message_id:
            agent.parent.closing_message = final.ai.message_id  # relayed up: no answer there either
        if kind == "interrupt" or (kind == "ok" and agent.interrupted):
            # Waiting for ``Command(resume=...)``: paused, neither an answer nor a bail.
            self._core.interrupt(_Paused(agent.run_id))

        bail = final.bail
        if kind == "recursion" or capped:
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
            answered=(False if capped else final.answered) if outcome == "completed" else None,
            attributes=self._late_input(inputs),
        )

    def _late_input(self, inputs: object) -> dict[str, AttributeValue] | None:
        """A streamed run's input, known only at its end (its start saw ``{"input": ""}``)."""
        text = self._query(inputs) if inputs is not None else ""
        if not text:
            return None
        payload, truncated = messages_json("user", text)
        attributes: dict[str, AttributeValue] = {semconv.GEN_AI_INPUT_MESSAGES: payload}
        if truncated:
            attributes[semconv.CONTENT_TRUNCATED] = True
        return attributes

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
        if self._core.is_open(run_id_text(key)):
            self._end_lost(run_id_text(key), error)

    def _end_lost(self, run_id: str, error: BaseException | None) -> None:
        kind = errors.classify(error)
        error_type = errors.error_type(error, kind)
        self._core.agent_end(
            AdapterRunEnd(
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

    # --- chains inside a run: sub-graphs and graph nodes -------------------------------------

    def start_chain(
        self,
        key: RunKey,
        parent: RunKey,
        inputs: object,
        metadata: Mapping[str, Any],
        tags: object,
        name: object,
    ) -> None:
        node = is_graph_node(name, tags, metadata)
        if node and not self._tree.is_agent(parent):
            self._start_subagent(parent, metadata)  # the node's graph is nested: a sub-agent
        start: ChainStart | None = None
        if not node and metadata.get("ls_integration") == _GRAPH_INTEGRATION:
            start = ChainStart(
                time.time_ns(),
                agent_name(name, None),
                inputs if self._core.capture_content else None,
            )
        agent = self._tree.adopt(key, parent, start)
        if node and self._node_spans and agent is not None:
            self._start_node(key, str(name), agent)

    def _start_subagent(self, key: RunKey, metadata: Mapping[str, Any]) -> None:
        sub, start, under = self._tree.promote(key)
        if sub is None or start is None or sub.parent is None:
            return
        attributes = self._run_attributes(metadata, start.name)
        attributes[semconv.RUN_PARENT_ID] = sub.parent.run_id
        parent: Context | None = in_span(under) or self._core.run_context(sub.parent.run_id)
        self._core.agent_start(
            AgentStartEvent(query=self._query(start.inputs), run_id=sub.run_id),
            tenant_id=self._read("run_metadata", tenant, metadata, None),
            parent=parent,
            start_time_ns=start.started_ns,
            attributes=attributes,
        )
        sub.announced = True
        if not self._core.is_open(sub.run_id):
            self._end_spans(self._tree.discard(sub))

    def _start_node(self, key: RunKey, name: str, agent: AgentRun) -> None:
        claim = self._tree.claim_chain_span(key)
        if claim is None:
            return
        span = self._core.start_call(
            semconv.OP_INVOKE_NODE,
            f"{semconv.OP_INVOKE_NODE} {name}",
            run_id=agent.run_id,
            parent=in_span(claim.parent_span),
            attributes={semconv.NODE_NAME: name},
        )
        if not self._tree.attach_span(key, claim, span) and span is not None:
            self._core.end_call(span)

    def end_chain(
        self, key: RunKey, outputs: object, error: BaseException | None, inputs: object = None
    ) -> None:
        if self._tree.is_agent(key):
            self.end_agent(key, outputs, error, inputs)
            return
        kind = errors.classify(error)
        closing = None
        if kind == "ok":
            closing = self._read("node_output", step_caps.closing_message, outputs, None)
        span = self._tree.release(key, interrupted=kind == "interrupt", closing=closing)
        if span is not None:
            self._core.end_call(span, error_type=errors.error_type(error, kind))
