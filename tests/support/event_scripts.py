"""Scripted Symfonic runs: one exercising every event kind with this package's dataclasses (the
contract and OTLP tests), and the shapes of real agents built from Symfonic's own event shapes."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

from opentelemetry import context as otel_context

from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    FabricationDetectedEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
)
from tests.support.symfonic_events import (
    AgentEnd,
    AgentStart,
    AskUserQuestion,
    Interrupt,
    LLMEnd,
    LLMPreCall,
    LLMStart,
    NodeEnd,
    NodeError,
    NodeStart,
    ReactLoopEnd,
    TextDelta,
    ToolCallStart,
    ToolResult,
)

T0 = "2026-11-30T12:00:00.000000+00:00"
T0_NS = 1_796_040_000 * 1_000_000_000
T1 = "2026-11-30T12:00:01.500000"  # no zone: UTC
T1_NS = T0_NS + 1_500_000_000
ANSWER = "Refunds are accepted within 30 days."
RUN_DURATION_MS = 1500.0


def bail_with_synthesis(run_id: str, query: str) -> list[tuple[str, Any]]:
    """A silent bail recovered by synthesis, with a fabrication observation, as (method, event)."""
    return [
        ("on_agent_start", AgentStartEvent(query=query, run_id=run_id)),
        (
            "on_llm_end",
            LLMEndEvent(
                model="gpt-4o",
                output="",
                usage={"input_tokens": 1200, "output_tokens": 30},
                run_id=run_id,
                node_name="react",
                duration_ms=800.0,
                started_at_utc=T0,
                iteration_index=0,
            ),
        ),
        (
            "on_react_loop_end",
            ReactLoopEndEvent(
                run_id=run_id,
                iteration_index=0,
                content_type="list",
                has_tool_calls=True,
                tool_call_count=2,
                termination_reason="tool_calls_with_no_text",
            ),
        ),
        (
            "on_llm_end",
            LLMEndEvent(
                model="gpt-4o",
                output=ANSWER,
                usage={"prompt_tokens": 1000, "completion_tokens": 20},
                run_id=run_id,
                node_name="react_synthesize_fallback",
                duration_ms=250.0,
                started_at_utc=T1,
                iteration_index=1,
            ),
        ),
        (
            "on_fabrication_detected",
            FabricationDetectedEvent(
                run_id=run_id,
                mode="observe",
                action_taken="observed",
                findings=[{"kind": "unsupported_url", "claim": "see https://x.example"}],
                refuse_threshold=0.8,
                max_finding_confidence=0.65,
                original_draft_preview=ANSWER,
                replacement_preview=None,
                preview_truncated=False,
            ),
        ),
        (
            "on_agent_end",
            AgentEndEvent(
                run_id=run_id, final_response=ANSWER, duration_ms=RUN_DURATION_MS, node_count=4
            ),
        ),
    ]


async def replay(handler: Any, events: list[tuple[str, Any]]) -> None:
    for method, event in events:
        await getattr(handler, method)(event)


# --- agent shapes: the event sequences a Symfonic agent emits -----------------------------------

Script = list[tuple[str, Any]]
MODEL = "gpt-4o"
PAUSE_TOKEN = "eyJhbGciOiJIUzI1NiJ9.secret-pause-token.sig"
SECRET_QUERY = "balance of account 4242"
SECRET_RESULT = "account 4242 holds 1,000,000"
TOOL_DEFINITIONS = [
    {"name": "search", "description": "Search the ledger.", "schema": {"type": "object"}},
    {"name": "weather", "description": "Weather by city.", "schema": {"type": "object"}},
]


def stamp(base: datetime, offset_ms: float) -> str:
    """``started_at_utc`` as Symfonic's ``llm_timing`` writes it: UTC ISO-8601."""
    return (base + timedelta(milliseconds=offset_ms)).isoformat()


