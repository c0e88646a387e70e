"""Token usage in every provider shape, read by the handler and by ``TokenUsage`` alike.

Two readers take usage apart: the handler's (``read.extract.usage_of``, behind the token and
cost metrics) and seed 003's ``TokenUsage``. Each field has two or three sources; these pin
which one wins when several are present, which of two similar detail keys feeds which count,
and whether the cache counts are inside the input count (which decides the uncached input).
"""

from __future__ import annotations

from typing import Any

import pytest

from symfonic_otel.events import LLMEndEvent, TokenUsage
from symfonic_otel.read.extract import usage_of

# shape, (input, output, cache read, cache creation, reasoning), uncached input
SHAPES: list[tuple[str, dict[str, Any], tuple[int, int, int, int, int], int]] = [
    (
        "langchain",
        {
            "input_tokens": 100,
            "output_tokens": 20,
            "input_token_details": {"cache_read": 30, "cache_creation": 10},
            "output_token_details": {"reasoning": 5},
        },
        (100, 20, 30, 10, 5),
        60,
    ),
    (
        "openai_raw",
        {
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "prompt_tokens_details": {"cached_tokens": 40},
            "completion_tokens_details": {"reasoning_tokens": 7},
        },
        (100, 20, 40, 0, 7),
        60,
    ),
    (
        "anthropic_raw",
        {
            "input_tokens": 50,
            "output_tokens": 20,
            "cache_read_input_tokens": 30,
            "cache_creation_input_tokens": 10,
        },
        (50, 20, 30, 10, 0),
        50,  # Anthropic counts cache tokens beside its input, not inside
    ),
    (
        "anthropic_cache_write_only",
        {"input_tokens": 50, "output_tokens": 5, "cache_creation_input_tokens": 10},
        (50, 5, 0, 10, 0),
        50,
    ),
    (
        "gateway_with_both_names",  # the seed's names win over the OpenAI ones
        {"input_tokens": 12, "prompt_tokens": 99, "output_tokens": 3, "completion_tokens": 77},
        (12, 3, 0, 0, 0),
        12,
    ),
    (
        "zero_input_beside_a_raw_count",  # a real zero is a count, not a missing one
        {"input_tokens": 0, "prompt_tokens": 5, "output_tokens": 0, "completion_tokens": 4},
        (0, 0, 0, 0, 0),
        0,
    ),
    (
        "both_detail_shapes",  # LangChain's details first, then OpenAI's
        {
            "input_tokens": 100,
            "output_tokens": 10,
            "input_token_details": {"cache_read": 30, "cache_creation": 10},
            "prompt_tokens_details": {"cached_tokens": 99},
            "output_token_details": {"reasoning": 2},
            "completion_tokens_details": {"reasoning_tokens": 9},
        },
        (100, 10, 30, 10, 2),
        60,
    ),
    (
        "langchain_details_beside_a_raw_anthropic_key",  # LangChain's input counts the cache
        {
            "input_tokens": 100,
            "output_tokens": 1,
            "input_token_details": {"cache_read": 30},
            "cache_read_input_tokens": 30,
        },
        (100, 1, 30, 0, 0),
        70,
    ),
]


@pytest.mark.parametrize(
    ("raw", "counts", "uncached"), [case[1:] for case in SHAPES], ids=[c[0] for c in SHAPES]
)
def test_the_handler_reads_each_count_from_its_own_source(
    raw: dict[str, Any], counts: tuple[int, int, int, int, int], uncached: int
) -> None:
    read = usage_of(raw)
    found = (
        read.input_tokens,
        read.output_tokens,
        read.cache_read_tokens,
        read.cache_creation_tokens,
        read.reasoning_tokens,
    )
    assert found == counts
    assert read.uncached_input() == uncached


@pytest.mark.parametrize(
    ("raw", "counts"), [(case[1], case[2]) for case in SHAPES], ids=[c[0] for c in SHAPES]
)
def test_token_usage_reads_the_same_counts_as_the_handler(
    raw: dict[str, Any], counts: tuple[int, int, int, int, int]
) -> None:
    typed = TokenUsage.from_usage(raw)
    found = (
        typed.input_tokens,
        typed.output_tokens,
        typed.cache_read_tokens,
        typed.cache_creation_tokens,
        typed.reasoning_tokens,
    )
    assert found == counts


def test_a_missing_total_is_input_plus_output_and_a_given_total_is_kept() -> None:
    assert TokenUsage.from_usage({"input_tokens": 7, "output_tokens": 5}).total_tokens == 12
    given = {"input_tokens": 7, "output_tokens": 5, "total_tokens": 40}
    assert TokenUsage.from_usage(given).total_tokens == 40


def test_a_model_the_price_table_does_not_know_is_pricing_unknown_without_the_flag() -> None:
    usage = {"input_tokens": 7, "output_tokens": 5}
    unknown = LLMEndEvent(model="no-such-model-anywhere", output="", usage=usage)
    assert unknown.typed_usage.pricing_unknown
    flagged = LLMEndEvent(model="gpt-4o", output="", usage=usage, pricing_unknown=True)
    assert flagged.typed_usage.pricing_unknown
