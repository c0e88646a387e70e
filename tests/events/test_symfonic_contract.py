"""The core handler against Symfonic's event contract: field types, optional fields, phases.

Events are built as ``symfonic.core.contracts`` defines them (``event_scripts`` mirrors, plain
objects, enums, UUIDs, datetimes), never from this package's dataclasses.
"""

from __future__ import annotations

import enum
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from symfonic_otel.read.sanitise import parse_utc_ns
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support import symfonic_events as sym
from tests.support.symfonic_events import HANDLER_HOOKS

RUN = "invoke_agent symfonic"


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _drops(telemetry: InMemoryTelemetry) -> Counter[tuple[str, str]]:
    found: Counter[tuple[str, str]] = Counter()
    for attrs, value in telemetry.points("symfonic.telemetry.dropped_events"):
        assert isinstance(value, int | float)
        key = (attrs["symfonic.telemetry.event"], attrs["symfonic.telemetry.drop_reason"])
        found[key] += int(value)
    return found


# --- literals as enums -----------------------------------------------------------------------


class Outcome(enum.Enum):
    ERROR = "error"


class Phase(enum.Enum):
    ANNOUNCED = "announced"
    EXECUTING = "executing"


# The str-mixin kind (not StrEnum): equal to its value, but its str() is ``Mode.OBSERVE``.
class Mode(str, enum.Enum):  # noqa: UP042
    OBSERVE = "observe"


class Action(str, enum.Enum):  # noqa: UP042
    OBSERVED = "observed"


class Reason(enum.Enum):
    NO_CONTENT = "no_content_no_tool_calls"


class ContentType(str, enum.Enum):  # noqa: UP042
    NONE = "NoneType"


async def test_literal_fields_sent_as_enums_are_read_as_their_values(
    telemetry: InMemoryTelemetry,
) -> None:
    """Outcome, phase, fabrication mode / action, termination reason and content type are
    ``Literal`` strings in the contract; an emitter holding them as enum members must map the
    same: the announced phase makes no span, and labels are the plain values, never members."""
    handler = telemetry.handler()
    await handler.on_agent_start(sym.AgentStart("q", "r"))
    await handler.on_tool_call_start(
        sym.ToolCallStart.model_construct(tool_call_id="m1", tool_name="t", phase=Phase.ANNOUNCED)
    )
    await handler.on_tool_call_start(
        sym.ToolCallStart.model_construct(tool_call_id="x1", tool_name="t", phase=Phase.EXECUTING)
    )
    await handler.on_tool_result(sym.ToolResult(tool_call_id="x1", tool_name="t"))
    await handler.on_fabrication_detected(
        sym.FabricationDetected("r", Mode.OBSERVE, Action.OBSERVED, [], 0.8, 0.5, "", None, False)
    )
    await handler.on_react_loop_end(
        sym.ReactLoopEnd("r", 0, ContentType.NONE, False, 0, Reason.NO_CONTENT)  # type: ignore[arg-type]
    )
    await handler.on_agent_end(sym.AgentEnd("r", None, 5.0, 1, Outcome.ERROR))  # type: ignore[arg-type]

    assert [s.name for s in telemetry.spans() if s.name.startswith("execute_tool")] == [
        "execute_tool t"
    ]
    run = telemetry.span(RUN)
    assert type(_attrs(run)["symfonic.run.outcome"]) is str
    assert _attrs(run)["symfonic.run.outcome"] == "error"
    loop_end, fabrication = (
        dict(e.attributes or {})
        for e in sorted(run.events, key=lambda e: e.name != "symfonic.react.loop_end")[:2]
    )
    assert loop_end["symfonic.react.termination_reason"] == "no_content_no_tool_calls"
    assert loop_end["symfonic.react.content_type"] == "NoneType"
    assert fabrication["symfonic.fabrication.mode"] == "observe"
    labels = [
        value
        for name in (
            "symfonic.agent.runs",
            "symfonic.fabrication.detections",
            "symfonic.react.silent_bails",
        )
        for attrs, _ in telemetry.points(name)
        for value in attrs.values()
    ]
    assert labels and all(type(value) is str for value in labels)
    assert {"error", "observe", "observed", "no_content_no_tool_calls"} <= set(labels)
    assert _drops(telemetry) == Counter()


