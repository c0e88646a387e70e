"""LlamaIndex adapter: ``SymfonicLlamaIndex``, span and event handlers on its instrumentation
dispatcher, for ``FunctionAgent`` / ``ReActAgent`` / ``AgentWorkflow`` runs.

``instrument`` (the dispatcher's hooks -> the invocation layer's run model), ``steps`` (what
only LlamaIndex records about a run), ``reading`` (a chat response and a step's event, read by
structure). Needs the ``llama-index`` extra; the core package never imports this.
"""

from __future__ import annotations

try:
    import llama_index.core as _llama_index  # noqa: F401  (fail here, with the extra's name)
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without it
    raise ImportError(
        "symfonic_otel.llama_index needs LlamaIndex: "
        "pip install -e '.[llama-index]' from a checkout of symfonic-otel"
    ) from exc

from symfonic_otel.llama_index.instrument import SymfonicLlamaIndex

__all__ = ["SymfonicLlamaIndex"]
