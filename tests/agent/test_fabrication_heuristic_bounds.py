"""The heuristic fabrication detector at its bounds, and the revision it may ask for.

Each rule has a threshold (figures from 10, previews of 240 characters, 16 findings at most),
two places a ran tool's name can come from (its result, or the call that its id answers), and a
comparison that must ignore case; a blank revision must keep the draft.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from symfonic_otel.agent import FrameworkConfig, ReactAgent, heuristic_fabrication_detector
from symfonic_otel.agent.fabrication import MAX_FINDINGS, PREVIEW_CHARS, FabricationFinding
from symfonic_otel.agent.fabrication import preview as preview_of
from symfonic_otel.testing.scripted import ScriptedChatModel
from tests.support.agent_support import TOOLS, turn

QUESTION: list[BaseMessage] = [HumanMessage(content="What is the status?")]


def _kinds(draft: str, messages: list[BaseMessage] = QUESTION) -> list[tuple[str, str]]:
    return [(f.kind, f.claim) for f in heuristic_fabrication_detector(draft, messages)]


def test_a_preview_is_cut_only_past_its_length() -> None:
    assert preview_of("x" * PREVIEW_CHARS) == ("x" * PREVIEW_CHARS, False)
    assert preview_of("x" * (PREVIEW_CHARS + 1)) == ("x" * PREVIEW_CHARS, True)


def test_figures_from_ten_are_checked_smaller_whole_ones_are_not() -> None:
    assert _kinds("It took 9 steps.") == []
    assert _kinds("It took 10 steps.") == [("unsupported_number", "10")]


def test_a_figure_repeated_is_one_finding() -> None:
    assert _kinds("Pay 42 now, 42 later.") == [("unsupported_number", "42")]


def test_findings_stop_at_their_cap() -> None:
    draft = " ".join(str(n) for n in range(100, 100 + MAX_FINDINGS + 4))
    assert len(heuristic_fabrication_detector(draft, QUESTION)) == MAX_FINDINGS


def test_a_tool_result_without_a_name_is_named_by_the_call_it_answers() -> None:
    call = {"name": "send_email", "args": {}, "id": "call_1", "type": "tool_call"}
    messages: list[BaseMessage] = [
        *QUESTION,
        AIMessage(content="", tool_calls=[call]),
        ToolMessage(content="queued", tool_call_id="call_1"),  # no name on the result
    ]
    assert _kinds("I have sent the email.", messages) == []


def test_a_url_is_supported_whatever_its_case() -> None:
    messages: list[BaseMessage] = [HumanMessage(content="See https://example.com/docs/page")]
    assert _kinds("Read HTTPS://EXAMPLE.COM/docs/page first.", messages) == []


def test_evidence_in_a_finding_payload_is_cut_to_the_preview_length() -> None:
    finding = FabricationFinding("unsupported_url", "u", 0.7, "e" * (PREVIEW_CHARS + 50))
    assert finding.to_event_payload()["evidence"] == "e" * PREVIEW_CHARS


async def test_a_blank_revision_keeps_the_draft() -> None:
    draft = "I have cancelled your order."
    model = ScriptedChatModel([turn(draft, finish="stop"), turn("  \n ")])
    agent = ReactAgent(model, TOOLS, config=FrameworkConfig(fabrication_check="revise"))
    response = await agent.run("cancel it")
    assert response.final_response == draft
