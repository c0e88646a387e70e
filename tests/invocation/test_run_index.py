"""The run index every adapter keys its runs by: the newest of two, each of its maps, its caps.

A run is found by its id, by a caller's key (``bind``), by a framework span inside it
(``index``) or by its group; eviction and ends must forget it in every one of those maps, and
each cap holds at its bound and one past.
"""

from __future__ import annotations

from symfonic_otel.invocation.runs import FrameworkRun, RunIndex


def _run(run_id: str, group: str | None = None) -> FrameworkRun:
    return FrameworkRun(run_id, group=group)


def test_a_group_leads_to_its_newest_open_run_and_back_to_the_older_when_that_ends() -> None:
    index = RunIndex(8)
    older, newer = _run("r1", "trace-a"), _run("r2", "trace-a")
    index.add(older)
    index.add(newer)
    assert index.owner(None, "trace-a") is newer
    index.pop("r2")
    assert index.owner(None, "trace-a") is older
    index.pop("r1")
    assert index.owner(None, "trace-a") is None


def test_newest_picks_the_latest_matching_run_not_the_first() -> None:
    index = RunIndex(8)
    for run_id in ("a1", "b1", "a2", "b2"):
        index.add(_run(run_id))
    newest = index.newest(lambda run: run.run_id.startswith("a"))
    assert newest is not None and newest.run_id == "a2"


def test_a_run_id_is_its_own_key_and_an_indexed_span_leads_to_its_run() -> None:
    index = RunIndex(8)
    run = _run("r1")
    index.add(run)
    assert index.owner("r1") is run  # the run id itself, never indexed as a span
    assert index.index(run, "span-1")
    assert index.owner("span-1") is run


def test_releasing_a_span_forgets_it_in_the_run_and_in_the_index() -> None:
    index = RunIndex(8, max_keys=2)
    run = _run("r1")
    index.add(run)
    assert index.index(run, "s1") and index.index(run, "s2")
    assert not index.index(run, "s3")  # at the cap
    index.release("s1")
    assert index.owner("s1") is None
    assert index.indexed_spans == 1
    assert index.index(run, "s3")  # the released span gave its slot back to the run


def test_the_span_cap_per_run_holds_at_the_bound_and_one_past() -> None:
    index = RunIndex(8, max_keys=3)
    run = _run("r1")
    index.add(run)
    kept = [index.index(run, f"s{n}") for n in range(4)]
    assert kept == [True, True, True, False]


def test_an_evicted_run_is_forgotten_by_its_key_its_spans_and_its_group() -> None:
    index = RunIndex(2)
    first = _run("r1", "g")
    index.add(first)
    index.bind("agent-1", first)
    index.index(first, "span-1")
    index.add(_run("r2"))
    evicted = index.add(_run("r3"))  # past two open runs: the oldest goes
    assert evicted == [first]
    assert index.bound("agent-1") is None
    assert index.unbind("agent-1") is None
    assert index.owner("span-1") is None
    assert index.indexed_spans == 0
    assert index.owner(None, "g") is None
    late = _run("r4", "g")  # a later run of that group is its only run
    index.add(late)
    assert index.owner(None, "g") is late


def test_the_run_cap_holds_at_the_bound_and_evicts_the_oldest_one_past() -> None:
    index = RunIndex(3)
    assert [index.add(_run(f"r{n}")) for n in range(3)] == [[], [], []]
    assert len(index) == 3
    [evicted] = index.add(_run("r3"))
    assert evicted.run_id == "r0"
    assert [run.run_id for run in index.values()] == ["r1", "r2", "r3"]


def test_bound_keys_are_capped_like_runs_and_a_rebound_key_counts_as_newest() -> None:
    index = RunIndex(2)
    runs = [_run(f"r{n}") for n in range(3)]
    for run in runs:
        index.add(run)  # r0 is evicted; r1 and r2 stay open
    index.bind("k1", runs[1])
    index.bind("k2", runs[2])
    assert index.bound("k1") is runs[1] and index.bound("k2") is runs[2]  # two keys: at the cap
    index.bind("k1", runs[1])  # k1 again: now the newest binding
    index.bind("k3", runs[2])  # one past: the oldest binding (k2) goes, not k1
    assert index.bound("k1") is runs[1]
    assert index.bound("k2") is None
    assert index.bound("k3") is runs[2]


def test_an_ended_run_keeps_a_key_rebound_to_a_newer_run() -> None:
    index = RunIndex(8)
    old, new = _run("r1"), _run("r2")
    index.add(old)
    index.add(new)
    index.bind("agent", old)
    index.bind("agent", new)  # the same agent object runs again
    index.pop("r1")
    assert index.bound("agent") is new


def test_an_ended_runs_key_gives_its_slot_back_so_a_live_key_is_not_pushed_out() -> None:
    index = RunIndex(2)
    second, first = _run("r2"), _run("r1")
    index.add(second)
    index.add(first)
    index.bind("k2", second)
    index.bind("k1", first)  # the newest binding
    index.pop("r1")  # its key must go with it
    third = _run("r3")
    index.add(third)
    index.bind("k3", third)  # two live keys: at the cap, none pushed out
    assert index.bound("k2") is second
    assert index.bound("k3") is third
