"""Model prices, for the ``symfonic.llm.cost.usd`` counter.

List prices in USD per million tokens, as published by each provider for standard (non-batch)
usage, with the cache prices where the provider publishes them. Prices change: pass ``pricing=``
to the handler to override or extend them. A model found in no table is *unknown*: the handler
marks it ``symfonic.llm.pricing_unknown`` and records no cost rather than guess one.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

from symfonic_otel.read.sanitise import is_real


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens: input, output, and optionally cached input.

    ``cache_read_per_million`` prices input tokens served from the provider's prompt cache and
    ``cache_creation_per_million`` those written to it; either left ``None`` is priced as plain
    input (what the provider bills when it has no cache tier), never guessed lower.
    ``cache_creation_1h_per_million`` prices writes with a one-hour lifetime (Anthropic bills
    them above the default five-minute ones); ``None`` prices them as other writes.
    """

    input_per_million: float
    output_per_million: float
    cache_read_per_million: float | None = None
    cache_creation_per_million: float | None = None
    cache_creation_1h_per_million: float | None = None

    def __post_init__(self) -> None:
        for name in (
            "input_per_million",
            "output_per_million",
            "cache_read_per_million",
            "cache_creation_per_million",
            "cache_creation_1h_per_million",
        ):
            value = getattr(self, name)
            if value is None and name.startswith("cache_"):
                continue
            if not is_real(value) or value < 0:
                raise ValueError(f"ModelPrice.{name} must be a non-negative number, got {value!r}")

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int = 0,
        cache_creation_tokens: int = 0,
        cache_creation_1h_tokens: int = 0,
    ) -> float:
        """USD for one call; ``input_tokens`` excludes the cache tokens passed separately, and
        ``cache_creation_1h_tokens`` is the part of ``cache_creation_tokens`` kept for an hour."""
        read = self.cache_read_per_million
        created = self.input_per_million
        if self.cache_creation_per_million is not None:
            created = self.cache_creation_per_million
        created_1h = created
        if self.cache_creation_1h_per_million is not None:
            created_1h = self.cache_creation_1h_per_million
        one_hour = min(max(cache_creation_1h_tokens, 0), cache_creation_tokens)
        return (
            input_tokens * self.input_per_million
            + output_tokens * self.output_per_million
            + cache_read_tokens * (self.input_per_million if read is None else read)
            + (cache_creation_tokens - one_hour) * created
            + one_hour * created_1h
        ) / 1_000_000


# Keys are model-name prefixes: the longest matching prefix wins, so dated snapshots
# ("gpt-4o-2024-08-06") and provider-prefixed ids resolve to their family.
# OpenAI bills cached input at its "cached input" price and cache writes as plain input;
# Anthropic bills cache reads at 0.1x and 5-minute cache writes at 1.25x the input price.
DEFAULT_PRICES: Mapping[str, ModelPrice] = {
    "gpt-4o": ModelPrice(2.50, 10.00, 1.25),
    "gpt-4o-mini": ModelPrice(0.15, 0.60, 0.075),
    "gpt-4.1": ModelPrice(2.00, 8.00, 0.50),
    "gpt-4.1-mini": ModelPrice(0.40, 1.60, 0.10),
    "gpt-4.1-nano": ModelPrice(0.10, 0.40, 0.025),
    "gpt-5": ModelPrice(1.25, 10.00, 0.125),
    "gpt-5-mini": ModelPrice(0.25, 2.00, 0.025),
    "gpt-5-nano": ModelPrice(0.05, 0.40, 0.005),
    "o3": ModelPrice(2.00, 8.00, 0.50),
    "o4-mini": ModelPrice(1.10, 4.40, 0.275),
    # Anthropic: five-minute cache writes at 1.25x input, one-hour writes at 2x.
    "claude-opus-4": ModelPrice(15.00, 75.00, 1.50, 18.75, 30.00),
    "claude-sonnet-4": ModelPrice(3.00, 15.00, 0.30, 3.75, 6.00),
    "claude-3-5-haiku": ModelPrice(0.80, 4.00, 0.08, 1.00, 1.60),
    "claude-haiku-4-5": ModelPrice(1.00, 5.00, 0.10, 1.25, 2.00),
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
        # In reverse order every extension of a prefix comes before it ("gpt-4o-mini" before
        # "gpt-4o"): the first prefix a name starts with is the longest.
        self._prefixes = [(prefix, table[prefix]) for prefix in sorted(table, reverse=True)]
        self._memo: dict[str, ModelPrice | None] = {}
        self._lock = threading.Lock()

    def lookup(self, model: str) -> ModelPrice | None:
        try:
            return self._memo[model]
        except KeyError:
            pass
        model = model[:256]  # no model name is longer; bounds the memo in bytes
        key = model.lower().rsplit("/", 1)[-1]  # "openai/gpt-4o" -> "gpt-4o"
        found = next((price for prefix, price in self._prefixes if key.startswith(prefix)), None)
        with self._lock:
            if len(self._memo) >= _MEMO_CAP:
                self._memo.clear()
            self._memo[model] = found
        return found


def priced(model: object) -> bool:
    """Whether the default prices, as they stand now (no handler's overrides), price ``model``.

    A table is built per call so an edit of ``DEFAULT_PRICES`` counts at once; this serves
    ``LLMEndEvent.typed_usage``, which is read on demand, not per event by the handler.
    """
    if not isinstance(model, str) or not model:
        return False
    return PriceTable().lookup(model) is not None
