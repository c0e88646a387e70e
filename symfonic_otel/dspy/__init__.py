"""DSPy adapter: ``SymfonicCallback``, a DSPy callback for ``dspy.configure(callbacks=[...])``.

``callback`` (module, LM and tool callbacks -> the core handler), ``read`` (a prediction's
answer, an LM call's output and usage, ReAct's structure). Needs the ``dspy`` extra; the core
package never imports this.
"""

from __future__ import annotations

try:
    import dspy as _dspy  # noqa: F401  (fail here, with the extra's name)
except ImportError as exc:  # pragma: no cover - exercised in an environment without it
    raise ImportError(
        "symfonic_otel.dspy needs DSPy: pip install -e '.[dspy]' from a checkout of symfonic-otel"
    ) from exc

from symfonic_otel.dspy.callback import SymfonicCallback

__all__ = ["SymfonicCallback"]