def _model_call(
    run_id: str,
    iteration: int,
    output: str,
    started: str,
    *,
    node: str = "react",
    nodes: bool = True,
    usage: tuple[int, int] = (900, 40),
) -> Script:
    """One loop model call as the react node emits it: node, LLMStart, LLMPreCall, LLMEnd."""
    messages = [{"role": "user", "content": SECRET_QUERY}]
    calls: Script = [
        ("on_llm_start", LLMStart(MODEL, list(messages), run_id, "Be brief.", node)),
        (
            "on_llm_pre_call",
            LLMPreCall(MODEL, messages, TOOL_DEFINITIONS, run_id, {"temperature": 0.2}, node),
        ),
        (
            "on_llm_end",
            LLMEnd(
                model=MODEL,
                output=output,
                usage={"input_tokens": usage[0], "output_tokens": usage[1]},
                run_id=run_id,
                node_name=node,
                duration_ms=200.0,
                started_at_utc=started,
                iteration_index=iteration,
            ),
        ),
    ]
    if not nodes:
        return calls
    return [
        ("on_node_start", NodeStart(node, run_id)),
        *calls,
        ("on_node_end", NodeEnd(node, run_id, 200.0)),
    ]


def react_parallel_tools(run_id: str, base: datetime, *, failing: str | None = None) -> Script:
    """Two iterations; the first makes two tool calls that run in parallel (both start before
    either returns; they return in reverse order). ``failing`` names a tool whose result is an
    error the model reads and recovers from."""
    return [
        ("on_agent_start", AgentStart(SECRET_QUERY, run_id)),
        # The streamed generation announces the calls under the model's ids...
        (
            "on_tool_call_start",
            ToolCallStart(tool_call_id="call_A", tool_name="search", phase="announced"),
        ),
        (
            "on_tool_call_start",
            ToolCallStart(tool_call_id="call_B", tool_name="weather", phase="announced"),
        ),
        *_model_call(run_id, 0, "", stamp(base, 0)),
        # ... and the runtime executes them under its run ids.
        ("on_node_start", NodeStart("tools", run_id)),
        (
            "on_tool_call_start",
            ToolCallStart(tool_call_id="run-A", tool_name="search", arguments={"q": SECRET_QUERY}),
        ),
        (
            "on_tool_call_start",
            ToolCallStart(tool_call_id="run-B", tool_name="weather", arguments={"city": "Oslo"}),
        ),
        (
            "on_tool_result",
            ToolResult(
                tool_call_id="run-B",
                tool_name="weather",
                result="4C",
                is_error=failing == "weather",
            ),
        ),
        (
            "on_tool_result",
            ToolResult(
                tool_call_id="run-A",
                tool_name="search",
                result=SECRET_RESULT,
                is_error=failing == "search",
            ),
        ),
        ("on_node_end", NodeEnd("tools", run_id, 30.0)),
        *_model_call(run_id, 1, ANSWER, stamp(base, 400)),
        ("on_agent_end", AgentEnd(run_id, ANSWER, RUN_DURATION_MS, 3)),
    ]


def tool_raises(run_id: str, base: datetime) -> Script:
    """A tool that raises out of the tools node: NodeError, and the run ends in error."""
    return [
        ("on_agent_start", AgentStart(SECRET_QUERY, run_id)),
        *_model_call(run_id, 0, "", stamp(base, 0)),
        ("on_node_start", NodeStart("tools", run_id)),
        (
            "on_tool_call_start",
            ToolCallStart(tool_call_id="run-A", tool_name="search", arguments={"q": SECRET_QUERY}),
        ),
        (
            "on_node_error",
            NodeError("tools", run_id, f"no such account: {SECRET_QUERY}", "KeyError"),
        ),
        ("on_agent_end", AgentEnd(run_id, None, RUN_DURATION_MS, 2, "error")),
    ]


