"""Never hurt the agent: malformed, out-of-order and duplicated events, bounded open runs."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symfonic_otel import OTelCallbackHandler
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

METHODS = (
    "on_agent_start",
    "on_agent_end",
    "on_llm_end",
    "on_react_loop_end",
    "on_fabrication_detected",
)
FIELDS = (
    "run_id",
    "query",
    "final_response",
    "duration_ms",
    "node_count",
    "outcome",
    "model",
    "output",
    "usage",
    "node_name",
    "pricing_unknown",
    "started_at_utc",
    "iteration_index",
    "turn_index",
    "content_type",
    "has_tool_calls",
    "tool_call_count",
    "termination_reason",
    "mode",
    "action_taken",
    "findings",
    "refuse_threshold",
    "max_finding_confidence",
    "original_draft_preview",
    "replacement_preview",
    "preview_truncated",
)

_any_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(
        ["r1", "r2", "r3", "completed", "error", "react", "gpt-4o", "2026-01-01T00:00"]
    ),
    st.lists(
        st.one_of(
            st.none(),
            st.integers(),
            st.text(max_size=5),
            st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
        ),
        max_size=3,
    ),
    st.dictionaries(
        st.sampled_from(["input_tokens", "output_tokens", "prompt_tokens", "kind", "x"]),
        st.one_of(st.integers(min_value=-5, max_value=10**12), st.text(max_size=3), st.none()),
        max_size=4,
    ),
)
# Events with a random subset of attributes of random types; run ids drawn from a small pool so
# starts, ends and duplicates collide.
_event = st.builds(
    lambda attrs: SimpleNamespace(**attrs),
    st.dictionaries(st.sampled_from(FIELDS), _any_value, max_size=8).flatmap(
        lambda d: st.sampled_from(["r1", "r2", "r3", "", None, 7]).map(
            lambda rid: {**d, "run_id": rid} if rid is not None else d
        )
    ),
)
_calls = st.lists(st.tuples(st.sampled_from(METHODS), _event), max_size=40)


class _Raises:
    """An event whose every attribute access raises."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"boom on {name}")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=_calls, cap=st.integers(min_value=1, max_value=3))
def test_random_events_never_raise_and_open_runs_stay_capped(
    calls: list[tuple[str, Any]], cap: int
) -> None:
    memory = InMemoryTelemetry()
    handler = memory.handler(max_open_runs=cap)

    async def replay() -> None:
        for method, event in calls:
            await getattr(handler, method)(event)
            assert handler.open_runs <= cap

    asyncio.run(replay())
    handler.close_open_runs()
    assert memory.unended_spans == []
    memory.shutdown()


@pytest.mark.parametrize("method", METHODS)
async def test_event_that_raises_on_every_attribute(
    telemetry: InMemoryTelemetry, method: str
) -> None:
    handler = telemetry.handler()
    await getattr(handler, method)(_Raises())
    await getattr(handler, method)(None)
    await getattr(handler, method)(42)
    assert telemetry.value("symfonic.telemetry.dropped_events") >= 1


async def test_internal_failure_is_logged_once_per_kind(telemetry: InMemoryTelemetry) -> None:
    from structlog.testing import capture_logs

    handler = telemetry.handler()
    with capture_logs() as logs:
        for _ in range(50):
            handler.agent_start(_Raises())
    failures = [entry for entry in logs if entry.get("log_level") == "warning"]
    assert len(failures) == 1
    assert (
        telemetry.value(
            "symfonic.telemetry.dropped_events",
            {"symfonic.telemetry.drop_reason": "internal_error"},
        )
        == 50
    )


