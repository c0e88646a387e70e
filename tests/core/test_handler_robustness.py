"""Never hurt the agent: malformed, out-of-order and duplicated events, bounded open runs."""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from symfonic_otel import OTelCallbackHandler
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.read.sanitise import MAX_TIME_NS, MIN_TIME_NS
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.hostile_events import CASES, GO_ZERO_TIME, TIMING_CASES, play
from tests.support.recorded import internal_errors
from tests.support.symfonic_events import HANDLER_HOOKS

METHODS = HANDLER_HOOKS
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
    # Step events: tools, nodes, deltas, pauses.
    "tool_call_id",
    "tool_name",
    "phase",
    "arguments",
    "result",
    "is_error",
    "status",
    "error",
    "error_type",
    "text",
    "name",
    "messages",
    "system_prompt",
    "tools",
    "invocation_params",
)

_any_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(
        [
            "r1",
            "r2",
            "r3",
            "completed",
            "error",
            "react",
            "gpt-4o",
            "2026-01-01T00:00",
            GO_ZERO_TIME,
            "2600-01-01T00:00:00Z",
            "\ud800",
            "a\udfffb\x00",
            "announced",
            "executing",
            "search",
            1e14,
            2**64,
        ]
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


def _chat_spans(memory: InMemoryTelemetry) -> int:
    return sum(1 for s in memory.spans() if s.kind is SpanKind.CLIENT)


def _encodable(span: ReadableSpan) -> int:
    """Size of ``span`` encoded by the real OTLP encoder (raises if it cannot be encoded)."""
    return len(encode_spans([span]).SerializeToString())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=_calls, cap=st.integers(min_value=1, max_value=3))
def test_random_events_never_raise_and_open_runs_stay_capped(
    calls: list[tuple[str, Any]], cap: int
) -> None:
    """Random types and values: nothing raises, and nothing is lost to an internal error —
    every model call still has its span and every span encodes."""
    memory = InMemoryTelemetry()
    handler = memory.handler(max_open_runs=cap, node_spans=True, capture_content=True)

    async def replay() -> None:
        for method, event in calls:
            await getattr(handler, method)(event)
            assert handler.open_runs <= cap

    asyncio.run(replay())
    handler.close_open_runs()
    assert memory.unended_spans == []
    assert internal_errors(memory) == 0
    assert _chat_spans(memory) == sum(1 for method, _ in calls if method == "on_llm_end")
    for span in memory.spans():
        _encodable(span)
    memory.shutdown()


@pytest.mark.parametrize("method", METHODS)
async def test_event_that_raises_on_every_attribute(
    telemetry: InMemoryTelemetry, method: str
) -> None:
    handler = telemetry.handler(node_spans=True)
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


async def test_a_run_evicted_at_the_cap_is_remembered_as_ended(
    telemetry: InMemoryTelemetry,
) -> None:
    """A redelivered start of a run evicted to make room is a duplicate: it opens no second
    span, counts no second run and evicts no live run in its turn."""
    handler = telemetry.handler(max_open_runs=2)
    for run_id in ("a", "b", "c"):
        handler.agent_start(AgentStartEvent(query="q", run_id=run_id))
    handler.agent_start(AgentStartEvent(query="q", run_id="a"))
    assert not handler.is_open("a")
    assert handler.is_open("b") and handler.is_open("c")
    duplicate = {"symfonic.telemetry.drop_reason": "duplicate"}
    assert telemetry.value("symfonic.telemetry.dropped_events", duplicate) == 1
    for run_id in ("b", "c"):
        handler.agent_end(AgentEndEvent(run_id, "x", 1.0, 1))
    assert [s.name for s in telemetry.spans()].count("invoke_agent symfonic") == 3
    assert telemetry.value("symfonic.agent.runs") == 3
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
    None,
    True,
    False,
    0,
    -1,
    2**64,
    1.5,
    -0.0,
    float("nan"),
    float("inf"),
    "",
    " ",
    "r1",
    "r2",
    "r3",
    "completed",
    "error",
    "abandoned",
    "react",
    "react_synthesize_fallback",
    "gpt-4o",
    "claude-sonnet-4-5",
    "2026-11-30T12:00:00",
    "2026-13-45T99:99",
    "x" * 5000,
    "\x00\n\t",
    "\ud800",
    GO_ZERO_TIME,
    "2600-01-01T00:00:00Z",
    1e14,
    -5.0,
    2**70,
    10**400,
    [],
    [{"kind": "url"}],
    [None, 3],
    {},
    {"input_tokens": 5, "output_tokens": "7"},
    {"prompt_tokens": -3},
    object(),
    b"bytes",
    ("t",),
)
_cheap_event = st.dictionaries(st.sampled_from(FIELDS), st.sampled_from(_POOL), max_size=10).map(
    lambda attrs: SimpleNamespace(**attrs)
)


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
    assert internal_errors(memory) == 0  # tolerated input, so nothing lost to a handler bug
    if method == "on_llm_end":
        assert _chat_spans(memory) == delivered  # every call kept its span
    memory.shutdown()


