"""Retention processors and judges registering on two threads at once are both kept: the
copy-on-write registries are replaced under one lock, so a registration made while another is
between reading and replacing the registry is not overwritten by it.

The interleaving is forced (``tests/support/paused_section.py``): the first registration is
paused just before it replaces the registry, and the second runs then.
"""

from __future__ import annotations

from symfonic_otel.emit import retention_marks
from tests.support.paused_section import PausedBefore


class _Retention:
    """A retention processor as the marks see it: it records the traces marked to keep."""

    def __init__(self) -> None:
        self.kept: list[int] = []

    def mark_keep(self, trace_id: int) -> bool:
        self.kept.append(trace_id)
        return True

    def judged(self, trace_id: int, keep: bool) -> None:
        pass


class _Judge:
    """A span processor that saw ``trace_id``'s local root start and has not settled it."""

    def __init__(self, trace_id: int) -> None:
        self.trace_id = trace_id

    def awaits_root(self, trace_id: int) -> bool:
        return trace_id == self.trace_id


def test_two_retention_processors_registering_at_once_both_receive_each_mark() -> None:
    first, second = _Retention(), _Retention()
    with PausedBefore(retention_marks.register_retention, "_retentions = (") as paused:
        paused.start(retention_marks.register_retention, first)
        retention_marks.register_retention(second)
        paused.finish()
    assert retention_marks.keep_trace(0xA1) is True
    assert first.kept == [0xA1]
    assert second.kept == [0xA1]


def test_two_judges_registering_at_once_are_both_awaited() -> None:
    first, second = _Judge(0xB1), _Judge(0xB2)
    with PausedBefore(retention_marks.register_judge, "_judges = (") as paused:
        paused.start(retention_marks.register_judge, first)
        retention_marks.register_judge(second)
        paused.finish()
    assert retention_marks.judge_awaited(0xB1)
    assert retention_marks.judge_awaited(0xB2)
    assert not retention_marks.judge_awaited(0xB3)
