"""The refuse decision reads the strongest finding, and its threshold admits both ends of [0, 1].

A detector may report several findings in any order: ``refuse`` replaces the draft when the
strongest of them reaches the threshold, not the first one. The threshold is a confidence, so 0
and 1 are valid settings and anything outside them is refused when the config is built.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import BaseMessage

from symfonic_otel.agent import SAFE_ENVELOPE, FabricationFinding, FrameworkConfig, ReactAgent
from symfonic_otel.testing.scripted import ScriptedChatModel
from tests.support.agent_support import TOOLS, Recorder, turn


async def test_refuse_reads_the_strongest_finding_not_the_first() -> None:
    def detector(draft: str, messages: list[BaseMessage]) -> list[FabricationFinding]:
        return [FabricationFinding("weak", "a", 0.2), FabricationFinding("strong", "b", 0.9)]

    recorder = Recorder()
    agent = ReactAgent(
        ScriptedChatModel([turn("a draft", finish="stop")]),
        TOOLS,
        config=FrameworkConfig(
            fabrication_check="refuse",
            fabrication_detector=detector,
            fabrication_refuse_min_confidence=0.8,
        ),
        callbacks=[recorder],
    )
    response = await agent.run("q")
    assert response.final_response == SAFE_ENVELOPE
    [event] = recorder.of("fabrication_detected")
    assert event.max_finding_confidence == 0.9 and event.action_taken == "refuse_replaced"


@pytest.mark.parametrize("threshold", [0.0, 1.0, 0, 1])
def test_a_refuse_threshold_at_either_end_of_the_range_is_valid(threshold: float) -> None:
    config = FrameworkConfig(fabrication_refuse_min_confidence=threshold)
    assert config.fabrication_refuse_min_confidence == threshold


@pytest.mark.parametrize("threshold", [-0.01, 1.01, float("nan"), True])
def test_a_refuse_threshold_outside_the_range_is_refused(threshold: float) -> None:
    with pytest.raises(ValueError, match="fabrication_refuse_min_confidence"):
        FrameworkConfig(fabrication_refuse_min_confidence=threshold)
