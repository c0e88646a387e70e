"""The metrics shutdown explanation blames the budget only when every failed reader was out of
time: one reader that raised makes it "these readers raised", wherever its line sits among the
SDK's lines (first, last or between two readers that never ran)."""

from __future__ import annotations

import pytest

from symfonic_otel.export.handle import explain_metrics_shutdown

HEADER = "MeterProvider.shutdown failed because the following metric readers failed:"
LATE = "Didn't get to execute, deadline already exceeded"
RAISED = "these readers raised during their final collection or export"
OUT_OF_TIME = (
    "the shutdown budget ran out before these readers ran: an earlier reader's final export "
    "waited on an unreachable or slow OTLP collector"
)


@pytest.mark.parametrize(
    ("readers", "reason"),
    [
        ([("RaisingReader", "RuntimeError('refused')"), ("LateReader", LATE)], RAISED),
        ([("LateReader", LATE), ("RaisingReader", "RuntimeError('refused')")], RAISED),
        (
            [("LateA", LATE), ("RaisingReader", "OSError('reset')"), ("LateB", LATE)],
            RAISED,
        ),
        ([("LateA", LATE), ("LateB", LATE)], OUT_OF_TIME),
    ],
    ids=["raised-first", "raised-last", "raised-between", "all-late"],
)
def test_the_reason_reads_every_reader_s_line(readers: list[tuple[str, str]], reason: str) -> None:
    lines = [f'{name}: Exception("{error}")' for name, error in readers]
    explained = explain_metrics_shutdown(Exception("\n".join([HEADER, *lines])))
    assert explained == {"failed_readers": [name for name, _ in readers], "reason": reason}
