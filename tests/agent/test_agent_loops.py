"""Loops through the reference loop: the handler sees each executed tool call and model call.

A scripted model calls the same tool with the same arguments; the tool itself reads the
looping-run count while the run is still running, so "counted at detection" is observed, not
inferred. The loop's own guard (``loop_detection_threshold``) is set high where the handler's
detection is under test, and left at 3 where the loop stops the run itself.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, tool

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.agent import FrameworkConfig, ReactAgent
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.loop_support import all_loop_events, assert_no_text, looping, repeated

SECRET = 424242


def _turn(a: int, call_id: str) -> AIMessage:
    call = {"name": "probe", "args": {"a": a, "b": SECRET}, "id": call_id, "type": "tool_call"}
    return AIMessage(content="", tool_calls=[call])


def _probe(telemetry: InMemoryTelemetry, seen: list[float]) -> BaseTool:
    @tool
    def probe(a: int, b: int) -> int:
        """Add two integers (and note the looping runs counted so far)."""
        seen.append(looping(telemetry))
        return a + b

    return probe


def _run(telemetry: InMemoryTelemetry, turns: list[AIMessage | str], **options: int) -> list[float]:
    seen: list[float] = []
    handler = telemetry.handler(**options)
    agent = ReactAgent(
        ScriptedChatModel(turns),
        [_probe(telemetry, seen)],
        config=FrameworkConfig(loop_detection_threshold=100, recursion_limit=100),
        callbacks=[handler],
    )
    with tenant_scope("acme"):
        agent.run_sync("add")
    return seen


def test_three_identical_calls_loop_while_the_run_runs(telemetry: InMemoryTelemetry) -> None:
    turns: list[AIMessage | str] = [_turn(1, f"c{i}") for i in range(6)] + ["3"]
    seen = _run(telemetry, turns)
    assert seen == [0, 0, 1, 1, 1, 1]  # counted as the third call starts, mid-run
    assert looping(telemetry, semconv.LOOP_REPEATED_TOOL_CALL, tenant__id="acme") == 1
    assert repeated(telemetry, tenant__id="acme") == 5
    (event,) = all_loop_events(telemetry)
    assert event[semconv.GEN_AI_TOOL_NAME] == "probe" and event[semconv.LOOP_COUNT] == 3
    assert_no_text(telemetry, str(SECRET))


def test_two_calls_or_different_arguments_do_not_loop(telemetry: InMemoryTelemetry) -> None:
    _run(telemetry, [_turn(1, "c0"), _turn(1, "c1"), "2"])
    _run(telemetry, [_turn(1, "c0"), _turn(2, "c1"), _turn(3, "c2"), "6"])
    assert looping(telemetry) == 0


def test_the_51st_model_call_is_a_call_budget(telemetry: InMemoryTelemetry) -> None:
    _run(telemetry, [_turn(i, f"c{i}") for i in range(49)] + ["done"])  # 50 model calls
    assert looping(telemetry) == 0
    _run(telemetry, [_turn(i, f"c{i}") for i in range(50)] + ["done"])  # 51
    assert looping(telemetry, semconv.LOOP_CALL_BUDGET) == 1


def test_options_take_effect(telemetry: InMemoryTelemetry) -> None:
    seen = _run(telemetry, [_turn(1, "c0"), _turn(1, "c1"), _turn(1, "c2"), "3"], loop_threshold=2)
    assert seen == [0, 1, 1]


def test_the_loops_own_guard_counts_as_a_looping_run(telemetry: InMemoryTelemetry) -> None:
    """With ``loop_detection_threshold=3`` the loop refuses the third identical call and ends
    the run (two executions): the same verdict, one looping run."""
    handler = telemetry.handler()
    agent = ReactAgent(
        ScriptedChatModel([_turn(1, f"c{i}") for i in range(3)] + ["3"]),
        [_probe(telemetry, [])],
        callbacks=[handler],
    )
    with tenant_scope("acme"):
        response = agent.run_sync("add")
    assert response.run_stop_reason == semconv.STOP_REASON_LOOP_DETECTED
    assert looping(telemetry, semconv.LOOP_REPEATED_TOOL_CALL, tenant__id="acme") == 1
    (event,) = all_loop_events(telemetry)
    assert event[semconv.LOOP_COUNT] == 3 and event[semconv.GEN_AI_TOOL_NAME] == "probe"
