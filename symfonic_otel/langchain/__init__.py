"""LangChain / LangGraph adapter: ``LangChainCallbackHandler`` and its parts.

``callbacks`` (the entry points), ``translate`` (runs -> core events), ``runs`` (run-tree
state), ``extract`` (payload readers), ``errors`` (how a run ended).
"""

from __future__ import annotations

from symfonic_otel.langchain.callbacks import LangChainCallbackHandler

__all__ = ["LangChainCallbackHandler"]
