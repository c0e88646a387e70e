"""DSPy adapter: ``SymfonicCallback``, a DSPy callback for ``dspy.configure(callbacks=[...])``.

``callback`` (module, LM and tool callbacks -> the invocation layer), ``read`` (a prediction's
answer, an LM call's output and usage, ReAct's structure). Needs the ``dspy`` extra; the core
package never imports this.
"""

from __future__ import annotations

from symfonic_otel.invocation.extras import require

require(
    "dspy",
    __name__,
    "DSPy",
    "pip install -e '.[dspy]' from a checkout of symfonic-otel",
)

from symfonic_otel.dspy.callback import SymfonicCallback  # noqa: E402  (after the check)

__all__ = ["SymfonicCallback"]
