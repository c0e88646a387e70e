"""What particular provider adapters put where, read into the semconv shape.

LangChain's provider packages agree on ``usage_metadata`` and ``response_metadata`` only in part:
langchain-anthropic moves cache writes into a per-TTL split, the OpenAI Responses API reports no
finish reason (only a status and why it was incomplete), and ``ls_provider`` names are
LangChain's, not the GenAI semconv ``gen_ai.provider.name`` values. Each reader is guarded: a
shape it does not know leaves the value as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from symfonic_otel.agent import termination
from symfonic_otel.read.extract import Usage

__all__ = ["incomplete_reason", "semconv_provider", "with_cache_write_split"]

# LangChain ``ls_provider`` -> semconv ``gen_ai.provider.name`` where the two differ; a name
# not listed (``openai``, ``anthropic``, ``ollama``, ``groq``, ``deepseek``...) is kept as is.
_PROVIDERS: Final[Mapping[str, str]] = {
    "google_genai": "gcp.gemini",
    "google_vertexai": "gcp.vertex_ai",
    "google_anthropic_vertex": "gcp.vertex_ai",
    "azure": "azure.ai.openai",
    "amazon_bedrock": "aws.bedrock",
    "bedrock": "aws.bedrock",
    "mistral": "mistral_ai",
    "mistralai": "mistral_ai",
    "xai": "x_ai",
    "ibm": "ibm.watsonx.ai",
}
# langchain-anthropic: when Anthropic splits cache writes by TTL, ``cache_creation`` is set to 0
# and the writes are only in these keys (so they are not counted twice).
_CACHE_WRITE_SPLIT: Final = ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")
_MAX_TOKENS: Final = 2**53


def semconv_provider(provider: str | None) -> str | None:
    """The semconv name of a LangChain provider name (``google_genai`` -> ``gcp.gemini``)."""
    if provider is None:
        return None
    return _PROVIDERS.get(provider.lower(), provider)


def _count(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= _MAX_TOKENS:
        return 0
    return raw


def with_cache_write_split(usage: Usage, usage_metadata: Mapping[str, Any]) -> Usage:
    """``usage`` (a fresh reading) with the cache writes langchain-anthropic only reports split
    by TTL (today's Anthropic usage) when it found none. They are part of ``input_tokens``."""
    details = usage_metadata.get("input_token_details")
    if usage.cache_creation_tokens or not isinstance(details, Mapping):
        return usage
    written = sum(_count(details.get(key)) for key in _CACHE_WRITE_SPLIT)
    if written:
        usage.cache_creation_tokens = written
        usage.cache_in_input = True
    return usage


def incomplete_reason(message: object) -> str | None:
    """Why an OpenAI Responses API response stopped short: its only finish reason."""
    metadata = getattr(message, "response_metadata", None)
    return termination.incomplete_reason(metadata) if isinstance(metadata, Mapping) else None
