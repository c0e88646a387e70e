"""Infer ``gen_ai.provider.name`` from a model name when the caller does not say."""

from __future__ import annotations

import re

# Ordered (pattern, semconv provider name). Only unambiguous families: a wrong provider is worse
# than none, so anything else is left unset.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(gpt-|chatgpt-|o\d(-|$)|text-embedding-|davinci|babbage)"), "openai"),
    (re.compile(r"^claude-"), "anthropic"),
    (re.compile(r"^(qwen|qwq)"), "dashscope"),
    (re.compile(r"^gemini-"), "gcp.gemini"),
    (re.compile(r"^deepseek-"), "deepseek"),
    (re.compile(r"^(mistral|mixtral|codestral|ministral|magistral)"), "mistral_ai"),
    (re.compile(r"^grok-"), "x_ai"),
    (re.compile(r"^command-"), "cohere"),
)


def infer_provider(model: str) -> str | None:
    name = model.strip().lower().rsplit("/", 1)[-1]
    for pattern, provider in _RULES:
        if pattern.match(name):
            return provider
    return None