# --- ids and timestamps ----------------------------------------------------------------------


async def test_run_ids_as_uuids_and_as_their_text_are_one_run(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler(node_spans=True)
    run_id = uuid.uuid4()
    await handler.on_agent_start(sym.AgentStart("q", run_id))  # type: ignore[arg-type]
    await handler.on_node_start(sym.NodeStart("react", run_id))  # type: ignore[arg-type]
    await handler.on_llm_end(sym.LLMEnd("gpt-4o", "hi", {}, str(run_id), "react", duration_ms=3.0))
    await handler.on_node_end(sym.NodeEnd("react", str(run_id), 3.0))
    await handler.on_agent_end(sym.AgentEnd(run_id, "hi", 5.0, 1))  # type: ignore[arg-type]
    run, node, chat = (telemetry.span(n) for n in (RUN, "invoke_node react", "chat gpt-4o"))
    assert _attrs(run)["symfonic.run.id"] == str(run_id)
    assert node.parent is not None and run.context is not None
    assert node.parent.span_id == run.context.span_id
    assert chat.parent is not None and node.context is not None
    assert chat.parent.span_id == node.context.span_id
    assert _drops(telemetry) == Counter()
    assert handler.open_runs == 0


NOON_NS = parse_utc_ns("2026-11-30T12:00:00+00:00") or 0
NOON = datetime(2026, 11, 30, 12, tzinfo=UTC)


async def _chat_started_at(telemetry: InMemoryTelemetry, stamp: object) -> ReadableSpan:
    """The span of one 250 ms chat whose start the event gives as ``stamp``."""
    await telemetry.handler().on_llm_end(
        sym.LLMEnd("gpt-4o", "x", {}, "", "react", duration_ms=250.0, started_at_utc=stamp)  # type: ignore[arg-type]
    )
    return telemetry.span("chat gpt-4o")


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-11-30T12:00:00+00:00",  # what Symfonic's llm_timing writes
        "2026-11-30T12:00:00Z",
        "2026-11-30T12:00:00",  # no zone: UTC
        "2026-11-30T14:00:00+02:00",
        NOON,  # a model that parsed the text
        NOON.replace(tzinfo=None),
        NOON.astimezone(timezone(timedelta(hours=-5))),
    ],
    ids=repr,
)
async def test_started_at_utc_in_every_form_gives_the_same_start(
    telemetry: InMemoryTelemetry, stamp: object
) -> None:
    chat = await _chat_started_at(telemetry, stamp)
    assert chat.start_time == NOON_NS
    assert chat.end_time == NOON_NS + 250_000_000
    assert _drops(telemetry) == Counter()


@pytest.mark.parametrize("stamp", [1_796_040_000, 1_796_040_000.5, "yesterday", b"2026"], ids=repr)
async def test_a_start_stamp_of_another_type_is_malformed_and_the_call_kept(
    telemetry: InMemoryTelemetry, stamp: object
) -> None:
    """Epoch numbers carry no unit (seconds? milliseconds?): not guessed."""
    chat = await _chat_started_at(telemetry, stamp)
    assert chat.start_time is not None and chat.start_time > NOON_NS  # at receipt
    assert telemetry.value("gen_ai.client.operation.duration") == 1
    assert _drops(telemetry) == Counter({("llm_end", "malformed"): 1})


# --- events that name no run -----------------------------------------------------------------


