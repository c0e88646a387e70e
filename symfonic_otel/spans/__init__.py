"""Silent bails from other instrumentations' GenAI spans: ``SilentBailSpanProcessor``.

Install it on the ``TracerProvider`` that OpenLLMetry, OpenInference, OpenTelemetry's GenAI
instrumentations or Pydantic AI export through; it records this package's run, silent-bail and
stop-reason metrics per tenant and makes no spans of its own.
"""

from __future__ import annotations

from symfonic_otel.spans.processor import SilentBailSpanProcessor

__all__ = ["SilentBailSpanProcessor"]
