"""The handler's limits exactly at their value and one past it: detail pools, id and duration
caps, captured content, open tool calls, run TTL, token counts, price-table matches, loop
windows."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN

from symfonic_otel import semconv
from symfonic_otel.agent import FrameworkConfig
from symfonic_otel.agent.termination import tools_condition
from symfonic_otel.core.runs import OpenRun, RunRegistry
from symfonic_otel.core.steps import MAX_STEPS_PER_RUN
from symfonic_otel.emit.budget import DetailPool
from symfonic_otel.emit.pricing import DEFAULT_PRICES, PriceTable
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    LLMEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
)
from symfonic_otel.read import content_json
from symfonic_otel.read.content import MAX_CONTENT_CHARS
from symfonic_otel.read.sanitise import MAX_CALL_MS, MAX_ID_BYTES
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.agent_support import call, turn

DROPS = "symfonic.telemetry.dropped_events"
REASON = semconv.TELEMETRY_DROP_REASON
USAGE = {"input_tokens": 3, "output_tokens": 2}


# --- limits: at the value and one past -------------------------------------------------------


def test_detail_pool_admits_exactly_its_size_and_keeps_what_it_admitted() -> None:
    pool = DetailPool(3)
    assert [pool.admit(key) for key in ("a", "b", "c")] == [True, True, True]
    assert pool.admit("d") is False  # one past the size
    assert (pool.admit("a"), pool.admit("d"), len(pool)) == (True, False, 3)


@pytest.mark.parametrize(("length", "verbatim"), [(MAX_ID_BYTES, True), (MAX_ID_BYTES + 1, False)])
def test_run_id_at_the_id_cap_is_exported_verbatim_one_past_is_digested(
    telemetry: InMemoryTelemetry, length: int, verbatim: bool
) -> None:
    run_id = "r" * length
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", run_id))
    assert handler.is_open(run_id)
    handler.agent_end(AgentEndEvent(run_id, "a", 1.0, 1))
    attributes = telemetry.span("invoke_agent symfonic").attributes or {}
    exported = attributes[semconv.RUN_ID]
    assert (exported == run_id) is verbatim
    assert isinstance(exported, str) and len(exported.encode()) <= MAX_ID_BYTES


@pytest.mark.parametrize(("duration_ms", "kept"), [(MAX_CALL_MS, True), (MAX_CALL_MS + 1, False)])
def test_call_duration_at_the_cap_is_recorded_one_past_is_malformed(
    telemetry: InMemoryTelemetry, duration_ms: float, kept: bool
) -> None:
    handler = telemetry.handler()
    handler.llm_end(LLMEndEvent("gpt-4o", "x", USAGE, duration_ms=duration_ms))
    sums = [point.sum for _, point in telemetry.points(semconv.CLIENT_OPERATION_DURATION.name)]  # type: ignore[union-attr]
    assert sums == ([duration_ms / 1000.0] if kept else [])  # no made-up duration past the cap
    assert telemetry.value(DROPS, {REASON: "malformed"}) == (0 if kept else 1)


@pytest.mark.parametrize(
    ("length", "truncated"), [(MAX_CONTENT_CHARS, False), (MAX_CONTENT_CHARS + 1, True)]
)
def test_output_at_the_capture_limit_is_whole_one_past_is_truncated(
    telemetry: InMemoryTelemetry, length: int, truncated: bool
) -> None:
    handler = telemetry.handler(capture_content=True)
    handler.llm_end(LLMEndEvent("gpt-4o", "q" * length, USAGE))
    [span] = [s for s in telemetry.spans() if s.name.startswith("chat")]
    attributes = span.attributes or {}
    assert attributes.get(semconv.CONTENT_TRUNCATED, False) is truncated
    output = str(attributes[semconv.GEN_AI_OUTPUT_MESSAGES])
    assert output.count("q") == min(length, MAX_CONTENT_CHARS)  # no "q" in the JSON around it


@pytest.mark.parametrize(("extra", "evicted"), [(0, 0), (1, 1)])
def test_open_tool_calls_per_run_are_kept_up_to_the_cap(
    telemetry: InMemoryTelemetry, extra: int, evicted: int
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    count = MAX_STEPS_PER_RUN + extra
    for index in range(count):
        handler.tool_call_start(ToolCallStartEvent(f"t{index}", "search", run_id="r"))
    ended_early = [s for s in telemetry.spans() if s.end_time is not None]
    assert len(ended_early) == evicted  # the oldest, pushed out unfinished
    for index in range(count):
        handler.tool_result(ToolResultEvent(f"t{index}", "search", run_id="r"))
    handler.agent_end(AgentEndEvent("r", "a", 1.0, 1))
    tools = [s for s in telemetry.spans() if s.name.startswith("execute_tool")]
    unfinished = [s for s in tools if (s.attributes or {}).get(semconv.STEP_UNFINISHED)]
    assert (len(tools), len(unfinished)) == (count, evicted)


@pytest.mark.parametrize(("age", "expired"), [(9.999, False), (10.0, True), (10.001, True)])
def test_a_run_is_expired_once_its_age_reaches_the_ttl(age: float, expired: bool) -> None:
    registry = RunRegistry(ttl_s=10.0, max_open=8)
    run = OpenRun("r", INVALID_SPAN, Context(), "acme", started_monotonic=1000.0)
    registry.add(run)
    assert (registry.expire(now=1000.0 + age) == [run]) is expired
    assert (registry.get("r") is None) is expired


@pytest.mark.parametrize(("extra_ns", "kept"), [(0, True), (1, False)])
def test_explicit_call_times_a_day_apart_are_kept_one_ns_more_is_malformed(
    telemetry: InMemoryTelemetry, extra_ns: int, kept: bool
) -> None:
    start = 1_750_000_000 * 10**9
    end = start + int(MAX_CALL_MS) * 10**6 + extra_ns
    handler = telemetry.handler()
    handler.llm_end(LLMEndEvent("gpt-4o", "x", USAGE), start_time_ns=start, end_time_ns=end)
    [span] = [s for s in telemetry.spans() if s.name.startswith("chat")]
    assert ((span.start_time, span.end_time) == (start, end)) is kept
    assert telemetry.value(DROPS, {REASON: "malformed"}) == (0 if kept else 1)


@pytest.mark.parametrize(("tokens", "kept"), [(2**53, True), (2**53 + 1, False)])
def test_token_count_at_the_cap_is_recorded_one_past_is_dropped(
    telemetry: InMemoryTelemetry, tokens: int, kept: bool
) -> None:
    handler = telemetry.handler()
    handler.llm_end(LLMEndEvent("gpt-4o", "x", {"input_tokens": tokens, "output_tokens": 2}))
    [span] = [s for s in telemetry.spans() if s.name.startswith("chat")]
    attributes = span.attributes or {}
    assert (attributes.get(semconv.GEN_AI_USAGE_INPUT_TOKENS) == tokens) is kept
    assert attributes[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 2  # the sane count is kept either way


# Every default price whose name starts with another's: the longer, more specific one must win.
_NESTED = sorted(
    (longer, shorter)
    for longer in DEFAULT_PRICES
    for shorter in DEFAULT_PRICES
    if longer != shorter and longer.startswith(shorter)
)


def test_there_are_nested_model_names_to_tell_apart() -> None:
    assert ("gpt-4o-mini", "gpt-4o") in _NESTED and len(_NESTED) >= 4


@pytest.mark.parametrize(("longer", "shorter"), _NESTED)
def test_the_longest_matching_price_wins(longer: str, shorter: str) -> None:
    table = PriceTable()
    assert table.lookup(f"{longer}-2025-01-01") is DEFAULT_PRICES[longer]
    assert table.lookup(f"{shorter}-2025-01-01") is DEFAULT_PRICES[shorter]


def test_a_dated_mini_model_is_charged_at_the_mini_price(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    usage = {"input_tokens": 1_000_000, "output_tokens": 1_000_000}
    handler.llm_end(LLMEndEvent("gpt-4o-mini-2024-07-18", "x", usage))
    expected = DEFAULT_PRICES["gpt-4o-mini"].cost(1_000_000, 1_000_000)
    assert telemetry.value(semconv.LLM_COST.name) == pytest.approx(expected)
    assert expected != pytest.approx(DEFAULT_PRICES["gpt-4o"].cost(1_000_000, 1_000_000))


def _repeat_spread(gap: int) -> list[BaseMessage]:
    """The same call twice, ``gap`` messages apart (tool results and another call between)."""
    messages: list[BaseMessage] = [HumanMessage("q"), turn("", call("lookup", {"key": "a"}, "c0"))]
    messages.append(ToolMessage("a is 1", tool_call_id="c0"))
    for index in range(1, gap - 1, 2):
        messages.append(turn("", call("lookup", {"key": f"other{index}"}, f"o{index}")))
        messages.append(ToolMessage("x", tool_call_id=f"o{index}"))
    messages.append(turn("", call("lookup", {"key": "a"}, "c1")))
    return messages


@pytest.mark.parametrize(("window", "loop"), [(5, True), (4, False)])
def test_loop_window_counts_a_repeat_exactly_window_messages_back(window: int, loop: bool) -> None:
    messages = _repeat_spread(4)
    first = next(i for i, m in enumerate(messages) if getattr(m, "tool_calls", None))
    assert len(messages) - first == 5  # the first call is the fifth message from the end
    config = FrameworkConfig(loop_detection_threshold=2, loop_detection_window=window)
    route = tools_condition(messages, config, model_calls=3)
    assert (route.reason == "loop_detected") is loop, route


# The captured-content caps (private: they shape the JSON, nothing a caller sets).
ITEMS = content_json._MAX_ITEMS
DEPTH = content_json._MAX_DEPTH
MESSAGES = content_json._MAX_MESSAGES


@pytest.mark.parametrize(("count", "truncated"), [(ITEMS, False), (ITEMS + 1, True)])
def test_captured_arguments_keep_exactly_the_item_cap(count: int, truncated: bool) -> None:
    mapping, cut_map = content_json.value_json({f"k{i}": i for i in range(count)})
    listing, cut_list = content_json.value_json(list(range(count)))
    assert (len(json.loads(mapping)), cut_map) == (min(count, ITEMS), truncated)
    assert (len(json.loads(listing)), cut_list) == (min(count, ITEMS), truncated)


@pytest.mark.parametrize(("levels", "truncated"), [(DEPTH, False), (DEPTH + 1, True)])
def test_captured_nesting_keeps_exactly_the_depth_cap(levels: int, truncated: bool) -> None:
    nested: Any = "leaf"
    for _ in range(levels):
        nested = [nested]
    text, cut = content_json.value_json(nested)
    assert ("leaf" in text, cut) == (not truncated, truncated)


@pytest.mark.parametrize(("count", "truncated"), [(MESSAGES, False), (MESSAGES + 1, True)])
def test_captured_history_keeps_exactly_the_message_cap(count: int, truncated: bool) -> None:
    history = [("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(count)]
    _, messages, cut = content_json.input_messages_json(history)
    assert messages is not None
    kept = [m["parts"][0]["content"] for m in json.loads(messages)]
    assert (len(kept), cut) == (min(count, MESSAGES), truncated)
    assert kept[-1] == f"m{count - 1}"  # the newest are the ones kept


@pytest.mark.parametrize(
    ("length", "truncated"), [(MAX_CONTENT_CHARS, False), (MAX_CONTENT_CHARS + 1, True)]
)
@pytest.mark.parametrize("side", ["arguments", "result"])
def test_tool_content_at_the_capture_limit_is_whole_one_past_is_truncated_and_flagged(
    telemetry: InMemoryTelemetry, length: int, truncated: bool, side: str
) -> None:
    handler = telemetry.handler(capture_content=True)
    handler.agent_start(AgentStartEvent("q", "r"))
    arguments, result = ("a" * length, "ok") if side == "arguments" else ("{}", "a" * length)
    handler.tool_call_start(ToolCallStartEvent("t1", "search", arguments, run_id="r"))
    handler.tool_result(ToolResultEvent("t1", "search", result, run_id="r"))
    handler.agent_end(AgentEndEvent("r", "done", 1.0, 1))
    attributes = telemetry.span("execute_tool search").attributes or {}
    key = (
        semconv.GEN_AI_TOOL_CALL_ARGUMENTS
        if side == "arguments"
        else semconv.GEN_AI_TOOL_CALL_RESULT
    )
    assert str(attributes[key]) == "a" * min(length, MAX_CONTENT_CHARS)
    assert attributes.get(semconv.CONTENT_TRUNCATED, "absent") == (True if truncated else "absent")
