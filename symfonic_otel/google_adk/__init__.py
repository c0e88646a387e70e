"""Google ADK adapter: ``SymfonicPlugin``, an ADK plugin for ``Runner(plugins=[...])``.

``plugin`` (the runner, model and tool callbacks -> the invocation layer), ``read`` (a model
response's shape and usage). Needs the ``google-adk`` extra; the core package never imports this.
"""

from __future__ import annotations

from symfonic_otel.invocation.extras import require

require(
    "google.adk",
    __name__,
    "Google ADK",
    "pip install -e '.[google-adk]' from a checkout of symfonic-otel",
)

from symfonic_otel.google_adk.plugin import SymfonicPlugin  # noqa: E402  (after the check)

__all__ = ["SymfonicPlugin"]
