"""Model prices, for the ``symfonic.llm.cost.usd`` counter.

List prices in USD per million tokens, as published by each provider for standard (non-batch,
non-cached) usage. Prices change: pass ``pricing=`` to the handler to override or extend them. A
model found in no table is *unknown*: the handler marks it ``symfonic.llm.pricing_unknown`` and
records no cost rather than guess one.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelPrice:
    """USD per million input and output tokens."""

    input_per_million: float
    output_per_million: float

    def __post_init__(self) -> None:
        for name in ("input_per_million", "output_per_million"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                raise ValueError(f"ModelPrice.{name} must be a non-negative number, got {value!r}")

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (
            input_tokens * self.input_per_million + output_tokens * self.output_per_million
        ) / 1_000_000


# Keys are model-name prefixes: the longest matching prefix wins, so dated snapshots
# ("gpt-4o-2024-08-06") and provider-prefixed ids resolve to their family.
DEFAULT_PRICES: Mapping[str, ModelPrice] = {
    "gpt-4o": ModelPrice(2.50, 10.00),
    "gpt-4o-mini": ModelPrice(0.15, 0.60),
    "gpt-4.1": ModelPrice(2.00, 8.00),
    "gpt-4.1-mini": ModelPrice(0.40, 1.60),
    "gpt-4.1-nano": ModelPrice(0.10, 0.40),
    "gpt-5": ModelPrice(1.25, 10.00),
    "gpt-5-mini": ModelPrice(0.25, 2.00),
    "gpt-5-nano": ModelPrice(0.05, 0.40),
    "o3": ModelPrice(2.00, 8.00),
    "o4-mini": ModelPrice(1.10, 4.40),
    "claude-opus-4": ModelPrice(15.00, 75.00),
    "claude-sonnet-4": ModelPrice(3.00, 15.00),
    "claude-3-5-haiku": ModelPrice(0.80, 4.00),
    "claude-haiku-4-5": ModelPrice(1.00, 5.00),
}

_MEMO_CAP = 1024


class PriceTable:
    """Longest-prefix lookup over the defaults plus user overrides, memoised per model name."""

    def __init__(self, overrides: Mapping[str, ModelPrice] | None = None) -> None:
        table = dict(DEFAULT_PRICES)
        if overrides is not None:
            if not isinstance(overrides, Mapping):
                raise TypeError("pricing must be a mapping of model name to ModelPrice")
            for model, price in overrides.items():
                if not isinstance(model, str) or not model:
                    raise ValueError(f"pricing keys must be non-empty model names, got {model!r}")
                if not isinstance(price, ModelPrice):
                    raise TypeError(f"pricing[{model!r}] must be a ModelPrice, got {price!r}")
                table[model.lower()] = price
        # Longest prefixes first, so "gpt-4o-mini" wins over "gpt-4o".
        self._prefixes = sorted(table.items(), key=lambda item: len(item[0]), reverse=True)
        self._memo: dict[str, ModelPrice | None] = {}
        self._lock = threading.Lock()

    def lookup(self, model: str) -> ModelPrice | None:
        try:
            return self._memo[model]
        except KeyError:
            pass
        key = model.lower().rsplit("/", 1)[-1]  # "openai/gpt-4o" -> "gpt-4o"
        found = next((price for prefix, price in self._prefixes if key.startswith(prefix)), None)
        with self._lock:
            if len(self._memo) >= _MEMO_CAP:
                self._memo.clear()
            self._memo[model] = found
        return found
