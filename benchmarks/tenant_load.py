"""Many tenants' agent runs, played through the real handler's Symfonic events.

The workload shape is the demo's: two models, two or three model calls and one or two tool calls
per run, about one run in ten a silent bail (the model still calling tools when the loop ends).
Every run goes through ``OTelCallbackHandler``'s public entry points, so the series it leaves are
the ones a production process leaves, whatever label sets the handler uses.

    handler = tenant_handler(sdk.tracer_provider, sdk.meter_provider, max_tenants=10_000)
    play_tenants(handler, tenant_ids(1_000))        # one run per tenant
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence
from typing import Any, Final

from symfonic_otel import OTelCallbackHandler
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
)

MODELS: Final = ("gpt-4o-mini", "claude-sonnet-4-5")
TOOLS: Final = ("lookup_order", "search_docs")
BAIL_EVERY: Final = 10  # one run in ten is a silent bail
_STARTED_AT: Final = "2026-06-01T12:00:00.000000+00:00"
_ids = itertools.count()


def tenant_ids(count: int, prefix: str = "tenant") -> list[str]:
    """``count`` distinct tenant ids (``tenant-00000`` ...)."""
    return [f"{prefix}-{index:05d}" for index in range(count)]


def tenant_handler(tracer_provider: Any, meter_provider: Any, *, max_tenants: int) -> Any:
    """The handler through its public constructor, content capture off, ``max_tenants`` given."""
    return OTelCallbackHandler(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        capture_content=False,
        max_tenants=max_tenants,
    )


def play_run(handler: Any, tenant: str, rng: random.Random) -> None:
    """One agent run of ``tenant``: 2-3 model calls, 1-2 tool calls, sometimes a silent bail."""
    run_id = f"run-{next(_ids)}"
    bail = rng.randrange(BAIL_EVERY) == 0
    handler.agent_start(
        AgentStartEvent(query="Where is my order?", run_id=run_id), tenant_id=tenant
    )
    calls = rng.choice((2, 3))
    tools = rng.choice((1, 2))
    for index in range(calls):
        last = index == calls - 1
        handler.llm_end(
            LLMEndEvent(
                model=MODELS[rng.randrange(len(MODELS))],
                output="" if (bail or not last) else "Shipped on Monday.",
                usage={"input_tokens": rng.randint(200, 900), "output_tokens": rng.randint(8, 90)},
                run_id=run_id,
                node_name="react",
                duration_ms=rng.uniform(150.0, 900.0),
                started_at_utc=_STARTED_AT,
                iteration_index=index,
            )
        )
        if index < tools:
            call_id = f"{run_id}-tool-{index}"
            name = TOOLS[index % len(TOOLS)]
            handler.tool_call_start(
                ToolCallStartEvent(tool_call_id=call_id, tool_name=name, run_id=run_id)
            )
            handler.tool_result(
                ToolResultEvent(tool_call_id=call_id, tool_name=name, result="ok", run_id=run_id)
            )
    if bail:
        handler.react_loop_end(
            ReactLoopEndEvent(
                run_id=run_id,
                iteration_index=calls - 1,
                content_type="str",
                has_tool_calls=True,
                tool_call_count=1,
                termination_reason="tool_calls_with_no_text",
            )
        )
    handler.agent_end(
        AgentEndEvent(
            run_id=run_id,
            final_response="" if bail else "Shipped on Monday.",
            duration_ms=rng.uniform(400.0, 2500.0),
            node_count=calls + tools,
        )
    )


def play_tenants(handler: Any, tenants: Iterable[str], *, runs_each: int = 1, seed: int = 1) -> int:
    """``runs_each`` runs for every tenant; returns the number of runs played."""
    rng = random.Random(seed)
    played = 0
    for tenant in tenants:
        for _ in range(runs_each):
            play_run(handler, tenant, rng)
            played += 1
    return played


def active_share(tenants: Sequence[str], share: float) -> list[str]:
    """Every ``1/share``-th tenant: the ones active in an interval (``share=0.1``: 10 %)."""
    step = max(1, round(1 / share))
    return list(tenants[::step])