# --- hostile but well-typed input: tolerated, recorded, encodable, counted ------------------------

_BAD_DURATIONS = TIMING_CASES - {"go_zero_time", "year_2600", "year_9999", "unparseable_time"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_value_is_recorded_encodable_and_counted(
    telemetry: InMemoryTelemetry, name: str
) -> None:
    case = CASES[name]
    handler = telemetry.handler(capture_content=True)
    before_ns = time.time_ns()
    play(handler, case, f"run-{name}")
    after_ns = time.time_ns()

    spans = telemetry.spans()
    assert len(spans) == case.spans, [s.name for s in spans]
    for span in spans:
        assert _encodable(span) < 64 * 1024  # far below any collector's message limit
        assert span.start_time is not None and span.end_time is not None
        assert MIN_TIME_NS <= span.start_time <= span.end_time < MAX_TIME_NS
    if name in TIMING_CASES:  # the call is kept, timed at its receipt
        [chat] = [s for s in spans if s.kind is SpanKind.CLIENT]
        assert chat.end_time is not None and before_ns <= chat.end_time <= after_ns
    assert internal_errors(telemetry) == 0
    malformed = telemetry.value(
        "symfonic.telemetry.dropped_events", {"symfonic.telemetry.drop_reason": "malformed"}
    )
    assert malformed == (1 if name in TIMING_CASES else 0)
    assert telemetry.value("symfonic.agent.runs") == 1
    assert telemetry.value("gen_ai.client.token.usage") == 2  # input and output recorded
    # A bad duration records no latency; every other case records one.
    expected_latencies = 0 if name in _BAD_DURATIONS else 1
    assert telemetry.value("gen_ai.client.operation.duration") == expected_latencies


def test_huge_run_id_costs_a_digest_not_megabytes(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    huge = "r" * (10 * 1024 * 1024)
    started = time.perf_counter()
    handler.agent_start(AgentStartEvent("q", huge))
    assert handler.is_open(huge) and handler.run_context(huge) is not None
    handler.llm_end(LLMEndEvent(model="m", output="x", usage={}, run_id=huge))
    handler.agent_end(AgentEndEvent(huge, "x", 1.0, 1))
    per_event_s = (time.perf_counter() - started) / 5
    assert per_event_s < 0.25, per_event_s
    ids = {str((s.attributes or {})["symfonic.run.id"]) for s in telemetry.spans()}
    assert len(ids) == 1  # the chat span found its run
    [run_id] = ids
    assert len(run_id.encode()) <= 128 and run_id.startswith("r" * 16)
    assert telemetry.value("symfonic.telemetry.dropped_events") == 0


def test_distinct_long_ids_stay_distinct(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    base = "x" * 1000
    for suffix in ("a", "b"):
        handler.agent_start(AgentStartEvent("q", base + suffix))
    assert handler.open_runs == 2
    for suffix in ("a", "b"):
        handler.agent_end(AgentEndEvent(base + suffix, "x", 1.0, 1))
    assert handler.open_runs == 0
    assert telemetry.value("symfonic.agent.runs") == 2


@pytest.mark.parametrize("run_id", [["a", "list"], {"a": "dict"}, {1, 2}, None, 3.5, object()])
def test_is_open_and_run_context_never_raise(telemetry: InMemoryTelemetry, run_id: object) -> None:
    handler = telemetry.handler()
    assert handler.is_open(run_id) is False  # type: ignore[arg-type]
    assert handler.run_context(run_id) is None  # type: ignore[arg-type]
    assert handler.start_tool(run_id, "t") is None  # type: ignore[arg-type]


def test_memory_is_bounded_in_bytes_for_distinct_large_ids() -> None:
    """6,000 distinct 32 KB run ids (and model names) through every event: what stays behind
    is bounded in bytes (ids kept as digests, names capped), not 6,000 x 32 KB."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider

    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    tracers = TracerProvider()  # spans are built, then dropped: no exporter keeps them
    handler = OTelCallbackHandler(tracer_provider=tracers, meter_provider=meters)

    def one(index: int) -> None:
        run_id = f"{index:08d}" + "i" * (32 * 1024)
        model = f"model-{index:05d}" + "m" * (32 * 1024)
        handler.agent_start(AgentStartEvent("q", run_id))
        handler.llm_end(LLMEndEvent(model=model, output="x", usage={}, run_id=run_id))
        handler.agent_end(AgentEndEvent(run_id, "x", 1.0, 1))

    for index in range(300):  # warm: label caps, caches and the SDK's series fill up here
        one(index)
    reader.get_metrics_data()
    gc.collect()
    tracemalloc.start()
    try:
        baseline, _ = tracemalloc.get_traced_memory()
        for index in range(300, 6_300):
            one(index)
        reader.get_metrics_data()
        gc.collect()
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    growth_mb = (retained - baseline) / 1e6
    assert growth_mb < 4.0, f"{growth_mb:.1f} MB retained after 6,000 runs of 32 KB ids"
    assert handler.open_runs == 0
    meters.shutdown()
    tracers.shutdown()


_step_value = st.one_of(
    st.none(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["\ud800", "a\x00b", "x" * 5000, "search", "c1", "c2"]),
    st.lists(st.one_of(st.integers(), st.text(max_size=4)), max_size=3),
    st.dictionaries(st.text(max_size=4), st.one_of(st.integers(), st.text(max_size=4)), max_size=3),
)
_phase = st.sampled_from(["announced", "executing", None, 7, "\ud800"])
_step = st.one_of(
    st.tuples(
        st.just("on_tool_call_start"),
        st.fixed_dictionaries(
            {"phase": _phase},
            optional={
                "tool_call_id": _step_value,
                "tool_name": _step_value,
                "arguments": _step_value,
            },
        ),
    ),
    st.tuples(
        st.just("on_tool_result"),
        st.fixed_dictionaries(
            {},
            optional={
                "tool_call_id": _step_value,
                "tool_name": _step_value,
                "result": _step_value,
                "is_error": _step_value,
                "status": _step_value,
                "error_type": _step_value,
            },
        ),
    ),
    st.tuples(
        st.sampled_from(["on_node_start", "on_node_end", "on_node_error", "on_llm_start"]),
        st.fixed_dictionaries(
            {},
            optional={
                "node_name": _step_value,
                "duration_ms": _step_value,
                "error": _step_value,
                "error_type": _step_value,
            },
        ),
    ),
    st.tuples(st.just("on_text_delta"), st.fixed_dictionaries({}, optional={"text": _step_value})),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.sampled_from(["r1", "r2"]), _step), max_size=30))
def test_random_step_events_make_their_spans(steps: list[tuple[str, tuple[str, Any]]]) -> None:
    """Hostile values in every field of the step events of two open runs: nothing raises,
    nothing is lost to an internal error, every executing tool start has its span, every span
    is ended with its run and encodes."""
    memory = InMemoryTelemetry()
    handler = memory.handler(node_spans=True, capture_content=True)

    async def replay() -> None:
        for run_id in ("r1", "r2"):
            await handler.on_agent_start(AgentStartEvent(query="q", run_id=run_id))
        for run_id, (method, fields) in steps:
            await getattr(handler, method)(SimpleNamespace(run_id=run_id, **fields))
        for run_id in ("r1", "r2"):
            await handler.on_agent_end(AgentEndEvent(run_id, "x", 1.0, 1))

    asyncio.run(replay())
    assert memory.unended_spans == []
    assert internal_errors(memory) == 0
    executing = sum(
        1
        for _, (method, fields) in steps
        if method == "on_tool_call_start" and fields["phase"] != "announced"
    )
    assert sum(1 for s in memory.spans() if s.name.startswith("execute_tool")) == executing
    for span in memory.spans():
        _encodable(span)
    memory.shutdown()
