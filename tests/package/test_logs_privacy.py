"""No log line carries content, whatever the application's logging configuration.

Each configuration runs ``log_privacy_app.py`` in a fresh interpreter (logging state is global)
and searches everything it wrote to stdout and stderr, log records included, for the marker the
app put in prompts, tool calls, drafts, exception messages and event reprs. The app exits
non-zero unless the failures that would carry the marker really happened.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel.agent import SILENT_BAIL_LOG_EVENT
from symfonic_otel.logs import FailureLog, get_logger, run_id_of, safe_fields
from tests.support.log_privacy_app import MARKER

APP = Path(__file__).resolve().parents[1] / "support" / "log_privacy_app.py"
BAIL_FIELDS = {
    "iteration_index": 2,
    "content_type": "str",
    "has_tool_calls": True,
    "tool_call_count": 1,
    "termination_reason": "tool_calls_with_no_text",
    "run_id": "bail-run",
}
CALLBACK_EVENT = "callback handler raised; later failures of this handler and kind are not logged"


def _run(mode: str) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PYTHONWARN"))}
    result = subprocess.run(
        [sys.executable, str(APP), mode],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return result.stdout, result.stderr


def _no_content(*outputs: str) -> None:
    for output in outputs:
        assert MARKER not in output
        assert "Traceback" not in output


def test_an_application_that_configures_nothing_sees_nothing() -> None:
    pytest.importorskip("rich")  # the case reported: structlog's rich tracebacks show locals
    out, err = _run("none")
    assert out == ""
    assert err == ""


def test_structlog_with_dict_tracebacks_gets_the_fields_and_no_content() -> None:
    out, err = _run("structlog-json")
    _no_content(out, err)
    lines = [json.loads(line) for line in out.splitlines()]
    assert all("exception" not in line and "exc_info" not in line for line in lines)
    [bail] = [line for line in lines if line["event"] == SILENT_BAIL_LOG_EVENT]
    assert bail["level"] == "info"
    assert {key: bail[key] for key in BAIL_FIELDS} == BAIL_FIELDS
    callbacks = [line for line in lines if line["event"] == CALLBACK_EVENT]
    assert [(c["callback"], c["error_type"]) for c in callbacks] == [
        ("on_agent_start", "KeyError"),
        ("on_llm_end", "ValueError"),
    ]
    assert all(c["handler"] == "RaisingCallback" and " in on_" in c["error_at"] for c in callbacks)
    assert [c["run_id"] for c in callbacks] == ["bail-run", "bail-run"]  # joins the trace
    [failure] = [line for line in lines if line["event"] == "symfonic_otel.internal_failure"]
    assert (failure["kind"], failure["error_type"], failure["run_id"]) == (
        "agent_end",
        "ValueError",
        "malformed-run",
    )
    [detector] = [line for line in lines if line["event"].startswith("fabrication detector")]
    assert (detector["error_type"], detector["run_id"]) == ("RuntimeError", "answer-run")


def test_structlog_defaults_with_rich_tracebacks_print_no_content() -> None:
    out, err = _run("structlog-console")
    _no_content(out, err)
    [bail] = [line for line in out.splitlines() if SILENT_BAIL_LOG_EVENT in line]
    assert "termination_reason=tool_calls_with_no_text" in bail and "run_id=bail-run" in bail
    assert "error_type=ValueError" in out and "kind=agent_end" in out


def test_stdlib_logging_at_debug_gets_structured_records_and_no_content() -> None:
    out, err = _run("stdlib-debug")
    _no_content(out, err)
    records = [json.loads(line) for line in out.splitlines()]
    ours = [r for r in records if r["attributes"]["name"].startswith("symfonic_otel")]
    assert len(ours) == 5, [r["message"] for r in ours]
    assert all(r["attributes"]["exc_info"] == "None" for r in ours)
    assert all(r["attributes"]["exc_text"] == "None" for r in ours)
    [bail] = [r for r in ours if r["message"].startswith(SILENT_BAIL_LOG_EVENT)]
    attributes = bail["attributes"]
    assert (attributes["levelname"], attributes["name"]) == ("INFO", "symfonic_otel.agent")
    assert {key: attributes[key] for key in BAIL_FIELDS} == {
        key: str(value) for key, value in BAIL_FIELDS.items()
    }
    assert "termination_reason=tool_calls_with_no_text" in bail["message"]
    assert attributes["filename"] == "bail.py"  # the record names the package's call site
    [failure] = [r for r in ours if r["message"].startswith("symfonic_otel.internal_failure")]
    assert failure["attributes"]["error_type"] == "ValueError"
    assert failure["attributes"]["run_id"] == "malformed-run"
    callbacks = [r for r in ours if r["message"].startswith(CALLBACK_EVENT)]
    assert [r["attributes"]["callback"] for r in callbacks] == ["on_agent_start", "on_llm_end"]
    assert [r["attributes"]["run_id"] for r in callbacks] == ["bail-run", "bail-run"]
    # The same lines reached the application's handler on stderr.
    assert err.count("WARNING symfonic_otel") == 4 and err.count("INFO symfonic_otel") == 1


# --- the pieces, in process -----------------------------------------------------------------


@pytest.fixture
def unconfigured_structlog() -> Iterator[None]:
    """structlog as an application that never configured it (other tests configure it)."""
    saved, was_configured = structlog.get_config(), structlog.is_configured()
    structlog.reset_defaults()
    yield
    if was_configured:
        structlog.configure(**saved)


class _Opaque:
    def __repr__(self) -> str:
        return f"Opaque({MARKER})"

    def __str__(self) -> str:
        return MARKER


def test_safe_fields_keep_ids_and_scalars_and_drop_content() -> None:
    run = uuid.uuid4()
    try:
        raise KeyError(MARKER)
    except KeyError:
        fields = safe_fields(
            {
                "run_id": run,
                "count": 3,
                "ok": True,
                "ratio": 0.5,
                "missing": None,
                "signals": ["traces", _Opaque()],
                "event": "x" * 500,
                "payload": _Opaque(),
                "cause": ValueError(MARKER),
                "exc_info": True,
            }
        )
    assert fields["run_id"] == str(run)
    assert (fields["count"], fields["ok"], fields["ratio"], fields["missing"]) == (
        3,
        True,
        0.5,
        None,
    )
    assert fields["signals"] == ["traces", "<_Opaque>"]
    assert fields["field_event"] == "x" * 200 + "…"  # renamed: ``event`` is the logger's own
    assert fields["payload"] == "<_Opaque>" and fields["cause"] == "ValueError"
    assert fields["error_type"] == "KeyError"
    assert fields["error_at"].endswith("in test_safe_fields_keep_ids_and_scalars_and_drop_content")
    assert MARKER not in repr(fields)


def test_run_id_of_reads_plain_ids_only() -> None:
    class Event:
        def __init__(self, run_id: object) -> None:
            self.run_id = run_id

    class Raises:
        @property
        def run_id(self) -> str:
            raise RuntimeError(MARKER)

    run = uuid.uuid4()
    assert run_id_of(Event("r-1")) == "r-1"
    assert run_id_of(Event(run)) == str(run)
    assert run_id_of(Event(7)) == "7"
    for bad in (Event([MARKER]), Event(True), Event("x" * 129), Event("a\nb"), Raises(), None):
        assert run_id_of(bad) is None


def test_stdlib_records_carry_fields_as_attributes_without_clashing(
    unconfigured_structlog: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="symfonic_otel")
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("work") as span:
        get_logger("symfonic_otel.test").info("did.thing", name="n", message="m", args="a", n=1)
    [record] = [r for r in caplog.records if r.name == "symfonic_otel.test"]
    assert (
        record.getMessage()
        == "did.thing name=n message=m args=a n=1 trace_id={} span_id={}".format(
            format(span.get_span_context().trace_id, "032x"),
            format(span.get_span_context().span_id, "016x"),
        )
    )
    fields = vars(record)
    assert (fields["field_name"], fields["field_message"], fields["field_args"]) == ("n", "m", "a")
    assert fields["n"] == 1 and fields["trace_id"] == format(
        span.get_span_context().trace_id, "032x"
    )
    assert record.args is None or record.args == ()


def test_unconfigured_lines_reach_no_handler_of_their_own(unconfigured_structlog: None) -> None:
    logger = logging.getLogger("symfonic_otel")
    handlers = [h for h in logger.handlers if not isinstance(h, logging.NullHandler)]
    assert handlers == []  # the package adds only the NullHandler: the application decides
    assert logger.level == logging.NOTSET and logger.propagate


def test_names_outside_the_package_are_nested_under_it() -> None:
    assert get_logger("elsewhere").name == "symfonic_otel.elsewhere"
    assert get_logger().name == "symfonic_otel"
    assert get_logger("symfonic_otel.agent").name == "symfonic_otel.agent"


def test_failure_log_keeps_caller_fields_that_clash_with_its_own() -> None:
    calls: list[dict[str, Any]] = []

    class Recording:
        def warning(self, event: str, **fields: Any) -> None:
            calls.append(fields)

    failures = FailureLog(logger=Recording())
    failures.report("k", ValueError(MARKER), error_type="mine", note="n", run_id="r")
    [fields] = calls
    assert fields["kind"] == "k"
    assert (fields["error_type"], fields["field_error_type"]) == ("ValueError", "mine")
    assert fields["field_note"] == "n" and fields["run_id"] == "r"
    assert MARKER not in repr(fields)
