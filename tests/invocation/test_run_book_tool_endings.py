"""How a run book pairs and closes tool spans: by the tool's whole name, and, past the run's
end, with the error type its adapter asked for; a start delivered twice leaves no span open."""

from __future__ import annotations

from symfonic_otel import semconv
from symfonic_otel.invocation import RunBook
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def _tools(telemetry: InMemoryTelemetry) -> list[dict[str, object]]:
    return [
        dict(s.attributes or {}) for s in telemetry.spans() if s.name.startswith("execute_tool")
    ]


def test_a_tool_whose_name_holds_the_separator_is_paired_by_its_whole_name(
    telemetry: InMemoryTelemetry,
) -> None:
    book = RunBook(telemetry.handler(), "TestAdapter", 8)
    run = book.start("r1", "helper")
    assert run is not None
    other = book.tools.named_id(run, "search")
    book.start_tool(run, "search", other, None)
    mine = book.tools.named_id(run, "search#v2")
    book.start_tool(run, "search#v2", mine, None)
    book.tools.end_named(run, "search#v2", "ok", None)
    assert list(run.tools) == [other]  # the other tool, opened first, is still running
    book.end("r1", "answered", answer="done")


def test_a_tool_left_open_at_the_run_end_takes_the_adapters_error_type(
    telemetry: InMemoryTelemetry,
) -> None:
    book = RunBook(telemetry.handler(), "TestAdapter", 8, unfinished_tool_error="_OTHER")
    run = book.start("r1", "helper")
    assert run is not None
    book.start_tool(run, "lookup", "c1", None)
    book.end("r1", "answered", answer="done")
    (tool,) = _tools(telemetry)
    assert tool[semconv.ERROR_TYPE] == "_OTHER"
    assert semconv.STEP_UNFINISHED not in tool


def test_a_tool_left_open_at_the_run_end_is_unfinished_by_default(
    telemetry: InMemoryTelemetry,
) -> None:
    book = RunBook(telemetry.handler(), "TestAdapter", 8)
    run = book.start("r1", "helper")
    assert run is not None
    book.start_tool(run, "lookup", "c1", None)
    book.end("r1", "answered", answer="done")
    (tool,) = _tools(telemetry)
    assert tool[semconv.STEP_UNFINISHED] is True
    assert semconv.ERROR_TYPE not in tool


def test_a_tool_start_delivered_twice_leaves_no_span_open() -> None:
    """A redelivered start is ignored: the first span stays the call's and ends with it,
    never left open (so never exported)."""
    telemetry = InMemoryTelemetry()  # not the fixture: its leak check would fail at teardown
    try:
        book = RunBook(telemetry.handler(), "TestAdapter", 8)
        run = book.start("r1", "helper")
        assert run is not None
        book.start_tool(run, "lookup", "c1", None)
        book.start_tool(run, "lookup", "c1", None)
        book.end_tool(run, "c1", "ok", None)
        book.end("r1", "answered", answer="done")
        assert not telemetry.unended_spans
        assert len([s for s in telemetry.spans() if s.name == "execute_tool lookup"]) == 1
    finally:
        telemetry.shutdown()
