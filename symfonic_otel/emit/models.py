"""What the handler knows per model name, memoised: label, provider, price and span name.

An LLM call of a model seen before then does no regex matching, price lookup or formatting.
The memo is bounded even when model names never repeat.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from symfonic_otel import semconv
from symfonic_otel.emit.pricing import ModelPrice, PriceTable
from symfonic_otel.read.providers import infer_provider

_MEMO_CAP: Final = 1024


@dataclass(frozen=True, slots=True)
class ModelInfo:
    label: str  # the bounded metric label
    provider: str | None  # the bounded provider label inferred from the name, if any
    price: ModelPrice | None
    span_name: str


class ModelCatalogue:
    def __init__(
        self,
        pricing: Mapping[str, ModelPrice] | None,
        model_label: Callable[[str], str],
        provider_label: Callable[[str], str],
    ) -> None:
        self._prices = PriceTable(pricing)
        self._model_label = model_label
        self._provider_label = provider_label
        self._memo: dict[str, ModelInfo] = {}

    def __call__(self, model: str) -> ModelInfo:
        """``model`` is already cleaned and capped (see ``extract.name_text``)."""
        info = self._memo.get(model)
        if info is not None:
            return info
        provider = infer_provider(model)
        info = ModelInfo(
            label=self._model_label(model) if model else "",
            provider=self._provider_label(provider) if provider else None,
            price=self._prices.lookup(model) if model else None,
            span_name=semconv.chat_span_name(model),
        )
        if len(self._memo) >= _MEMO_CAP:
            self._memo.clear()
        self._memo[model] = info
        return info
