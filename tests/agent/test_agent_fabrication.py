"""The fabrication check: heuristic detector, modes, thresholds, previews, custom detectors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from structlog.testing import capture_logs

from symfonic_otel.agent import (
    SAFE_ENVELOPE,
    FabricationFinding,
    FrameworkConfig,
    ReactAgent,
    StreamFinal,
    heuristic_fabrication_detector,
)
from symfonic_otel.events import FabricationDetectedEvent
from symfonic_otel.semconv import NODE_FABRICATION_REVISE
from symfonic_otel.testing.scripted import ScriptedChatModel
from tests.support.agent_support import TOOLS, Recorder, call, turn


def conversation(*tool_results: tuple[str, str], user: str = "question") -> list[BaseMessage]:
    messages: list[BaseMessage] = [HumanMessage(content=user)]
    for index, (name, result) in enumerate(tool_results):
        messages.append(AIMessage(content="", tool_calls=[call(name, {}, f"h{index}")]))
        messages.append(ToolMessage(content=result, tool_call_id=f"h{index}", name=name))
    return messages


# --- heuristic detector -----------------------------------------------------------------------


def test_action_claim_with_no_tool_run_is_strong() -> None:
    [finding] = heuristic_fabrication_detector(
        "Done! I have sent the email to Bob.", conversation()
    )
    assert (finding.kind, finding.claim, finding.confidence) == (
        "unperformed_action",
        "I have sent",
        0.9,
    )


def test_action_claim_backed_by_a_matching_tool_is_not_reported() -> None:
    messages = conversation(("send_email", "queued"))
    assert heuristic_fabrication_detector("I have sent the email.", messages) == []


def test_action_claim_with_unrelated_tools_is_weaker() -> None:
    [finding] = heuristic_fabrication_detector(
        "I booked the flight.", conversation(("search_flights", "3 flights"))
    )
    assert (finding.kind, finding.confidence) == ("unperformed_action", 0.6)


def test_failed_tool_does_not_back_an_action_claim() -> None:
    messages = conversation()
    messages.append(AIMessage(content="", tool_calls=[call("send_email", {}, "f1")]))
    messages.append(ToolMessage(content="Error: smtp down", tool_call_id="f1", status="error"))
    [finding] = heuristic_fabrication_detector("I sent it.", messages)
    assert finding.confidence == 0.9


def test_urls_and_figures_must_appear_in_tool_output_or_user_messages() -> None:
    messages = conversation(
        ("search", "See https://example.org/a for 1,234 units at 12.5% margin."),
        user="Compare with 2023.",
    )
    draft = (
        "Per https://example.org/a there are 1234 units at 12.5% margin, unlike 2023. "
        "More at https://made-up.example/b. Revenue was 98,000 and step 3 is easy."
    )
    findings = heuristic_fabrication_detector(draft, messages)
    assert [(f.kind, f.claim, f.confidence) for f in findings] == [
        ("unsupported_url", "https://made-up.example/b", 0.7),
        ("unsupported_number", "98,000", 0.5),
    ]


def test_finding_payload_and_validation() -> None:
    finding = FabricationFinding("unsupported_url", "x" * 300, 0.7, "why")
    payload = finding.to_event_payload()
    assert payload == {
        "kind": "unsupported_url",
        "claim": "x" * 240,
        "confidence": 0.7,
        "evidence": "why",
    }
    with pytest.raises(ValueError, match="confidence"):
        FabricationFinding("k", "c", 1.2)


# --- modes --------------------------------------------------------------------------------------

DRAFT = "I have cancelled your order and refunded 120 dollars."


def agent_with(
    mode: str, script: list[Any], **config: Any
) -> tuple[ReactAgent, Recorder, ScriptedChatModel]:
    model = ScriptedChatModel(script)
    recorder = Recorder()
    agent = ReactAgent(
        model,
        TOOLS,
        config=FrameworkConfig(fabrication_check=mode, **config),  # type: ignore[arg-type]
        callbacks=[recorder],
    )
    return agent, recorder, model


async def test_observe_emits_the_event_and_keeps_the_draft() -> None:
    agent, recorder, model = agent_with("observe", [turn(DRAFT, finish="stop")])
    response = await agent.run("cancel my order", run_id="f1")

    assert response.final_response == DRAFT
    assert len(model.calls) == 1
    [event] = recorder.of("fabrication_detected")
    assert isinstance(event, FabricationDetectedEvent)
    assert (event.run_id, event.mode, event.action_taken) == ("f1", "observe", "observed")
    assert event.findings == [f.to_event_payload() for f in response.fabrication_findings]
    assert [f["kind"] for f in event.findings] == ["unperformed_action", "unsupported_number"]
    assert (event.refuse_threshold, event.max_finding_confidence) == (0.8, 0.9)
    assert (event.original_draft_preview, event.replacement_preview) == (DRAFT, None)
    assert event.preview_truncated is False
    assert recorder.kinds()[-2:] == ["fabrication_detected", "agent_end"]


async def test_revise_makes_one_revision_call_without_tools() -> None:
    revised = "I can't confirm the cancellation: no tool was run."
    agent, recorder, model = agent_with("revise", [turn(DRAFT, finish="stop"), turn(revised)])
    response = await agent.run("cancel my order")

    assert response.final_response == revised
    assert len(model.calls) == 2
    revision = model.calls[1]
    assert revision.tools_bound is False
    [prompt] = revision.messages
    assert DRAFT in str(prompt.content) and "unperformed_action" in str(prompt.content)
    assert recorder.of("fabrication_detected")[0].action_taken == "revise_forced"
    assert recorder.of("fabrication_detected")[0].replacement_preview is None
    llm = recorder.of("llm_end")
    assert [e.node_name for e in llm] == ["react", NODE_FABRICATION_REVISE]
    assert llm[1].iteration_index == 1
    assert recorder.of("agent_end")[0].final_response == revised


async def test_revise_keeps_the_draft_when_the_revision_is_empty() -> None:
    agent, _, model = agent_with("revise", [turn(DRAFT, finish="stop"), turn("")])
    assert (await agent.run("q")).final_response == DRAFT
    assert len(model.calls) == 2


async def test_refuse_replaces_the_draft_at_or_above_the_threshold() -> None:
    agent, recorder, model = agent_with("refuse", [turn(DRAFT, finish="stop")])
    response = await agent.run("cancel my order")
    assert response.final_response == SAFE_ENVELOPE
    assert len(model.calls) == 1
    [event] = recorder.of("fabrication_detected")
    assert event.action_taken == "refuse_replaced"
    assert event.replacement_preview == SAFE_ENVELOPE[:240]
    assert recorder.of("agent_end")[0].final_response == SAFE_ENVELOPE


async def test_refuse_below_the_threshold_keeps_the_draft() -> None:
    draft = "The total is 4,321."  # a figure (0.5) only
    agent, recorder, _ = agent_with(
        "refuse", [turn(draft, finish="stop")], fabrication_refuse_min_confidence=0.6
    )
    response = await agent.run("total?")
    assert response.final_response == draft
    [event] = recorder.of("fabrication_detected")
    assert (event.action_taken, event.max_finding_confidence) == ("observed", 0.5)
    assert event.replacement_preview is None


@pytest.mark.parametrize(("confidence", "refused"), [(0.7, True), (0.69, False)])
async def test_refuse_at_exactly_the_threshold_replaces_the_draft(
    confidence: float, refused: bool
) -> None:
    """``fabrication_refuse_min_confidence`` is the lowest confidence refused: a finding at
    exactly that value is refused, one just under it is not."""

    def detector(draft: str, messages: list[BaseMessage]) -> list[FabricationFinding]:
        return [FabricationFinding("custom", "the claim", confidence)]

    agent, recorder, _ = agent_with(
        "refuse",
        [turn(DRAFT, finish="stop")],
        fabrication_detector=detector,
        fabrication_refuse_min_confidence=0.7,
    )
    response = await agent.run("q")
    assert (response.final_response == SAFE_ENVELOPE) is refused
    [event] = recorder.of("fabrication_detected")
    assert event.action_taken == ("refuse_replaced" if refused else "observed")


async def test_long_draft_previews_are_truncated() -> None:
    draft = "I have deleted the file. " + "padding " * 60
    agent, recorder, _ = agent_with("observe", [turn(draft, finish="stop")])
    await agent.run("q")
    [event] = recorder.of("fabrication_detected")
    assert event.original_draft_preview == draft[:240]
    assert event.preview_truncated is True


async def test_custom_async_detector_and_no_event_without_findings() -> None:
    seen: list[tuple[str, int]] = []

    async def detector(draft: str, messages: list[BaseMessage]) -> list[FabricationFinding]:
        seen.append((draft, len(messages)))
        return [FabricationFinding("custom", "the claim", 0.95)] if "bad" in draft else []

    agent, recorder, _ = agent_with(
        "refuse",
        [turn("good answer", finish="stop"), turn("bad answer", finish="stop")],
        fabrication_detector=detector,
    )
    assert (await agent.run("one")).final_response == "good answer"
    assert recorder.of("fabrication_detected") == []
    assert (await agent.run("two")).final_response == SAFE_ENVELOPE
    assert seen == [("good answer", 2), ("bad answer", 2)]
    assert recorder.of("fabrication_detected")[0].findings == [
        {"kind": "custom", "claim": "the claim", "confidence": 0.95, "evidence": None}
    ]


async def test_off_never_calls_the_detector() -> None:
    def detector(draft: str, messages: list[BaseMessage]) -> list[FabricationFinding]:
        raise AssertionError("must not be called")

    agent, recorder, _ = agent_with(
        "off", [turn(DRAFT, finish="stop")], fabrication_detector=detector
    )
    assert (await agent.run("q")).final_response == DRAFT
    assert recorder.of("fabrication_detected") == []


async def test_raising_detector_keeps_the_draft_and_logs() -> None:
    def detector(draft: str, messages: list[BaseMessage]) -> list[FabricationFinding]:
        raise RuntimeError(f"detector bug on {draft}")

    agent, _recorder, _ = agent_with(
        "refuse", [turn(DRAFT, finish="stop")], fabrication_detector=detector
    )
    with capture_logs() as logs:
        response = await agent.run("q")
    assert response.final_response == DRAFT
    assert [e["error_type"] for e in logs if e["log_level"] == "warning"] == ["RuntimeError"]
    assert DRAFT not in json.dumps(logs, default=repr)  # neither the message nor a traceback


async def test_failing_revision_call_keeps_the_draft() -> None:
    agent, recorder, model = agent_with(
        "revise", [turn(DRAFT, finish="stop"), TimeoutError("revision timed out")]
    )
    response = await agent.run("q")
    assert response.final_response == DRAFT
    assert len(model.calls) == 2
    revision = recorder.of("llm_end")[-1]
    assert (revision.outcome, revision.error_type) == ("error", "TimeoutError")
    assert recorder.of("agent_end")[0].outcome == "completed"


async def test_streaming_revise_only_observes_but_refuse_still_replaces() -> None:
    agent, recorder, model = agent_with("revise", [turn(DRAFT, finish="stop"), turn("unused")])
    events = [e async for e in agent.stream("q")]
    assert isinstance(events[-1], StreamFinal) and events[-1].final_response == DRAFT
    assert len(model.calls) == 1
    assert recorder.of("fabrication_detected")[0].action_taken == "observed"

    agent, _, _ = agent_with("refuse", [turn(DRAFT, finish="stop")])
    events = [e async for e in agent.stream("q")]
    assert isinstance(events[-1], StreamFinal) and events[-1].final_response == SAFE_ENVELOPE


async def test_tool_backed_answer_passes_the_check() -> None:
    agent, recorder, _ = agent_with(
        "refuse",
        [
            turn("", call("lookup", {"key": "sku42"}), finish="tool_calls"),
            turn("I checked: the catalogue says value-of-sku42.", finish="stop"),
        ],
    )
    response = await agent.run("look up sku42")
    assert response.final_response == "I checked: the catalogue says value-of-sku42."
    assert recorder.of("fabrication_detected") == []
