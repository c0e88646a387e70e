"""What a failure log line says about an exception: its type and the frame that raised it
(the innermost of its traceback), never the function that caught it, and never its text."""

from __future__ import annotations

import inspect

from symfonic_otel.logs import describe_exception

SECRET = "the user's prompt"


class _Refused(Exception):
    pass


def _raises() -> None:
    raise _Refused(SECRET)


def _calls() -> None:
    _raises()


def test_the_frame_named_is_where_the_exception_was_raised() -> None:
    try:
        _calls()
    except _Refused as error:
        described = describe_exception(error)
    raise_line = next(
        number
        for number, line in enumerate(
            inspect.getsourcelines(_raises)[0], _raises.__code__.co_firstlineno
        )
        if "raise _Refused" in line
    )
    assert described == {
        "error_type": f"{__name__}._Refused",
        "error_at": f"{__name__}:{raise_line} in _raises",
    }
    assert SECRET not in repr(described)


def test_a_builtin_exception_is_named_without_its_module() -> None:
    try:
        {}["missing"]
    except KeyError as error:
        described = describe_exception(error)
    assert described["error_type"] == "KeyError"
    assert described["error_at"].endswith(
        " in test_a_builtin_exception_is_named_without_its_module"
    )


def test_an_exception_never_raised_names_no_frame() -> None:
    assert describe_exception(ValueError(SECRET)) == {"error_type": "ValueError"}
