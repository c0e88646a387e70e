"""The log line of a handler entry point that failed inside: its kind, the exception's type,
the run id of the event it was given, once per kind, with every failure counted as a loss.
The failures are an adapter's hostile inputs: a mapping whose ``len`` raises, a name whose
``str`` raises."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from structlog.testing import capture_logs

from symfonic_otel import semconv
from symfonic_otel.events import AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry


class _LenRaises(dict[str, Any]):
    def __len__(self) -> int:
        raise RuntimeError("private attribute text")


class _StrRaises:
    def __str__(self) -> str:
        raise ValueError("private tool name")


def _failures(lines: list[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    return [line for line in lines if line["event"] == "symfonic_otel.internal_failure"]


def _lost(telemetry: InMemoryTelemetry, kind: str) -> float:
    where = {semconv.TELEMETRY_EVENT: kind, semconv.TELEMETRY_DROP_REASON: "internal_error"}
    return telemetry.value(semconv.DROPPED_EVENTS.name, where)


def test_a_failed_event_is_logged_once_with_its_run_id_and_counted_each_time(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    with capture_logs() as lines:
        for run_id in ("r-77", "r-78"):
            handler.agent_start(AgentStartEvent("q", run_id), attributes=_LenRaises(a="b"))
    handler.close_open_runs()
    [line] = _failures(lines)
    assert (line["kind"], line["error_type"], line["run_id"]) == (
        "agent_start",
        "RuntimeError",
        "r-77",
    )
    assert line["log_level"] == "warning" and "private" not in repr(line)
    assert _lost(telemetry, "agent_start") == 2


def test_a_span_the_adapter_could_not_open_is_logged_once_and_counted_each_time(
    telemetry: InMemoryTelemetry,
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r1"))
    with capture_logs() as lines:
        assert handler.start_tool("r1", _StrRaises()) is None  # type: ignore[arg-type]
        assert handler.start_tool("r1", _StrRaises()) is None  # type: ignore[arg-type]
    handler.close_open_runs()
    [line] = _failures(lines)
    assert (line["kind"], line["error_type"]) == ("start_tool", "ValueError")
    assert "private" not in repr(line)
    assert _lost(telemetry, "start_tool") == 2
