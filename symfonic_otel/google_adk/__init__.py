"""Google ADK adapter: ``SymfonicPlugin``, an ADK plugin for ``Runner(plugins=[...])``.

``plugin`` (the runner, model and tool callbacks -> the core handler), ``read`` (a model
response's shape and usage). Needs the ``google-adk`` extra; the core package never imports this.
"""

from __future__ import annotations

try:
    import google.adk as _adk  # noqa: F401  (fail here, with the extra's name)
except ImportError as exc:  # pragma: no cover - exercised in an environment without it
    raise ImportError(
        "symfonic_otel.google_adk needs Google ADK: "
        "pip install -e '.[google-adk]' from a checkout of symfonic-otel"
    ) from exc

from symfonic_otel.google_adk.plugin import SymfonicPlugin

__all__ = ["SymfonicPlugin"]
