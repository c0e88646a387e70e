"""A core run whose answer (or any other field) cannot be read still ends, counted malformed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

# --- a core run whose answer cannot be read still ends -----------------------------------------


class _StoreDown(RuntimeError):
    pass


class _LazyEnd:
    """An AgentEnd whose answer is a lazy property over a store that is down."""

    def __init__(self, run_id: str, outcome: str) -> None:
        self.run_id = run_id
        self.outcome = outcome
        self.duration_ms = 12.0
        self.node_count = 2

    @property
    def final_response(self) -> str:
        raise _StoreDown("answer store unreachable")


@pytest.fixture
def structlog_quiet() -> Iterator[list[dict[str, object]]]:
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        yield logs


@pytest.mark.parametrize("outcome", ["completed", "error"])
def test_run_whose_answer_raises_on_read_ends_counted_malformed(
    telemetry: InMemoryTelemetry, structlog_quiet: list[dict[str, object]], outcome: str
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "lazy-run"))
    handler.agent_end(_LazyEnd("lazy-run", outcome))
    assert handler.open_runs == 0  # ended now, not at the TTL
    span = telemetry.span("invoke_agent symfonic")
    assert span.end_time is not None and span.attributes is not None
    assert span.attributes["symfonic.run.outcome"] == outcome  # as reported
    assert "symfonic.response.empty" not in span.attributes  # the answer is unknown
    assert telemetry.value("symfonic.agent.runs", {"symfonic.run.outcome": outcome}) == 1
    drops = telemetry.points("symfonic.telemetry.dropped_events")
    assert [(a["symfonic.telemetry.drop_reason"], v) for a, v in drops] == [("malformed", 1)]
    assert telemetry.value("symfonic.agent.active_runs") == 0
    [line] = [entry for entry in structlog_quiet if entry.get("log_level") == "warning"]
    assert (line["kind"], line["error_type"], line["run_id"]) == (
        "agent_end",
        f"{__name__}._StoreDown",
        "lazy-run",
    )


class _AllButIdRaise:
    run_id = "broken-run"

    def __getattr__(self, name: str) -> object:
        raise _StoreDown(name)


def test_run_whose_every_other_field_raises_still_ends(
    telemetry: InMemoryTelemetry, structlog_quiet: list[dict[str, object]]
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "broken-run"))
    handler.agent_end(_AllButIdRaise())
    assert handler.open_runs == 0
    span = telemetry.span("invoke_agent symfonic")
    assert span.end_time is not None and span.attributes is not None
    assert span.attributes["symfonic.run.outcome"] == "completed"  # none reported: the default
    assert telemetry.value("symfonic.agent.runs") == 1
    assert (
        telemetry.value(
            "symfonic.telemetry.dropped_events", {"symfonic.telemetry.drop_reason": "malformed"}
        )
        == 1
    )


def test_a_later_readable_end_of_the_same_run_is_a_duplicate(
    telemetry: InMemoryTelemetry, structlog_quiet: list[dict[str, object]]
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "lazy-run"))
    handler.agent_end(_LazyEnd("lazy-run", "completed"))
    handler.agent_end(AgentEndEvent("lazy-run", "the answer", 12.0, 2))
    assert telemetry.value("symfonic.agent.runs") == 1
    assert (
        telemetry.value(
            "symfonic.telemetry.dropped_events", {"symfonic.telemetry.drop_reason": "duplicate"}
        )
        == 1
    )