async def test_step_events_naming_no_run_belong_to_the_sole_open_run(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    await handler.on_agent_start(sym.AgentStart("q", "only"))
    await handler.on_tool_call_start(sym.ToolCallStart(tool_call_id="x", tool_name="t"))
    await handler.on_tool_result(sym.ToolResult(tool_call_id="x", tool_name="t"))
    await handler.on_agent_start(sym.AgentStart("q", "second"))
    await handler.on_tool_call_start(sym.ToolCallStart(tool_call_id="y", tool_name="u"))
    await handler.on_llm_start(sym.LLMStart("gpt-4o", [], "second", "", "react"))
    await handler.on_text_delta(sym.TextDelta(text="a"))  # two runs open: whose? not guessed
    await handler.on_llm_end(sym.LLMEnd("gpt-4o", "a", {}, "second", "react"))
    for run_id in ("only", "second"):
        await handler.on_agent_end(sym.AgentEnd(run_id, "x", 1.0, 1))
    tool = telemetry.span("execute_tool t")
    assert _attrs(tool)["symfonic.run.id"] == "only"
    assert "execute_tool u" not in [s.name for s in telemetry.spans()]
    assert "gen_ai.response.time_to_first_chunk" not in _attrs(telemetry.span("chat gpt-4o"))
    # Deltas are many and only time a call: one that matches none is no counted loss.
    assert _drops(telemetry) == Counter({("tool_call_start", "malformed"): 1})
    assert handler.open_runs == 0


# --- fabrication: the legacy companion -------------------------------------------------------


async def test_the_legacy_fabrication_companion_is_not_a_second_detection(
    telemetry: InMemoryTelemetry,
) -> None:
    """Symfonic v7.0.7 hands ``on_fabrication_detected`` the typed event AND the deprecated
    ``ExtensionEvent(type="fabrication_detected" | "fabrication_blocked")`` of the same
    detection: one detection, no phantom ``_OTHER`` series, no loss counted."""
    handler = telemetry.handler()
    await handler.on_agent_start(sym.AgentStart("q", "r"))
    detected = sym.FabricationDetected(
        "r", "refuse", "refuse_replaced", [{"kind": "url", "claim": "c"}], 0.8, 0.9, "d", "s", False
    )
    await handler.on_fabrication_detected(detected)
    legacy = sym.ExtensionEvent(type="fabrication_blocked", payload={"findings": detected.findings})
    await handler.on_fabrication_detected(legacy)
    await handler.on_agent_end(sym.AgentEnd("r", "s", 1.0, 1))
    assert telemetry.points("symfonic.fabrication.detections") == [
        (
            {
                "tenant.id": "unknown",
                "symfonic.fabrication.mode": "refuse",
                "symfonic.fabrication.action": "refuse_replaced",
            },
            1,
        )
    ]
    names = [e.name for e in telemetry.span(RUN).events]
    assert names == ["symfonic.fabrication.detected", "gen_ai.evaluation.result"]
    assert _drops(telemetry) == Counter()


# --- what is mapped, what is not -------------------------------------------------------------

# The contract's events the handler maps, by hook. Not mapped, on purpose: ToolProgressEvent
# (an opaque payload between a call's start and result: its span already times the call),
# AskUserAnsweredEvent / InterruptResolvedEvent (the resume arrives as a new run with its own
# AgentStart), AskUserExpiredEvent / InterruptExpiredEvent (never constructed), UsageEvent (the
# usage is on LLMEnd; both would count it twice), ThinkingDelta / ToolCallDelta / Message* /
# ResponseComplete (stream framing), and the memory events (Activation, Consolidation*, Graph*,
# MemoryExtracted, SearchResult): not agent-turn telemetry.
MAPPED_HOOKS = set(HANDLER_HOOKS)


def test_the_handler_maps_exactly_these_hooks(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    hooks = {name for name in dir(handler) if name.startswith("on_")}
    assert hooks == MAPPED_HOOKS
    assert not hasattr(handler, "on_tool_progress")  # Symfonic's optional dispatch skips it


async def test_a_result_under_the_announced_id_pairs_with_its_executing_start(
    telemetry: InMemoryTelemetry,
) -> None:
    """The two phases of a call use different id spaces; the contract does not say which one
    ToolResultEvent carries. A result under the model's id finds its call by tool name."""
    handler = telemetry.handler()
    await handler.on_agent_start(sym.AgentStart("q", "r"))
    await handler.on_tool_call_start(
        sym.ToolCallStart(tool_call_id="call_A", tool_name="search", phase="announced")
    )
    await handler.on_tool_call_start(sym.ToolCallStart(tool_call_id="run-7", tool_name="search"))
    await handler.on_tool_result(
        sym.ToolResult(tool_call_id="call_A", tool_name="search", is_error=True)
    )
    await handler.on_agent_end(sym.AgentEnd("r", "x", 1.0, 1))
    tool = telemetry.span("execute_tool search")
    assert _attrs(tool)["gen_ai.tool.call.id"] == "run-7"
    assert _attrs(tool)["error.type"] == "_OTHER"
    assert "symfonic.step.unfinished" not in _attrs(tool)
    assert telemetry.value("gen_ai.execute_tool.duration") == 1
    assert _drops(telemetry) == Counter()
