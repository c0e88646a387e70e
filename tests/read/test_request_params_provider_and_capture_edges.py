"""The request, provider and capture readers at the edges a planted bug would move.

Request parameters: the first name that carries a value wins (an explicit ``None`` is no value),
``stream`` only as a bool, at most 16 stop sequences. The provider is read from the last part of
a routed model name, and ``o`` families only as ``o<digit>`` alone or before a dash. Content
capture: the GenAI switch's ``event_only`` keeps content in the process, and an explicit
argument wins over the variable both ways. Usage: Anthropic's one-hour cache writes are read
from its ``cache_creation`` breakdown; a count is kept up to the int32 limit.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from symfonic_otel import semconv
from symfonic_otel.read.content import resolve_capture
from symfonic_otel.read.extract import count, usage_of
from symfonic_otel.read.providers import infer_provider
from symfonic_otel.read.request_params import request_attributes

MAX_TOKENS = semconv.GEN_AI_REQUEST_MAX_TOKENS


def test_max_tokens_wins_over_the_other_names_of_the_output_limit() -> None:
    params = {"max_completion_tokens": 200, "max_tokens": 100, "num_predict": 300}
    assert request_attributes(params)[MAX_TOKENS] == 100


def test_a_parameter_set_to_none_gives_way_to_the_next_name() -> None:
    assert request_attributes({"max_tokens": None, "max_completion_tokens": 200})[MAX_TOKENS] == 200


@pytest.mark.parametrize(("raw", "recorded"), [(True, True), (False, False), ("yes", None)])
def test_stream_is_recorded_only_as_a_bool(raw: object, recorded: bool | None) -> None:
    assert request_attributes({"stream": raw}).get(semconv.GEN_AI_REQUEST_STREAM) is recorded


def test_at_most_16_stop_sequences_are_recorded() -> None:
    stops = [f"s{index}" for index in range(20)]
    recorded = request_attributes({"stop": stops})[semconv.GEN_AI_REQUEST_STOP_SEQUENCES]
    assert recorded == tuple(stops[:16])


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("openai/gpt-4o", "openai"),
        ("bedrock/anthropic/claude-3-haiku", "anthropic"),
        ("o3", "openai"),
        ("o4-mini", "openai"),
        ("o1x", None),
    ],
)
def test_the_provider_is_read_from_the_last_part_of_the_model_name(
    model: str, provider: str | None
) -> None:
    assert infer_provider(model) == provider


@pytest.mark.parametrize(
    ("setting", "captured"),
    [("true", True), ("span_only", True), ("event_only", False), ("no_content", False)],
)
def test_the_capture_switch_captures_only_for_its_span_values(
    monkeypatch: pytest.MonkeyPatch, setting: str, captured: bool
) -> None:
    monkeypatch.setenv(semconv.CAPTURE_CONTENT_ENV, setting)
    assert resolve_capture(None) is captured


@pytest.mark.parametrize(("setting", "explicit"), [("true", False), ("false", True)])
def test_an_explicit_capture_argument_wins_over_the_switch(
    monkeypatch: pytest.MonkeyPatch, setting: str, explicit: bool
) -> None:
    monkeypatch.setenv(semconv.CAPTURE_CONTENT_ENV, setting)
    assert resolve_capture(explicit) is explicit


def test_anthropic_one_hour_cache_writes_are_read_from_its_breakdown() -> None:
    raw = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 80,
        "cache_creation": {"ephemeral_1h_input_tokens": 50, "ephemeral_5m_input_tokens": 30},
    }
    reading = usage_of(raw)
    assert (reading.cache_creation_tokens, reading.cache_creation_1h_tokens) == (80, 50)


@pytest.mark.parametrize(("raw", "read"), [(2**31 - 1, 2**31 - 1), (2**31, 0), (-1, 0)])
def test_a_count_is_kept_up_to_the_int32_limit(raw: int, read: int) -> None:
    assert count(SimpleNamespace(iteration_index=raw), "iteration_index") == read
