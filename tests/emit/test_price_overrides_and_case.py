"""A handler's ``pricing=`` wins over the default table for the model it names, and model names
are matched whatever their case (providers and frameworks report ``GPT-4o`` as well as
``gpt-4o``), on both sides: the name looked up and the name overridden."""

from __future__ import annotations

from symfonic_otel.emit.pricing import DEFAULT_PRICES, ModelPrice, PriceTable

NEGOTIATED = ModelPrice(1.00, 4.00)


def test_an_override_of_a_default_model_takes_its_price() -> None:
    assert DEFAULT_PRICES["gpt-4o"] != NEGOTIATED
    table = PriceTable({"gpt-4o": NEGOTIATED})
    assert table.lookup("gpt-4o") == NEGOTIATED
    assert table.lookup("gpt-4o-2024-08-06") == NEGOTIATED
    assert table.lookup("gpt-4o-mini") == DEFAULT_PRICES["gpt-4o-mini"]


def test_a_model_name_in_capitals_is_priced_as_in_lower_case() -> None:
    table = PriceTable()
    assert table.lookup("GPT-4o-Mini") == DEFAULT_PRICES["gpt-4o-mini"]
    assert table.lookup("OpenAI/GPT-4o") == DEFAULT_PRICES["gpt-4o"]


def test_an_override_named_in_capitals_prices_the_lower_case_name() -> None:
    table = PriceTable({"Acme-Large": NEGOTIATED})
    assert table.lookup("acme-large-v2") == NEGOTIATED