async def test_cap_evicts_oldest_as_abandoned(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(max_open_runs=2)
    for run_id in ("a", "b", "c"):
        handler.agent_start(AgentStartEvent(query="q", run_id=run_id))
    assert handler.open_runs == 2
    assert not handler.is_open("a")
    evicted = telemetry.span("invoke_agent symfonic")
    assert evicted.attributes is not None
    assert evicted.attributes["symfonic.run.id"] == "a"
    assert evicted.attributes["symfonic.run.outcome"] == "abandoned"
    assert telemetry.value("symfonic.telemetry.orphaned_runs") == 1
    assert telemetry.value("symfonic.agent.runs", {"symfonic.run.outcome": "abandoned"}) == 1
    # A late end for the evicted run is a duplicate, not a second run.
    handler.agent_end(AgentEndEvent("a", "late", 1.0, 1))
    assert telemetry.value("symfonic.agent.runs") == 1
    for run_id in ("b", "c"):
        handler.agent_end(AgentEndEvent(run_id, "x", 1.0, 1))
    assert telemetry.value("symfonic.agent.active_runs") == 0


async def test_ttl_closes_stale_runs(telemetry: InMemoryTelemetry) -> None:
    import time

    handler = telemetry.handler(run_ttl_s=0.05)
    handler.agent_start(AgentStartEvent(query="q", run_id="stale"))
    time.sleep(0.08)
    handler.agent_start(AgentStartEvent(query="q", run_id="fresh"))  # sweeps on the way in
    assert not handler.is_open("stale")
    assert handler.is_open("fresh")
    assert telemetry.value("symfonic.telemetry.orphaned_runs") == 1
    time.sleep(0.08)
    assert handler.expire_runs() == 1
    assert handler.open_runs == 0
    assert telemetry.value("symfonic.telemetry.orphaned_runs") == 2


async def test_duplicate_agent_start_keeps_one_run(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="q", run_id="r"))
    handler.agent_start(AgentStartEvent(query="q", run_id="r"))
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    assert len(telemetry.spans()) == 1
    assert telemetry.value("symfonic.agent.active_runs") == 0


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"run_ttl_s": -1}, "run_ttl_s"),
        ({"run_ttl_s": float("nan")}, "run_ttl_s"),
        ({"max_open_runs": 0}, "max_open_runs"),
        ({"max_tenants": 0}, "max_tenants"),
        ({"max_tenants": True}, "max_tenants"),
        ({"agent_name": ""}, "agent_name"),
        ({"capture_content": "yes"}, "capture_content"),
        ({"tenant_id": 5}, "tenant_id"),
        ({"pricing": {"m": 1.0}}, "pricing"),
    ],
)
def test_bad_constructor_arguments_fail_fast_naming_the_argument(
    kwargs: dict[str, Any], argument: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=argument):
        OTelCallbackHandler(**kwargs)


async def test_llm_end_with_garbage_usage_still_records_the_call(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.llm_end(
        LLMEndEvent(model="gpt-4o", output="x", usage={"input_tokens": "many", "output_tokens": -3})
    )
    chat = telemetry.span("chat gpt-4o")
    assert chat.attributes is not None
    assert "gen_ai.usage.input_tokens" not in chat.attributes
    assert telemetry.value("gen_ai.client.operation.duration") == 1
    assert telemetry.points("gen_ai.client.token.usage") == []


EVENTS_PER_METHOD = 10_000
# Drawing from a fixed pool of awkward values keeps 10,000 draws per method fast.
_POOL = (
    None, True, False, 0, -1, 2**64, 1.5, -0.0, float("nan"), float("inf"), "", " ", "r1", "r2",
    "r3", "completed", "error", "abandoned", "react", "react_synthesize_fallback", "gpt-4o",
    "claude-sonnet-4-5", "2026-11-30T12:00:00", "2026-13-45T99:99", "x" * 5000, "\x00\n\t",
    [], [{"kind": "url"}], [None, 3], {}, {"input_tokens": 5, "output_tokens": "7"},
    {"prompt_tokens": -3}, object(), b"bytes", ("t",),
)
_cheap_event = st.dictionaries(
    st.sampled_from(FIELDS), st.sampled_from(_POOL), max_size=10
).map(lambda attrs: SimpleNamespace(**attrs))


@pytest.mark.parametrize("method", METHODS)
def test_ten_thousand_generated_events_per_method(method: str) -> None:
    """A hypothesis run of at least 10,000 generated events into each method: none raises."""
    memory = InMemoryTelemetry()
    handler = memory.handler(max_open_runs=5)
    delivered = 0

    @settings(
        max_examples=200,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example],
    )
    @given(batch=st.lists(_cheap_event, min_size=50, max_size=50))
    def feed(batch: list[Any]) -> None:
        nonlocal delivered
        sync_method = getattr(handler, method.removeprefix("on_"))
        for event in batch:
            sync_method(event)
            handler.agent_start(event)  # keeps runs opening so every method sees live runs
            assert handler.open_runs <= 5
        delivered += len(batch)

    feed()
    assert delivered >= EVENTS_PER_METHOD
    handler.close_open_runs()
    assert memory.unended_spans == []
    memory.shutdown()
