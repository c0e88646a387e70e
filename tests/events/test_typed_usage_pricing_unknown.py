"""Typed usage: ``pricing_unknown`` comes from the price table, read when asked."""

from __future__ import annotations

import pytest

from symfonic_otel import ModelPrice
from symfonic_otel.emit import pricing
from symfonic_otel.events import LLMEndEvent

USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}

# --- typed usage: pricing_unknown from the price table, read when asked ------------------------


def test_typed_usage_of_a_model_no_table_prices_is_pricing_unknown() -> None:
    event = LLMEndEvent("no-such-model-v9", "x", USAGE)
    assert event.pricing_unknown is False  # the emitter left the flag alone, as it may
    usage = event.typed_usage
    assert usage.pricing_unknown is True
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (10, 5, 15)


@pytest.mark.parametrize("model", ["gpt-4o-mini", "claude-sonnet-4-20250514", "openai/gpt-4.1"])
def test_typed_usage_of_a_priced_model_is_not_pricing_unknown(model: str) -> None:
    assert LLMEndEvent(model, "x", USAGE).typed_usage.pricing_unknown is False


def test_typed_usage_keeps_the_flag_the_event_set() -> None:
    event = LLMEndEvent("gpt-4o-mini", "x", USAGE, pricing_unknown=True)
    assert event.typed_usage.pricing_unknown is True


def test_typed_usage_reads_the_table_at_access_time(monkeypatch: pytest.MonkeyPatch) -> None:
    event = LLMEndEvent("acme-llm-2", "x", USAGE)  # built before the model had a price
    assert event.typed_usage.pricing_unknown is True
    monkeypatch.setitem(pricing.DEFAULT_PRICES, "acme-llm", ModelPrice(1.0, 2.0))
    assert event.typed_usage.pricing_unknown is False


@pytest.mark.parametrize("model", ["", None, 123])
def test_typed_usage_of_an_event_naming_no_model_is_pricing_unknown(model: object) -> None:
    event = LLMEndEvent(model, "x", USAGE)  # type: ignore[arg-type]
    assert event.typed_usage.pricing_unknown is True
