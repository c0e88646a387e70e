"""Cost of a model call, cached input tokens included, from the usage shapes providers send."""

from __future__ import annotations

import pytest

from symfonic_otel import ModelPrice, semconv
from symfonic_otel.emit.pricing import DEFAULT_PRICES, PriceTable
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

SONNET = ModelPrice(3.00, 15.00, 0.30, 3.75, 6.00)


def _cost(
    memory: InMemoryTelemetry, model: str, usage: dict[str, object], **kwargs: object
) -> float:
    handler = memory.handler(**kwargs)
    handler.agent_start(AgentStartEvent("q", "r"))
    handler.llm_end(LLMEndEvent(model=model, output="x", usage=usage, run_id="r"))
    handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    chat = memory.span(f"chat {model}")
    span_cost = (chat.attributes or {})[semconv.LLM_COST_USD]
    assert memory.value(semconv.LLM_COST.name) == pytest.approx(span_cost)
    return float(span_cost)  # type: ignore[arg-type]


def test_langchain_usage_metadata_counts_cache_reads_inside_input(
    telemetry: InMemoryTelemetry,
) -> None:
    """``usage_metadata``: ``input_tokens`` includes the cache reads and writes of the details."""
    usage = {
        "input_tokens": 1_000,
        "output_tokens": 100,
        "total_tokens": 1_100,
        "input_token_details": {"cache_read": 800, "cache_creation": 100},
    }
    cost = _cost(telemetry, "claude-sonnet-4-5", usage)
    assert cost == pytest.approx((100 * 3.00 + 800 * 0.30 + 100 * 3.75 + 100 * 15.00) / 1e6)
    chat = telemetry.span("chat claude-sonnet-4-5")
    attrs = chat.attributes or {}
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 1_000
    assert attrs[semconv.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 800
    assert attrs[semconv.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] == 100


def test_anthropic_raw_usage_adds_cache_tokens_on_top(telemetry: InMemoryTelemetry) -> None:
    """Anthropic's raw usage reports cache tokens beside ``input_tokens``, not inside."""
    usage = {
        "input_tokens": 200,
        "output_tokens": 100,
        "cache_read_input_tokens": 800,
        "cache_creation_input_tokens": 100,
    }
    cost = _cost(telemetry, "claude-sonnet-4-5", usage)
    assert cost == pytest.approx((200 * 3.00 + 800 * 0.30 + 100 * 3.75 + 100 * 15.00) / 1e6)


def test_recorded_bedrock_usage_is_priced_with_its_cache_write(
    telemetry: InMemoryTelemetry,
) -> None:
    """A recorded Bedrock reply (Claude 3.5 Haiku, ``max_tokens``) that wrote 18,131 prompt
    tokens to the cache: with Anthropic's raw usage shape they cost 1.25x input, on top."""
    model = "claude-3-5-haiku-20241022"
    usage = {
        "input_tokens": 4,
        "cache_creation_input_tokens": 18131,
        "cache_read_input_tokens": 0,
        "output_tokens": 50,
    }
    cost = _cost(telemetry, model, usage)
    assert cost == pytest.approx((4 * 0.80 + 18131 * 1.00 + 50 * 4.00) / 1e6)
    # Priced as plain input, the write would have read about 20 % low.
    assert ModelPrice(0.80, 4.00).cost(4 + 18131, 50) < cost


@pytest.mark.parametrize(
    "usage",
    [
        {  # Anthropic's raw usage: the writes beside input_tokens, split by lifetime
            "input_tokens": 40,
            "cache_creation_input_tokens": 3_000,
            "cache_creation": {
                "ephemeral_5m_input_tokens": 1_000,
                "ephemeral_1h_input_tokens": 2_000,
            },
            "cache_read_input_tokens": 0,
            "output_tokens": 10,
        },
        {  # LangChain's usage_metadata: the writes inside input_tokens
            "input_tokens": 3_040,
            "output_tokens": 10,
            "input_token_details": {"cache_creation": 3_000, "ephemeral_1h_input_tokens": 2_000},
        },
    ],
    ids=["raw", "langchain"],
)
def test_one_hour_cache_writes_cost_twice_the_input_price(
    telemetry: InMemoryTelemetry, usage: dict[str, object]
) -> None:
    cost = _cost(telemetry, "claude-sonnet-4-20250514", usage)
    assert cost == pytest.approx((40 * 3.00 + 1_000 * 3.75 + 2_000 * 6.00 + 10 * 15.00) / 1e6)
    # A price with no one-hour tier prices them as other writes, never as plain input.
    assert ModelPrice(3.00, 15.00, 0.30, 3.75).cost(40, 10, 0, 3_000, 2_000) == pytest.approx(
        (40 * 3.00 + 3_000 * 3.75 + 10 * 15.00) / 1e6
    )


def test_a_price_without_cache_tiers_prices_cache_as_plain_input(
    telemetry: InMemoryTelemetry,
) -> None:
    usage = {"input_tokens": 1_000, "output_tokens": 0, "input_token_details": {"cache_read": 900}}
    cost = _cost(telemetry, "house-model", usage, pricing={"house-model": ModelPrice(1.0, 2.0)})
    assert cost == pytest.approx(1_000 * 1.0 / 1e6)


def test_cached_prompts_cost_less_than_uncached(telemetry: InMemoryTelemetry) -> None:
    plain = {"input_tokens": 10_000, "output_tokens": 10}
    cached = {**plain, "input_token_details": {"cache_read": 9_000}}
    pricing = {"m": ModelPrice(2.0, 8.0, cache_read_per_million=0.5)}
    assert _cost(telemetry, "m", cached, pricing=pricing) == pytest.approx(
        (1_000 * 2.0 + 9_000 * 0.5 + 10 * 8.0) / 1e6
    )
    assert ModelPrice(2.0, 8.0).cost(10_000, 10) == pytest.approx((10_000 * 2.0 + 80) / 1e6)


def test_default_table_has_cache_prices() -> None:
    from symfonic_otel.emit.pricing import DEFAULT_PRICES

    assert DEFAULT_PRICES["gpt-4o"].cache_read_per_million == 1.25
    assert DEFAULT_PRICES["claude-sonnet-4"] == SONNET


@pytest.mark.parametrize(
    "field",
    ["cache_read_per_million", "cache_creation_per_million", "cache_creation_1h_per_million"],
)
@pytest.mark.parametrize("value", [-1.0, float("nan"), "0.3", True])
def test_bad_cache_prices_are_rejected_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        ModelPrice(1.0, 2.0, **{field: value})  # type: ignore[arg-type]


def test_two_argument_model_price_still_works() -> None:
    price = ModelPrice(1.2, 6.0)
    assert (price.cache_read_per_million, price.cache_creation_per_million) == (None, None)
    assert price.cost(1_000_000, 1_000_000) == pytest.approx(7.2)


def test_a_free_model_is_priced_at_zero_not_rejected() -> None:
    """Zero is a price (a local model, a free tier); only a negative one is refused."""
    free = ModelPrice(0.0, 0.0, 0.0, 0.0, 0.0)
    assert free.cost(1_000_000, 1_000_000) == 0.0
    with pytest.raises(ValueError, match="input_per_million"):
        ModelPrice(-0.01, 0.0)


@pytest.mark.parametrize(
    ("pricing", "error", "message"),
    [
        ([("gpt-4o", ModelPrice(1.0, 2.0))], TypeError, "^pricing must be a mapping of model name"),
        ({"": ModelPrice(1.0, 2.0)}, ValueError, "^pricing keys must be non-empty model names"),
        ({"m": 1.0}, TypeError, r"^pricing\['m'\] must be a ModelPrice"),
    ],
)
def test_a_bad_price_table_is_refused_saying_what_it_must_be(
    pricing: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        PriceTable(pricing)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "prefix"),
    [
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("acme-large-v2", "acme-large"),
        ("acme-v2", "acme"),
        ("openai/gpt-4.1-nano", "gpt-4.1-nano"),
    ],
)
def test_the_longest_prefix_a_model_name_starts_with_prices_it(model: str, prefix: str) -> None:
    prices = {"acme": ModelPrice(1.0, 1.0), "acme-large": ModelPrice(9.0, 9.0)}
    table = PriceTable(prices)
    assert table.lookup(model) == {**DEFAULT_PRICES, **prices}[prefix]
