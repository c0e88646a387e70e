"""``TokenUsage.from_usage``: each count from its own field, the first usable source winning.

LangChain's ``usage_metadata`` names are read before OpenAI's raw ones and OpenAI's before
Anthropic's; a provider's own total wins over the sum; a zero count is a count (no fallback past
it), a negative or boolean one is not; anything but a mapping keeps only the pricing flag.
"""

from __future__ import annotations

import pytest

from symfonic_otel.events import TokenUsage


def test_the_provider_s_own_total_wins_over_the_sum() -> None:
    usage = TokenUsage.from_usage({"input_tokens": 10, "output_tokens": 5, "total_tokens": 20})
    assert usage.total_tokens == 20
    assert TokenUsage.from_usage({"input_tokens": 10, "output_tokens": 5}).total_tokens == 15


def test_langchain_names_win_over_openai_raw_names() -> None:
    usage = TokenUsage.from_usage(
        {"input_tokens": 10, "prompt_tokens": 99, "output_tokens": 5, "completion_tokens": 77}
    )
    assert (usage.input_tokens, usage.output_tokens) == (10, 5)


def test_openai_raw_names_are_read_alone() -> None:
    usage = TokenUsage.from_usage({"prompt_tokens": 12, "completion_tokens": 3})
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (12, 3, 15)


def test_langchain_cache_details_win_over_openai_raw_details() -> None:
    usage = TokenUsage.from_usage(
        {
            "input_tokens": 100,
            "input_token_details": {"cache_read": 40},
            "prompt_tokens_details": {"cached_tokens": 60},
        }
    )
    assert usage.cache_read_tokens == 40


def test_anthropic_raw_cache_counts_are_read_when_no_details_name_them() -> None:
    usage = TokenUsage.from_usage(
        {
            "input_tokens": 10,
            "cache_read_input_tokens": 30,
            "cache_creation_input_tokens": 50,
        }
    )
    assert (usage.cache_read_tokens, usage.cache_creation_tokens) == (30, 50)


def test_reasoning_tokens_are_read_from_openai_raw_details_too() -> None:
    raw = {"output_tokens": 20, "completion_tokens_details": {"reasoning_tokens": 8}}
    assert TokenUsage.from_usage(raw).reasoning_tokens == 8


def test_a_zero_count_is_a_count_and_no_fallback_is_read_past_it() -> None:
    usage = TokenUsage.from_usage({"input_tokens": 0, "prompt_tokens": 99, "output_tokens": 1})
    assert usage.input_tokens == 0


@pytest.mark.parametrize("bad", [True, -3, "10", 1.5])
def test_a_count_that_is_not_a_non_negative_int_is_not_read(bad: object) -> None:
    usage = TokenUsage.from_usage({"input_tokens": bad, "prompt_tokens": 7})
    assert usage.input_tokens == 7


def test_usage_that_is_not_a_mapping_keeps_only_the_pricing_flag() -> None:
    usage = TokenUsage.from_usage(["not", "a", "mapping"], pricing_unknown=True)
    assert usage == TokenUsage(pricing_unknown=True)
