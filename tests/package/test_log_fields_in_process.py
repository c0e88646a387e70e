"""A package log line's fields, in process: content-free on the structlog path as on the stdlib
one, long text cut at its limit (and not before), stack info never written, and the package's
logger quiet by itself (a NullHandler, no last-resort stderr)."""

from __future__ import annotations

import logging

import pytest
from structlog.testing import capture_logs

from symfonic_otel.logs import LOGGER_NAME, FailureLog, get_logger, safe_fields

SECRET = "the user's prompt text"


class Draft:
    def __repr__(self) -> str:
        return SECRET


def test_the_structlog_path_writes_fields_content_free() -> None:
    try:
        raise KeyError(SECRET)
    except KeyError as error:
        with capture_logs() as logs:
            get_logger().warning("symfonic_otel.example", draft=Draft(), exc_info=error)
    [line] = logs
    assert line["event"] == "symfonic_otel.example"
    assert line["log_level"] == "warning"
    assert line["draft"] == "<Draft>"
    assert line["error_type"] == "KeyError"
    assert "exc_info" not in line
    assert SECRET not in repr(line)


def test_the_structlog_path_renames_a_reserved_field_and_drops_stack_info() -> None:
    with capture_logs() as logs:
        get_logger().info("symfonic_otel.example", stack_info=True, stacklevel=4)
    [line] = logs
    assert "stack_info" not in line
    assert line["field_stacklevel"] == 4
    assert line["log_level"] == "info"


def test_text_is_cut_past_200_characters_and_kept_whole_at_200() -> None:
    fields = safe_fields({"at": "a" * 200, "past": "b" * 201, "items": ["c" * 200, "d" * 201]})
    assert fields["at"] == "a" * 200
    assert fields["past"] == "b" * 200 + "…"
    assert fields["items"] == ["c" * 200, "d" * 200 + "…"]


def test_a_sequence_keeps_scalars_and_names_other_items_by_type() -> None:
    fields = safe_fields({"items": (1, 2.5, True, None, Draft(), "x")})
    assert fields["items"] == [1, 2.5, True, None, "<Draft>", "x"]


def test_stack_info_never_reaches_the_line() -> None:
    assert safe_fields({"stack_info": True, "kept": 1}) == {"kept": 1}


def test_a_failure_log_refuses_a_bool_as_its_kind_cap() -> None:
    with pytest.raises(ValueError, match="max_kinds"):
        FailureLog(max_kinds=True)
    with pytest.raises(ValueError, match="max_kinds"):
        FailureLog(max_kinds=0)
    assert len(FailureLog(max_kinds=1)) == 0


def test_the_package_logger_carries_a_null_handler_so_an_unconfigured_process_stays_quiet() -> None:
    handlers = logging.getLogger(LOGGER_NAME).handlers
    assert any(isinstance(handler, logging.NullHandler) for handler in handlers)
