"""The fabrication check reads an answer, never a blank one.

A run that ends with no text (a silent bail, no synthesis) has nothing to check: the detector
is not called, no ``FabricationDetectedEvent`` is sent, and the answer stays empty.
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage

from symfonic_otel.agent import FabricationFinding, FrameworkConfig, ReactAgent
from symfonic_otel.testing.scripted import ScriptedChatModel
from tests.support.agent_support import TOOLS, Recorder, turn


async def test_a_blank_answer_is_not_checked_for_fabrication() -> None:
    drafts: list[str] = []

    def detector(draft: str, messages: list[BaseMessage]) -> list[FabricationFinding]:
        drafts.append(draft)
        return [FabricationFinding("custom", "the claim", 0.99)]

    recorder = Recorder()
    agent = ReactAgent(
        ScriptedChatModel([turn("  ", finish="stop")]),
        TOOLS,
        config=FrameworkConfig(
            fabrication_check="refuse", fabrication_detector=detector, stop_reason_notes=False
        ),
        callbacks=[recorder],
    )
    response = await agent.run("q")
    assert drafts == []
    assert recorder.of("fabrication_detected") == []
    assert response.final_response == ""
