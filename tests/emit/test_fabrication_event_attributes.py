"""A fabrication detection as telemetry: its span event (what it reads, its bounds) and metrics.

Detections arrive duck-typed (Symfonic's own event, an adapter's object): the fields past the
mode, action and confidence may be missing or malformed, and the event is still recorded. The
finding kinds are a bounded, sanitised list: the first 1,024 findings are read, each kind cut to
64 bytes; every finding is counted. The detection counter and the confidence histogram have
one series per (mode, action) pair the detector makes; any other pair reads ``_OTHER``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from symfonic_otel import semconv
from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.read.content import MAX_CONTENT_CHARS
from symfonic_otel.testing.telemetry import InMemoryTelemetry

MAX_FINDINGS_READ = 1024


def _detection_event(telemetry: InMemoryTelemetry, detection: object) -> dict[str, Any]:
    """The attributes of the run's fabrication event after ``detection``, content captured."""
    handler = telemetry.handler(capture_content=True)
    handler.agent_start(AgentStartEvent("q", "r"))
    handler.fabrication_detected(detection)
    handler.agent_end(AgentEndEvent("r", "answer", 1.0, 1))
    run = telemetry.span("invoke_agent symfonic")
    [event] = [e for e in run.events if e.name == semconv.EVENT_FABRICATION_DETECTED]
    return dict(event.attributes or {})


def _detection(**fields: object) -> SimpleNamespace:
    return SimpleNamespace(
        run_id="r", mode="observe", action_taken="observed", max_finding_confidence=0.7, **fields
    )


def test_a_detection_with_only_its_required_fields_is_recorded(
    telemetry: InMemoryTelemetry,
) -> None:
    assert _detection_event(telemetry, _detection()) == {
        semconv.FABRICATION_MODE: "observe",
        semconv.FABRICATION_ACTION: "observed",
        semconv.FABRICATION_MAX_CONFIDENCE: 0.7,
        semconv.FABRICATION_FINDINGS: 0,
        semconv.FABRICATION_FINDING_KINDS: (),
        semconv.FABRICATION_DRAFT_PREVIEW: "",  # no draft: empty, not "None"
        semconv.FABRICATION_PREVIEW_TRUNCATED: False,
    }


@pytest.mark.parametrize("findings", [None, "not a list", 3, {"kind": "a"}])
def test_findings_that_are_not_a_list_count_as_none(
    telemetry: InMemoryTelemetry, findings: object
) -> None:
    event = _detection_event(telemetry, _detection(findings=findings))
    assert event[semconv.FABRICATION_FINDINGS] == 0
    assert event[semconv.FABRICATION_FINDING_KINDS] == ()


def test_findings_without_a_kind_are_counted_but_name_no_kind(
    telemetry: InMemoryTelemetry,
) -> None:
    findings = ["a bare string", {"kind": None}, {"claim": "x"}, 5, {"kind": "unsupported_url"}]
    event = _detection_event(telemetry, _detection(findings=findings))
    assert event[semconv.FABRICATION_FINDINGS] == 5
    assert event[semconv.FABRICATION_FINDING_KINDS] == ("unsupported_url",)


@pytest.mark.parametrize(("count", "late_kind_read"), [(MAX_FINDINGS_READ, True), (1025, False)])
def test_kinds_are_read_from_the_first_1024_findings(
    telemetry: InMemoryTelemetry, count: int, late_kind_read: bool
) -> None:
    findings = [{"kind": "early"}] * (count - 1) + [{"kind": "late"}]
    event = _detection_event(telemetry, _detection(findings=findings))
    assert event[semconv.FABRICATION_FINDINGS] == count  # every finding is counted
    expected = ("early", "late") if late_kind_read else ("early",)
    assert event[semconv.FABRICATION_FINDING_KINDS] == expected


@pytest.mark.parametrize(("length", "kept"), [(64, 64), (65, 64), (300, 64), (10, 10)])
def test_a_finding_kind_is_cut_to_64_bytes(
    telemetry: InMemoryTelemetry, length: int, kept: int
) -> None:
    event = _detection_event(telemetry, _detection(findings=[{"kind": "k" * length}]))
    assert event[semconv.FABRICATION_FINDING_KINDS] == ("k" * kept,)


def test_detections_have_a_series_per_pair_and_other_pairs_fold_into_other(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"))
    for mode, action, confidence in [
        ("observe", "observed", 0.6),
        ("refuse", "refuse_replaced", 0.9),
        ("observe", "refuse_replaced", 0.7),  # no detector makes this pair
        ("observe", "observed", 0.5),
    ]:
        handler.fabrication_detected(
            SimpleNamespace(
                run_id="r", mode=mode, action_taken=action, max_finding_confidence=confidence
            )
        )
    handler.agent_end(AgentEndEvent("r", "answer", 1.0, 1))
    pair = (semconv.FABRICATION_MODE, semconv.FABRICATION_ACTION)
    counted = {
        tuple(attrs[key] for key in pair): value
        for attrs, value in telemetry.points(semconv.FABRICATION_DETECTIONS.name)
    }
    other = (semconv.OTHER_VALUE, semconv.OTHER_VALUE)
    assert counted == {("observe", "observed"): 2, ("refuse", "refuse_replaced"): 1, other: 1}
    confidence_sums = {
        tuple(attrs[key] for key in pair): value.sum  # type: ignore[union-attr]
        for attrs, value in telemetry.points(semconv.FABRICATION_CONFIDENCE.name)
    }
    assert confidence_sums == {
        ("observe", "observed"): pytest.approx(1.1),
        ("refuse", "refuse_replaced"): pytest.approx(0.9),
        other: pytest.approx(0.7),
    }


def _evaluation_event(telemetry: InMemoryTelemetry, findings: list[Any]) -> dict[str, Any]:
    handler = telemetry.handler(capture_content=True)
    handler.agent_start(AgentStartEvent("q", "r"))
    handler.fabrication_detected(_detection(findings=findings))
    handler.agent_end(AgentEndEvent("r", "answer", 1.0, 1))
    run = telemetry.span("invoke_agent symfonic")
    [event] = [e for e in run.events if e.name == semconv.EVENT_EVALUATION_RESULT]
    return dict(event.attributes or {})


def test_captured_evaluation_explains_each_finding_by_kind_and_claim(
    telemetry: InMemoryTelemetry,
) -> None:
    findings = [
        {"kind": "unsupported_figure", "claim": "42% of users"},
        "not a finding",
        {"kind": "unsupported_url", "claim": "example.com/x"},
    ]
    event = _evaluation_event(telemetry, findings)
    assert event[semconv.GEN_AI_EVALUATION_EXPLANATION] == (
        "unsupported_figure: 42% of users; unsupported_url: example.com/x"
    )


def test_captured_evaluation_explanation_is_cut_to_the_capture_limit(
    telemetry: InMemoryTelemetry,
) -> None:
    event = _evaluation_event(telemetry, [{"kind": "k", "claim": "c" * (MAX_CONTENT_CHARS + 10)}])
    explanation = event[semconv.GEN_AI_EVALUATION_EXPLANATION]
    assert explanation == ("k: " + "c" * MAX_CONTENT_CHARS)[:MAX_CONTENT_CHARS]
