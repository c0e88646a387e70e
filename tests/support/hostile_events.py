"""Hostile but well-typed events, each one run long, shared by the in-memory and OTLP tests.

Every case is input the handler must *tolerate*: it records the run and its spans (with a sane
substitute for the bad value) and counts what was malformed, and nothing it emits breaks an
exporter. ``TIMING_CASES`` are the ones counted as ``malformed``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent

GO_ZERO_TIME = "0001-01-01T00:00:00Z"
T_VALID = "2026-11-30T12:00:00+00:00"
HUGE = 5 * 1024 * 1024  # past the 4 MiB a collector accepts in one gRPC message


@dataclass(frozen=True)
class Case:
    """One run: its id, the LLMEnd fields and ``llm_end`` keywords, and an optional tool."""

    run_id_suffix: str = ""
    llm: dict[str, Any] = field(default_factory=dict)
    llm_kwargs: dict[str, Any] = field(default_factory=dict)
    tool: str | None = None

    @property
    def spans(self) -> int:
        return 3 if self.tool is not None else 2


CASES: dict[str, Case] = {
    "go_zero_time": Case(llm={"started_at_utc": GO_ZERO_TIME, "duration_ms": 5.0}),
    "year_2600": Case(llm={"started_at_utc": "2600-01-01T00:00:00Z", "duration_ms": 5.0}),
    "year_9999": Case(llm={"started_at_utc": "9999-12-31T23:59:59", "duration_ms": 5.0}),
    "unparseable_time": Case(llm={"started_at_utc": "yesterday at noon", "duration_ms": 5.0}),
    "duration_1e14": Case(llm={"started_at_utc": T_VALID, "duration_ms": 1e14}),
    "negative_duration": Case(llm={"started_at_utc": T_VALID, "duration_ms": -5.0}),
    "nan_duration": Case(llm={"duration_ms": float("nan")}),
    "inf_duration": Case(llm={"duration_ms": float("inf")}),
    "out_of_range_ns": Case(llm_kwargs={"start_time_ns": -1, "end_time_ns": 2**64}),
    "surrogate_model": Case(llm={"model": "gpt-\ud800-4o"}),
    "nul_model": Case(llm={"model": "gpt\x00-4o"}),
    "multi_mb_model": Case(llm={"model": "m" * HUGE}),
    "surrogate_node": Case(llm={"node_name": "re\udfffact"}),
    "surrogate_run_id": Case(run_id_suffix="-\ud83d"),
    "multi_mb_run_id": Case(run_id_suffix="x" * HUGE),
    "surrogate_error_type": Case(
        llm={"outcome": "error", "error_type": "Rate\ud800LimitError"},
    ),
    "surrogate_stop_reason": Case(llm={"stop_reason": "end\udcffturn"}),
    "surrogate_output": Case(llm={"output": "half a pair \ud83d and a NUL \x00"}),
    "surrogate_tool": Case(tool="se\ud800arch\x00"),
    "multi_mb_tool": Case(tool="t" * HUGE),
}
TIMING_CASES = frozenset(
    {
        "go_zero_time",
        "year_2600",
        "year_9999",
        "unparseable_time",
        "duration_1e14",
        "negative_duration",
        "nan_duration",
        "inf_duration",
        "out_of_range_ns",
    }
)


def play(handler: Any, case: Case, run_id: str) -> str:
    """Run ``case`` under ``run_id`` plus the case's suffix; returns the id used."""
    rid = run_id + case.run_id_suffix
    handler.agent_start(AgentStartEvent(query="q", run_id=rid))
    llm: dict[str, Any] = {
        "model": "gpt-4o",
        "output": "ok",
        "usage": {"input_tokens": 10, "output_tokens": 2},
        "run_id": rid,
        "node_name": "react",
        **case.llm,
    }
    handler.llm_end(LLMEndEvent(**llm), **case.llm_kwargs)
    if case.tool is not None:
        handler.end_tool(handler.start_tool(rid, case.tool, call_id="call-\ud800"))
    handler.agent_end(AgentEndEvent(run_id=rid, final_response="ok", duration_ms=9.0, node_count=2))
    return rid


def good_run(handler: Any, run_id: str) -> None:
    play(handler, Case(llm={"started_at_utc": T_VALID, "duration_ms": 3.0}), run_id)


CaseRunner = Callable[[Any, Case, str], str]
