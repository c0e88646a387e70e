"""LlamaIndex adapter: ``SymfonicLlamaIndex``, span and event handlers on its instrumentation
dispatcher, for ``FunctionAgent`` / ``ReActAgent`` / ``AgentWorkflow`` runs.

``instrument`` (the dispatcher's hooks -> the invocation layer's run model), ``steps`` (what
only LlamaIndex records about a run), ``reading`` (a chat response and a step's event, read by
structure). Needs the ``llama-index`` extra; the core package never imports this.
"""

from __future__ import annotations

from symfonic_otel.invocation.extras import require

require(
    "llama_index.core",
    __name__,
    "LlamaIndex",
    "pip install -e '.[llama-index]' from a checkout of symfonic-otel",
)

from symfonic_otel.llama_index.instrument import SymfonicLlamaIndex  # noqa: E402  (after the check)

__all__ = ["SymfonicLlamaIndex"]
