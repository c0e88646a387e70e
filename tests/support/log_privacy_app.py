"""An application that hands the package a private marker every way a log line could leak it.

Run as ``python tests/support/log_privacy_app.py MODE`` by ``test_logs_privacy.py``, one fresh
interpreter per logging configuration (logging state is process-wide):

* ``none``: the application configures no logging at all (``rich`` is installed);
* ``structlog-json``: structlog with ``dict_tracebacks`` (tracebacks *with locals*) and JSON lines;
* ``structlog-console``: ``structlog.configure()`` with structlog's defaults (its console
  renderer, rich tracebacks with locals);
* ``stdlib-debug``: ``logging.basicConfig(level=DEBUG)`` on stderr; every record is also dumped
  as JSON on stdout at the end, all attributes included.

The marker is in the prompt, the tool arguments and results, the model's draft, the messages of
exceptions raised by a callback, a fabrication detector and a malformed event (an AgentEnd
whose answer raises on read), and the reprs of those objects. The script exits non-zero if the
failures it provokes did not happen, so a run that logs nothing because nothing went wrong
cannot pass for a private one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import structlog
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from symfonic_otel.agent import FrameworkConfig, ReactAgent
from symfonic_otel.events import AgentStartEvent
from symfonic_otel.logs import add_trace_context
from symfonic_otel.testing import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry

MARKER = "PRIVATE-7f3a9c-MARKER"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _configure(mode: str) -> _Records | None:
    if mode == "none":
        import rich  # noqa: F401  (the case under test: rich importable, nothing configured)

        return None
    if mode == "structlog-json":
        structlog.configure(
            processors=[
                structlog.processors.add_log_level,
                add_trace_context,
                structlog.processors.dict_tracebacks,
                structlog.processors.JSONRenderer(),
            ],
            logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        )
        return None
    if mode == "structlog-console":
        structlog.configure()
        return None
    if mode == "stdlib-debug":
        logging.basicConfig(
            level=logging.DEBUG, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s"
        )
        records = _Records()
        logging.getLogger().addHandler(records)
        return records
    raise SystemExit(f"unknown mode {mode!r}")


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"{key} is {MARKER}"


def _loop_turn(index: int) -> AIMessage:
    # The same call three times, no text: a loop cut with nothing to salvage, a silent bail.
    return AIMessage(
        content="",
        tool_calls=[{"name": "lookup", "args": {"key": MARKER}, "id": f"c{index}"}],
        response_metadata={"finish_reason": "tool_calls"},
    )


class RaisingCallback:
    """A user's callback handler with bugs whose messages quote the event."""

    def __init__(self) -> None:
        self.calls = 0

    def on_agent_start(self, event: Any) -> None:
        self.calls += 1
        raise KeyError(event.query)

    async def on_llm_end(self, event: Any) -> None:
        self.calls += 1
        raise ValueError(f"cannot handle {event.output!r}")


def raising_detector(draft: str, messages: list[Any]) -> list[Any]:
    raise RuntimeError(f"detector choked on {draft!r}")


class MalformedEnd:
    """An AgentEnd whose fields break the handler, with the prompt in its repr."""

    run_id = "malformed-run"
    duration_ms = 1.0
    node_count = None
    outcome = "completed"

    @property
    def final_response(self) -> str:
        raise ValueError(f"final_response unreadable: {MARKER}")

    def __repr__(self) -> str:
        return f"MalformedEnd(query={MARKER!r})"


async def _exercise(memory: InMemoryTelemetry) -> RaisingCallback:
    handler = memory.handler()
    callback = RaisingCallback()
    bail = await ReactAgent(
        ScriptedChatModel([_loop_turn(0), _loop_turn(1), _loop_turn(2)]),
        [lookup],
        callbacks=[handler, callback],
    ).run(f"Where is {MARKER}?", run_id="bail-run")
    assert bail.termination_reason == "tool_calls_with_no_text", bail
    answered = await ReactAgent(
        ScriptedChatModel([f"The answer is {MARKER}."]),
        [lookup],
        config=FrameworkConfig(fabrication_check="observe", fabrication_detector=raising_detector),
        callbacks=[handler],
    ).run(f"Tell me {MARKER}", run_id="answer-run")
    assert MARKER in answered.final_response
    handler.agent_start(AgentStartEvent(f"Question {MARKER}", "malformed-run"))
    handler.agent_end(MalformedEnd())
    handler.close_open_runs()
    return callback


def main(mode: str) -> int:
    records = _configure(mode)
    memory = InMemoryTelemetry()
    callback = asyncio.run(_exercise(memory))
    malformed = memory.value(
        "symfonic.telemetry.dropped_events", {"symfonic.telemetry.drop_reason": "malformed"}
    )
    assert callback.calls >= 2, callback.calls
    assert malformed == 1, malformed  # the unreadable answer was met (and the run still ended)
    memory.shutdown()
    if records is not None:
        for record in records.records:
            attributes = {key: str(value) for key, value in vars(record).items()}
            print(json.dumps({"message": record.getMessage(), "attributes": attributes}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
