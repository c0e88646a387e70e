"""A captured draft preview says it was cut when either side cut it: the detector (its own
``preview_truncated``) or this package, whose capture limit cuts a longer preview (the detector
saying ``False`` does not make a cut preview whole)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.read.content import MAX_CONTENT_CHARS
from symfonic_otel.testing.telemetry import InMemoryTelemetry


@pytest.mark.parametrize(
    ("draft_chars", "detector_cut", "cut"),
    [
        (MAX_CONTENT_CHARS, False, False),
        (MAX_CONTENT_CHARS + 1, False, True),
        (10, True, True),
        (MAX_CONTENT_CHARS + 1, True, True),
    ],
    ids=["at-the-limit", "one-past-the-limit", "cut-by-the-detector", "cut-by-both"],
)
def test_the_preview_is_flagged_cut_by_either_side(
    telemetry: InMemoryTelemetry, draft_chars: int, detector_cut: bool, cut: bool
) -> None:
    handler = telemetry.handler(capture_content=True)
    handler.agent_start(AgentStartEvent("q", "r"))
    handler.fabrication_detected(
        SimpleNamespace(
            run_id="r",
            mode="observe",
            action_taken="observed",
            max_finding_confidence=0.7,
            original_draft_preview="d" * draft_chars,
            preview_truncated=detector_cut,
        )
    )
    handler.agent_end(AgentEndEvent("r", "answer", 1.0, 1))
    run = telemetry.span("invoke_agent symfonic")
    [event] = [e for e in run.events if e.name == semconv.EVENT_FABRICATION_DETECTED]
    attributes = dict(event.attributes or {})
    assert attributes[semconv.FABRICATION_PREVIEW_TRUNCATED] is cut
    preview = attributes[semconv.FABRICATION_DRAFT_PREVIEW]
    assert isinstance(preview, str)
    assert len(preview) == min(draft_chars, MAX_CONTENT_CHARS)
