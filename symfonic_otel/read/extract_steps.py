"""Guarded extractors for Symfonic's step events: model starts, text deltas, tools, nodes, pauses.

Like ``extract``, every field may be missing or hostile; each reader falls back to a default.
Seed 003 names the fields of the node events and ``LLMStartEvent``; for the pydantic step events
(whose fields it does not list) the readers take this package's names first, then the usual
alternatives, so a framework's own shapes map too. Tool arguments and results are kept raw
here: they are rendered only when content capture is on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from symfonic_otel import semconv
from symfonic_otel.read.extract import error_type, name_text, run_id, text
from symfonic_otel.read.sanitise import MAX_ID_BYTES, clean_text

_MISSING: Final = object()
# A ``ToolCallStartEvent`` of this phase is the model announcing a call, not running it.
PHASE_ANNOUNCED: Final = "announced"
_ERROR_STATUSES: Final = frozenset({"error", "failed", "failure"})


def _first(event: object, names: tuple[str, ...]) -> object:
    for name in names:
        value = getattr(event, name, _MISSING)
        if value is not _MISSING and value is not None:
            return value
    return None


def _name(event: object, names: tuple[str, ...]) -> str:
    for name in names:
        value = name_text(event, name)
        if value:
            return value
    return ""


def _call_id(event: object) -> str:
    value = _first(event, ("tool_call_id", "call_id", "id"))
    if value is None:
        return ""
    raw = value if isinstance(value, str) else str(value)
    return clean_text(raw[: MAX_ID_BYTES * 4].strip(), MAX_ID_BYTES)


@dataclass(slots=True)
class ToolStart:
    run_id: str
    call_id: str  # "" when the event has none: the tool name pairs start and result then
    name: str
    executing: bool  # False for the ``announced`` phase, which telemetry ignores
    arguments: object  # raw; rendered only with capture on


def tool_start(event: object) -> ToolStart:
    return ToolStart(
        run_id=run_id(event),
        call_id=_call_id(event),
        name=_name(event, ("tool_name", "name")),
        executing=text(event, "phase", "executing") != PHASE_ANNOUNCED,
        arguments=_first(event, ("arguments", "args", "tool_args", "input", "tool_input")),
    )


@dataclass(slots=True)
class ToolEnd:
    run_id: str
    call_id: str
    name: str
    error_type: str | None  # set when the tool failed (its type, else ``_OTHER``)
    result: object  # raw; rendered only with capture on


def tool_result(event: object) -> ToolEnd:
    status = text(event, "status").strip().lower()
    error_text = getattr(event, "error", None)
    failed = (
        getattr(event, "is_error", False) is True
        or status in _ERROR_STATUSES
        or (isinstance(error_text, str) and error_text.strip() != "")
    )
    explicit = error_type(None, event)
    return ToolEnd(
        run_id=run_id(event),
        call_id=_call_id(event),
        name=_name(event, ("tool_name", "name")),
        error_type=(explicit or semconv.OTHER_VALUE) if failed or explicit else None,
        result=_first(event, ("result", "output", "content")),
    )


@dataclass(slots=True)
class NodeStep:
    run_id: str
    name: str
    error_type: str | None  # NodeError: the exception type (``_OTHER`` when unnamed)
    message: str  # NodeError: the message, which may quote user data (capture only)


def node_step(event: object, *, failed: bool = False) -> NodeStep:
    return NodeStep(
        run_id=run_id(event),
        name=name_text(event, "node_name"),
        error_type=(error_type(None, event) or semconv.OTHER_VALUE) if failed else None,
        message=text(event, "error") if failed else "",
    )


@dataclass(slots=True)
class ModelStep:
    """``LLMStartEvent`` or ``TextDeltaEvent``: which call of which run it belongs to."""

    run_id: str
    node: str


def model_step(event: object) -> ModelStep:
    return ModelStep(run_id=run_id(event), node=name_text(event, "node_name"))


@dataclass(slots=True)
class Pause:
    run_id: str
    kind: str  # ``ask_user`` or ``interrupt``
    interrupt_name: str  # the registered interrupt's name ("" for ask_user)


def pause(event: object, kind: str) -> Pause:
    return Pause(
        run_id=run_id(event),
        kind=kind,
        interrupt_name=name_text(event, "name") if kind == semconv.PAUSE_INTERRUPT else "",
    )
