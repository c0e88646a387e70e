"""What a per-call histogram point (operation duration, time to first chunk) must look like."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import HistogramDataPoint

from symfonic_otel import semconv


def assert_react_call_point(attrs: dict[str, Any], point: Any, seconds: float) -> None:
    """One gpt-4o call of the ``react`` node, ``seconds`` long: the attribute set of the GenAI
    conventions plus the node (no tenant, no run id: bounded series), GenAI's bucket bounds."""
    assert attrs == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "symfonic.node.name": "react",
    }
    assert isinstance(point, HistogramDataPoint)
    assert point.count == 1 and point.sum == pytest.approx(seconds)
    assert list(point.explicit_bounds) == list(semconv.GEN_AI_DURATION_BUCKETS)