def silent_bail_then_synthesis(run_id: str, base: datetime, *, recovered: bool) -> Script:
    """The loop ends on a tool-call turn without text; the post-graph synthesis call (no graph
    node of its own) recovers an answer, or returns nothing either."""
    answer = ANSWER if recovered else ""
    return [
        ("on_agent_start", AgentStart(SECRET_QUERY, run_id)),
        *_model_call(run_id, 0, "", stamp(base, 0)),
        (
            "on_react_loop_end",
            ReactLoopEnd(run_id, 0, "list", True, 1, "tool_calls_with_no_text"),
        ),
        *_model_call(
            run_id, 0, answer, stamp(base, 300), node="react_synthesize_fallback", nodes=False
        ),
        ("on_agent_end", AgentEnd(run_id, answer, RUN_DURATION_MS, 1)),
    ]


def ask_user_then_resume(first: str, second: str, base: datetime) -> Script:
    """The model calls ``ask_user``: the graph pauses (the tool never returns in this run), the
    run ends; the user's answer resumes the conversation as a new run, which re-enters the paused
    tools node (the tool now returns the answer) and whose model call's ``iteration_index``
    counts the conversation's earlier AI message."""
    return [
        ("on_agent_start", AgentStart(SECRET_QUERY, first)),
        *_model_call(first, 0, "", stamp(base, 0)),
        ("on_node_start", NodeStart("tools", first)),
        (
            "on_tool_call_start",
            ToolCallStart(
                tool_call_id="run-Q", tool_name="ask_user", arguments={"question": "Which account?"}
            ),
        ),
        (
            "on_ask_user_question",
            AskUserQuestion(question="Which account, 4242?", pause_token=PAUSE_TOKEN),
        ),
        ("on_agent_end", AgentEnd(first, None, 250.0, 2)),
        ("on_agent_start", AgentStart("the savings one", second)),
        ("on_node_start", NodeStart("tools", second)),
        (
            "on_tool_call_start",
            ToolCallStart(tool_call_id="run-Q2", tool_name="ask_user", arguments={"question": "?"}),
        ),
        (
            "on_tool_result",
            ToolResult(tool_call_id="run-Q2", tool_name="ask_user", result="savings"),
        ),
        ("on_node_end", NodeEnd("tools", second, 5.0)),
        *_model_call(second, 1, ANSWER, stamp(base, 5000)),
        ("on_agent_end", AgentEnd(second, ANSWER, 300.0, 1)),
    ]


def interrupted(run_id: str, base: datetime) -> Script:
    """A registered interrupt fires inside a tool: the run pauses with an empty answer."""
    return [
        ("on_agent_start", AgentStart(SECRET_QUERY, run_id)),
        *_model_call(run_id, 0, "", stamp(base, 0)),
        (
            "on_tool_call_start",
            ToolCallStart(tool_call_id="run-T", tool_name="transfer", arguments={"to": "4242"}),
        ),
        (
            "on_interrupt",
            Interrupt(
                name="approval_required",
                pause_token=PAUSE_TOKEN,
                payload='{"amount": 4242}',
                expires_at=base + timedelta(hours=1),
                interrupt_id="i-0123456789ab",
            ),
        ),
        ("on_react_loop_end", ReactLoopEnd(run_id, 0, "list", True, 1, "tool_calls_with_no_text")),
        ("on_agent_end", AgentEnd(run_id, "", 250.0, 2)),
    ]


def streamed(run_id: str) -> Script:
    """The streaming path: text deltas of the call (naming no run), no timing on LLMEnd, and an
    AgentEnd without final state (``final_response`` and ``node_count`` None)."""
    return [
        ("on_agent_start", AgentStart(SECRET_QUERY, run_id)),
        ("on_llm_start", LLMStart(MODEL, [], run_id, "", "react")),
        ("sleep", 0.02),
        ("on_text_delta", TextDelta(text="Refunds are ")),
        ("sleep", 0.02),
        ("on_text_delta", TextDelta(text="accepted.")),
        (
            "on_llm_end",
            LLMEnd(
                MODEL,
                "Refunds are accepted.",
                {"input_tokens": 10, "output_tokens": 4},
                run_id,
                "react",
            ),
        ),
        ("on_agent_end", AgentEnd(run_id, None, 45.0, None)),
    ]


