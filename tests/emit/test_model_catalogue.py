"""What the handler knows per model name: its bounded label, inferred provider, price and span
name, worked out once per name and kept in a memo bounded however many names arrive."""

from __future__ import annotations

from symfonic_otel.emit.labels import BoundedLabels
from symfonic_otel.emit.models import ModelCatalogue
from symfonic_otel.emit.pricing import ModelPrice
from symfonic_otel.emit.vocabulary import OTHER, label_or_other

HOUSE = ModelPrice(input_per_million=1.0, output_per_million=2.0)


def _catalogue(models_cap: int = 10) -> ModelCatalogue:
    return ModelCatalogue(
        {"house-model": HOUSE},
        BoundedLabels(models_cap, OTHER, label_or_other),
        BoundedLabels(10, OTHER, label_or_other),
    )


def test_a_known_model_gets_its_label_provider_price_and_span_name() -> None:
    info = _catalogue()("gpt-4o")
    assert info.label == "gpt-4o"
    assert info.provider == "openai"
    assert info.price is not None
    assert info.span_name == "chat gpt-4o"


def test_a_user_priced_model_with_no_known_provider() -> None:
    info = _catalogue()("house-model-v2")
    assert info.label == "house-model-v2"
    assert info.provider is None
    assert info.price == HOUSE
    assert info.span_name == "chat house-model-v2"


def test_no_model_name_has_an_empty_label_no_price_and_a_bare_span_name() -> None:
    info = _catalogue()("")
    assert (info.label, info.provider, info.price, info.span_name) == ("", None, None, "chat")


def test_labels_past_the_model_cap_fold_but_the_span_name_keeps_the_model() -> None:
    catalogue = _catalogue(models_cap=1)
    catalogue("gpt-4o")
    info = catalogue("claude-3-5-sonnet")
    assert info.label == OTHER
    assert info.provider == "anthropic"
    assert info.span_name == "chat claude-3-5-sonnet"


def test_a_model_seen_before_is_answered_from_the_memo() -> None:
    catalogue = _catalogue()
    assert catalogue("gpt-4o") is catalogue("gpt-4o")


def test_the_memo_is_cleared_when_it_reaches_1024_names() -> None:
    catalogue = _catalogue()
    first = catalogue("m-0")
    for i in range(1, 1024):
        catalogue(f"m-{i}")
    assert len(catalogue._memo) == 1024  # the bound is the promise under test
    assert catalogue("m-0") is first
    catalogue("m-1024")
    assert len(catalogue._memo) == 1
    assert catalogue("m-0") is not first
    assert catalogue("m-0") == first
