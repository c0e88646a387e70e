"""Which value a log line's field takes when two sources offer one, and where it is cut.

The caller's explicit ``trace_id`` / ``error_type`` win over the ones derived from the current
span or the exception; a line outside any span carries no ids; a ``sys.exc_info()`` tuple is
described like the exception itself; long sequences are cut; the record names the package's
call site; a kind past ``FailureLog``'s cap keeps its original name in the shared bucket; a value
with a blank, an equals sign or a quote is quoted in the message.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel.logs import FailureLog, get_logger, safe_fields


@pytest.fixture
def plain_logging(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """structlog unconfigured (lines become ``logging`` records), every level captured."""
    saved, was_configured = structlog.get_config(), structlog.is_configured()
    structlog.reset_defaults()
    caplog.set_level(logging.DEBUG, logger="symfonic_otel")
    yield caplog
    if was_configured:
        structlog.configure(**saved)


def _record(caplog: pytest.LogCaptureFixture, event: str) -> logging.LogRecord:
    [record] = [r for r in caplog.records if r.getMessage().startswith(event)]
    return record


def _raised() -> ValueError:
    try:
        raise ValueError("private text")
    except ValueError as exc:
        return exc


def test_an_explicit_trace_id_wins_over_the_current_span(
    plain_logging: pytest.LogCaptureFixture,
) -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("work") as span:
        get_logger().info("explicit.ids", trace_id="a" * 32)
    record: Any = _record(plain_logging, "explicit.ids")
    assert record.trace_id == "a" * 32
    assert record.span_id == format(span.get_span_context().span_id, "016x")


def test_a_line_outside_any_span_carries_no_ids(plain_logging: pytest.LogCaptureFixture) -> None:
    get_logger().info("no.span", n=1)
    record = _record(plain_logging, "no.span")
    assert not hasattr(record, "trace_id") and not hasattr(record, "span_id")
    assert record.getMessage() == "no.span n=1"


def test_the_record_names_the_package_call_site_not_the_wrapper(
    plain_logging: pytest.LogCaptureFixture,
) -> None:
    get_logger().warning("call.site")
    record = _record(plain_logging, "call.site")
    assert record.funcName == "test_the_record_names_the_package_call_site_not_the_wrapper"
    assert record.pathname == __file__


def test_an_explicit_error_type_wins_over_the_described_exception() -> None:
    exc = _raised()
    fields = safe_fields({"exc_info": exc, "error_type": "timeout"})
    assert fields["error_type"] == "timeout"
    assert fields["error_at"].endswith(" in _raised")  # the rest still comes from the exception


def test_an_exc_info_tuple_is_described_like_its_exception() -> None:
    exc = _raised()
    fields = safe_fields({"exc_info": (type(exc), exc, exc.__traceback__)})
    assert fields["error_type"] == "ValueError"
    assert fields["error_at"].endswith(" in _raised")
    assert "private text" not in repr(fields)


def test_exc_info_true_describes_the_exception_being_handled() -> None:
    try:
        raise KeyError("private key")
    except KeyError:
        fields = safe_fields({"exc_info": True})
    assert fields["error_type"] == "KeyError" and sys.exc_info() == (None, None, None)


def test_a_long_sequence_is_cut_to_its_first_items() -> None:
    assert safe_fields({"ids": list(range(100))})["ids"] == list(range(32))
    assert safe_fields({"ids": tuple(range(32))})["ids"] == list(range(32))


def test_a_kind_past_the_cap_is_logged_once_under_other_with_its_name(
    plain_logging: pytest.LogCaptureFixture,
) -> None:
    failures = FailureLog(max_kinds=1)
    failures.report("first.kind")
    failures.report("second.kind", run_id="r-2")
    failures.report("third.kind")
    records = plain_logging.records
    lines: list[Any] = [r for r in records if r.getMessage().startswith("symfonic_otel.internal")]
    assert [r.kind for r in lines] == ["first.kind", "other"]
    assert lines[1].original_kind == "second.kind"
    assert lines[1].run_id == "r-2"
    assert all(r.levelno == logging.WARNING for r in lines)
    assert failures.counts() == {"first.kind": 1, "other": 2}


def test_a_value_with_an_equals_sign_or_a_quote_is_quoted_in_the_message(
    plain_logging: pytest.LogCaptureFixture,
) -> None:
    get_logger().info("quoted", plain="abc", eq="a=b", single="it's", double='say"x', space="a b")
    message = _record(plain_logging, "quoted").getMessage()
    assert message == ("quoted plain=abc eq='a=b' single=\"it's\" double='say\"x' space='a b'")


def test_a_name_that_only_begins_like_the_package_is_nested_under_it() -> None:
    assert get_logger("symfonic_otelish").name == "symfonic_otel.symfonic_otelish"
    assert get_logger("symfonic_otel.emit").name == "symfonic_otel.emit"