def nested(parent: str, child: str, base: datetime) -> Script:
    """A tool of the parent runs a sub-agent. The contract's AgentStart names no parent: the
    sub-agent's run goes under whatever context is current, here the parent run's (as an app
    does with ``run_context``). While both are open, step events that name no run belong to
    neither: they cannot be attributed, and are counted."""
    return [
        ("on_agent_start", AgentStart(SECRET_QUERY, parent)),
        *_model_call(parent, 0, "", stamp(base, 0)),
        ("on_tool_call_start", ToolCallStart(tool_call_id="run-D", tool_name="delegate")),
        ("attach", parent),
        ("on_agent_start", AgentStart("sub question", child)),
        *_model_call(child, 0, "sub answer", stamp(base, 100)),
        ("on_tool_call_start", ToolCallStart(tool_call_id="run-S", tool_name="lookup")),
        ("on_tool_result", ToolResult(tool_call_id="run-S", tool_name="lookup", result="x")),
        ("on_agent_end", AgentEnd(child, "sub answer", 200.0, 1)),
        ("detach", None),
        (
            "on_tool_result",
            ToolResult(tool_call_id="run-D", tool_name="delegate", result="sub answer"),
        ),
        *_model_call(parent, 1, ANSWER, stamp(base, 400)),
        ("on_agent_end", AgentEnd(parent, ANSWER, RUN_DURATION_MS, 3)),
    ]


def disordered(run_id: str, other: str, base: datetime) -> Script:
    """Events out of order, redelivered, and of a run the handler never saw."""
    late = LLMEnd(
        MODEL, "late", {}, run_id, "react", duration_ms=5.0, started_at_utc=stamp(base, 0)
    )
    return [
        ("on_llm_end", late),  # before its run's start: a root span, the run unknown
        ("on_agent_start", AgentStart(SECRET_QUERY, run_id)),
        ("on_agent_start", AgentStart(SECRET_QUERY, run_id)),  # redelivered
        ("on_tool_result", ToolResult(tool_call_id="run-A", tool_name="search")),  # before start
        ("on_tool_call_start", ToolCallStart(tool_call_id="run-A", tool_name="search")),
        ("on_tool_result", ToolResult(tool_call_id="run-A", tool_name="search", result="r")),
        ("on_tool_result", ToolResult(tool_call_id="run-A", tool_name="search", result="r")),
        ("on_llm_end", LLMEnd(MODEL, "x", {}, other, "react", duration_ms=5.0)),
        ("on_node_end", NodeEnd("react", other, 5.0)),
        (
            "on_react_loop_end",
            ReactLoopEnd(other, 0, "NoneType", False, 0, "no_content_no_tool_calls"),
        ),
        *_model_call(run_id, 0, ANSWER, stamp(base, 100), nodes=False),
        ("on_agent_end", AgentEnd(run_id, ANSWER, RUN_DURATION_MS, 1)),
        ("on_agent_end", AgentEnd(run_id, ANSWER, RUN_DURATION_MS, 1)),  # redelivered
        ("on_agent_start", AgentStart(SECRET_QUERY, run_id)),  # redelivered after the end
        ("on_tool_result", ToolResult(tool_call_id="run-A", tool_name="search")),  # no run open
        ("on_llm_end", late),  # after the end
    ]


async def play(handler: Any, steps: Script) -> None:
    """``replay`` plus two directions: ``("sleep", s)`` and ``("attach", run_id)`` /
    ``("detach", None)``, which make a run's context current (a sub-agent started inside)."""
    tokens: list[object] = []
    for method, event in steps:
        if method == "sleep":
            time.sleep(event)
        elif method == "attach":
            tokens.append(otel_context.attach(handler.run_context(event)))
        elif method == "detach":
            otel_context.detach(tokens.pop())  # type: ignore[arg-type]
        else:
            await getattr(handler, method)(event)
