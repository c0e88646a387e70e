"""Event fields the loop emits, and duck-typed callback dispatch."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from structlog.testing import capture_logs

from symfonic_otel.agent import CallbackDispatcher, FrameworkConfig, ReactAgent
from symfonic_otel.agent.dispatch import HANDLER_METHODS
from symfonic_otel.events import AgentStartEvent, LLMEndEvent
from symfonic_otel.semconv import NODE_REACT
from symfonic_otel.testing.scripted import ScriptedChatModel
from tests.support.agent_support import TOOLS, Recorder, call, log_text, turn


async def test_llm_end_fields_are_measured_around_each_call() -> None:
    recorder = Recorder()
    model = ScriptedChatModel(
        [
            turn(
                "",
                call("add", {"a": 1, "b": 2}),
                finish="tool_calls",
                usage=(10, 5),
                model="gpt-4o-2024-08-06",
            ),
            turn("Three.", finish="stop", usage=(20, 2)),
        ]
    )
    before = datetime.now(UTC)
    wall = time.perf_counter()
    await ReactAgent(model, TOOLS, callbacks=[recorder]).run("1+2", run_id="run-7")
    wall_ms = (time.perf_counter() - wall) * 1000
    after = datetime.now(UTC)

    first, second = recorder.of("llm_end")
    assert isinstance(first, LLMEndEvent)
    assert (first.model, first.output, first.node_name) == ("gpt-4o-2024-08-06", "", NODE_REACT)
    assert first.usage == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    assert (second.model, second.output) == ("scripted-chat", "Three.")  # chat model attribute
    assert second.usage == {"input_tokens": 20, "output_tokens": 2, "total_tokens": 22}
    assert [e.iteration_index for e in (first, second)] == [0, 1]
    assert {e.run_id for e in (first, second)} == {"run-7"}
    for event in (first, second):
        started = datetime.fromisoformat(event.started_at_utc)
        offset = started.utcoffset()
        assert offset is not None and offset.total_seconds() == 0
        assert before <= started <= after
        assert 0 <= event.duration_ms <= wall_ms
        assert event.outcome == "completed"
    assert datetime.fromisoformat(first.started_at_utc) <= datetime.fromisoformat(
        second.started_at_utc
    )


async def test_model_name_falls_back_to_metadata_model_then_class_name() -> None:
    recorder = Recorder()
    message = turn("hi", finish="stop")
    message.response_metadata["model"] = "claude-3-opus-20240229"
    model = ScriptedChatModel([message, turn("hi", finish="stop")], model_name="")
    agent = ReactAgent(model, TOOLS, callbacks=[recorder])
    await agent.run("a")
    await agent.run("b")
    assert [e.model for e in recorder.of("llm_end")] == [
        "claude-3-opus-20240229",
        "ScriptedChatModel",
    ]


async def test_one_start_and_one_end_with_run_id_and_node_count() -> None:
    recorder = Recorder()
    model = ScriptedChatModel(
        [turn("", call("add", {"a": 1, "b": 2}), finish="tool_calls"), turn("3", finish="stop")]
    )
    response = await ReactAgent(model, TOOLS, callbacks=[recorder]).run("1+2")
    [start] = recorder.of("agent_start")
    [end] = recorder.of("agent_end")
    assert start == AgentStartEvent(query="1+2", run_id=response.run_id)
    assert len(response.run_id) == 32
    assert (end.run_id, end.final_response, end.outcome) == (response.run_id, "3", "completed")
    assert end.node_count == 3  # two model calls and one tool round
    assert end.duration_ms >= sum(e.duration_ms for e in recorder.of("llm_end"))


async def test_handlers_with_some_methods_sync_or_async_all_work() -> None:
    seen: list[str] = []

    class OnlyEnd:
        def on_agent_end(self, event: Any) -> None:
            seen.append(f"sync:{event.final_response}")

    class AsyncLLM:
        async def on_llm_end(self, event: Any) -> None:
            seen.append(f"async:{event.output}")

    model = ScriptedChatModel([turn("ok", finish="stop")])
    await ReactAgent(model, TOOLS, callbacks=[OnlyEnd(), AsyncLLM(), object()]).run("q")
    assert seen == ["async:ok", "sync:ok"]


async def test_handler_methods_are_looked_up_once() -> None:
    class Counting:
        def __init__(self) -> None:
            self.lookups = 0

        def __getattr__(self, name: str) -> Any:
            self.lookups += 1
            raise AttributeError(name)

    handler = Counting()
    model = ScriptedChatModel(
        [turn("", call("add", {"a": 1, "b": 2}), finish="tool_calls"), turn("", finish="stop")] * 2
    )
    agent = ReactAgent(model, TOOLS, callbacks=[handler])
    await agent.run("q")
    await agent.run("q")
    assert handler.lookups == len(HANDLER_METHODS)


async def test_raising_handler_is_logged_once_and_never_breaks_the_run() -> None:
    class Broken:
        def on_llm_end(self, event: Any) -> None:
            raise ValueError("handler bug")

    recorder = Recorder()
    model = ScriptedChatModel(
        [turn("", call("add", {"a": 1, "b": 2}), finish="tool_calls"), turn("3", finish="stop")]
    )
    with capture_logs() as logs:
        response = await ReactAgent(model, TOOLS, callbacks=[Broken(), recorder]).run("q")
    assert response.final_response == "3"
    assert len(recorder.of("llm_end")) == 2  # the handler after the broken one still gets both
    warnings = [entry for entry in logs if entry.get("callback") == "on_llm_end"]
    assert len(warnings) == 1
    assert (warnings[0]["log_level"], warnings[0]["handler"]) == ("warning", "Broken")
    assert warnings[0]["error_type"] == "ValueError"


async def test_raising_handler_log_carries_no_content(caplog: pytest.LogCaptureFixture) -> None:
    marker = "query-marker-7c1"

    class Leaky:
        def on_agent_start(self, event: Any) -> None:
            raise KeyError(event.query)

    model = ScriptedChatModel([turn("fine", finish="stop")])
    caplog.set_level(logging.DEBUG)
    with capture_logs() as logs:
        response = await ReactAgent(model, TOOLS, callbacks=[Leaky()]).run(marker)
    assert response.final_response == "fine"
    [warning] = [entry for entry in logs if entry.get("callback") == "on_agent_start"]
    assert (warning["handler"], warning["error_type"]) == ("Leaky", "KeyError")
    assert "exc_info" not in warning
    assert marker not in log_text(logs, caplog.records)


async def test_dispatcher_skips_kinds_nobody_handles() -> None:
    dispatcher = CallbackDispatcher([Recorder(), object()])
    assert len(dispatcher.llm_end) == 1
    assert CallbackDispatcher([object()]).llm_end == ()


async def test_dispatcher_builds_an_event_only_for_a_kind_someone_handles() -> None:
    built: list[str] = []

    def make(kind: str) -> str:
        built.append(kind)
        return kind

    recorder = Recorder()
    dispatcher = CallbackDispatcher([recorder, object()])
    await dispatcher.send("on_llm_end", lambda: make("on_llm_end"))
    await dispatcher.send("on_text_delta", lambda: make("on_text_delta"))
    assert built == ["on_llm_end"]
    assert recorder.events == [("llm_end", "on_llm_end")]


def test_run_sync_runs_and_refuses_inside_a_running_loop() -> None:
    model = ScriptedChatModel([turn("sync ok", finish="stop")])
    agent = ReactAgent(model, TOOLS)
    assert agent.run_sync("q").final_response == "sync ok"


async def test_run_sync_inside_event_loop_raises() -> None:
    agent = ReactAgent(ScriptedChatModel([]), TOOLS)
    with pytest.raises(RuntimeError, match="await run"):
        agent.run_sync("q")


def test_agent_rejects_duplicate_tool_names_and_bad_config() -> None:
    with pytest.raises(ValueError, match="unique"):
        ReactAgent(ScriptedChatModel([]), [*TOOLS, TOOLS[0]])
    with pytest.raises(TypeError, match="FrameworkConfig"):
        ReactAgent(ScriptedChatModel([]), TOOLS, config={"recursion_limit": 3})  # type: ignore[arg-type]


async def test_plain_functions_are_accepted_as_tools() -> None:
    def double(x: int) -> int:
        """Double a number."""
        return 2 * x

    model = ScriptedChatModel(
        [turn("", call("double", {"x": 21}), finish="tool_calls"), turn("42", finish="stop")]
    )
    response = await ReactAgent(model, [double]).run("double 21")
    assert model.calls[0].tools == ("double",)
    assert model.calls[1].messages[-1].content == "42"
    assert response.final_response == "42"


async def test_agent_without_tools_does_not_bind() -> None:
    model = ScriptedChatModel([turn("hi", finish="stop")])
    await ReactAgent(model, ()).run("q")
    assert model.bound_tool_sets == []
    assert model.calls[0].tools_bound is False


def test_config_defaults_match_the_design() -> None:
    config = FrameworkConfig()
    assert (
        config.synthesize_on_empty_final,
        config.recursion_limit,
        config.loop_detection_threshold,
        config.loop_detection_window,
        config.fabrication_check,
        config.fabrication_refuse_min_confidence,
        config.fabrication_detector,
        config.max_length_recoveries,
    ) == (False, 25, 3, 10, "off", 0.8, None, 0)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("synthesize_on_empty_final", 1),
        ("recursion_limit", 0),
        ("recursion_limit", True),
        ("loop_detection_threshold", 1),
        ("loop_detection_window", 0),
        ("fabrication_check", "strict"),
        ("fabrication_refuse_min_confidence", 1.5),
        ("fabrication_refuse_min_confidence", float("nan")),
        ("fabrication_detector", "not callable"),
        ("max_length_recoveries", -1),
    ],
)
def test_config_validation_names_the_field(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"FrameworkConfig.{field} "):
        FrameworkConfig(**{field: value})
