"""One scripted Symfonic run exercising every event kind, shared by the contract and OTLP tests."""

from __future__ import annotations

from typing import Any

from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    FabricationDetectedEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
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
