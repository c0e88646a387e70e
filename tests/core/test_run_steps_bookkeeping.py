"""A run's open steps: the innermost node of a name ends first, the oldest node leaves first
past the cap, a model call started again at a node replaces the old one as the latest, a drain
hands nodes back innermost first, and an adapter call is ended only by its own span.

The races (a run's parallel tools post their events from several threads) are forced, not
hoped for: a tool name or node name is a ``str`` whose comparison or hash pauses one thread in
the middle of its step while another step of the same run runs on this thread. With the run's
lock held by the paused step, the other waits; the pause ends by its timeout.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from opentelemetry.trace import INVALID_SPAN_CONTEXT, NonRecordingSpan

from symfonic_otel.core.steps import (
    MAX_STEPS_PER_RUN,
    OpenCall,
    OpenCalls,
    PendingModelCall,
    RunSteps,
)

# How long a paused step waits for the other one (see the module docstring).
_PAUSE_S = 0.1


def _call(tool: str | None = None) -> OpenCall:
    return OpenCall(NonRecordingSpan(INVALID_SPAN_CONTEXT), 0, "acme", tool)


def test_a_node_ends_the_innermost_open_node_of_its_name() -> None:
    steps = RunSteps()
    outer, middle, inner = _call(), _call(), _call()
    steps.push_node("agent", outer)
    steps.push_node("tools", middle)
    steps.push_node("agent", inner)
    assert steps.pop_node("agent") is inner
    assert steps.pop_node("agent") is outer
    assert steps.innermost_node() is middle.span


def test_past_the_cap_the_outermost_node_is_pushed_out() -> None:
    steps = RunSteps()
    calls = [_call() for _ in range(MAX_STEPS_PER_RUN + 1)]
    pushed = [out for index, call in enumerate(calls) for out in steps.push_node(f"n{index}", call)]
    assert pushed == [calls[0]]
    assert steps.pop_node(f"n{MAX_STEPS_PER_RUN - 1}") is calls[-2]
    assert steps.pop_node("n0") is None


def test_a_drain_hands_back_tools_then_nodes_innermost_first() -> None:
    steps = RunSteps()
    tool, outer, inner = _call("search"), _call(), _call()
    steps.add_tool("t1", tool)
    steps.push_node("outer", outer)
    steps.push_node("inner", inner)
    steps.start_model("react", PendingModelCall(0, 0.0))
    assert steps.drain() == [tool, inner, outer]
    assert steps.drain() == []
    assert steps.model("") is None


def test_a_model_call_started_again_at_a_node_is_the_latest() -> None:
    steps = RunSteps()
    first, other, again = (PendingModelCall(index, 0.0) for index in range(3))
    steps.start_model("react", first)
    steps.start_model("synthesize", other)
    steps.start_model("react", again)
    assert steps.model("") is again  # an end naming no node belongs to the latest call
    assert steps.model("react") is again
    assert steps.pop_model("synthesize") is other
    assert steps.model("") is again


def test_an_adapter_call_is_ended_only_by_its_own_span() -> None:
    calls = OpenCalls(cap=4)
    call = _call("search")
    calls.add(call)
    stranger = NonRecordingSpan(INVALID_SPAN_CONTEXT)
    assert calls.pop(stranger) is None
    assert len(calls) == 1
    assert calls.pop(call.span) is call
    assert calls.pop(call.span) is None


class _PausingName(str):
    """A tool or node name: once armed, its ``pause_at``-th comparison or hash pauses."""

    def arm(self, pause_at: int) -> None:
        self.paused, self.resume = threading.Event(), threading.Event()
        self.pause_at, self.seen = pause_at, 0

    def _maybe_pause(self) -> None:
        if getattr(self, "pause_at", 0):
            self.seen += 1
            if self.seen == self.pause_at:
                self.paused.set()
                self.resume.wait(_PAUSE_S)

    def __eq__(self, other: object) -> bool:
        self._maybe_pause()
        return str.__eq__(self, other)

    def __hash__(self) -> int:
        self._maybe_pause()
        return str.__hash__(self)


def _race(paused: _PausingName, step: Callable[[], object], other: Callable[[], object]) -> object:
    """Run ``step`` on a thread until ``paused`` pauses it, then ``other`` here; ``step``'s
    result (errors are failures of the test)."""
    results: list[object] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(step())
        except BaseException as error:  # what the handler's step would see
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert paused.paused.wait(2.0)
        other()
        paused.resume.set()
    finally:
        paused.resume.set()
        thread.join()
    assert errors == []
    return results[0]


def test_a_tool_starting_while_another_s_result_is_matched_by_name_waits_for_it() -> None:
    steps = RunSteps()
    name = _PausingName("lookup")
    other, searching, started = _call(name), _call("search"), _call("fetch")
    steps.add_tool("", other)
    steps.add_tool("", searching)
    name.arm(pause_at=1)  # the result's match compares the oldest open call's name first
    found = _race(name, lambda: steps.pop_tool("", "search"), lambda: steps.add_tool("t9", started))
    assert found is searching
    assert steps.pop_tool("t9", "fetch") is started
    assert steps.pop_tool("", "lookup") is other


def test_a_node_ending_while_another_is_pushed_past_the_cap_ends_its_own_call() -> None:
    steps = RunSteps()
    name = _PausingName("target")
    calls = [_call() for _ in range(MAX_STEPS_PER_RUN)]
    for index, call in enumerate(calls):
        steps.push_node(name if index == 1 else f"n{index}", call)
    # The search from the innermost end compares each open node's name with the one ended:
    # the comparison at the target's index (its name's own ``__eq__``) pauses.
    name.arm(pause_at=1)
    found = _race(name, lambda: steps.pop_node("target"), lambda: steps.push_node("new", _call()))
    assert found is calls[1]
    assert steps.pop_node("n2") is calls[2]


def test_a_tool_started_while_the_run_drains_is_drained_or_left_whole() -> None:
    steps = RunSteps()
    key = _PausingName("t1")
    call = _call("search")
    key.arm(pause_at=1)  # the start's lookup of a previous call under the same id
    drained: list[OpenCall] = []
    _race(key, lambda: steps.add_tool(key, call), lambda: drained.extend(steps.drain()))
    assert drained == [call]  # the start completed whole, before the drain
    assert steps.drain() == []


def test_a_model_call_started_while_its_pre_call_opens_one_is_kept() -> None:
    steps = RunSteps()
    node = _PausingName("react")
    started = PendingModelCall(1, 0.0)
    node.arm(pause_at=2)  # the pre-call looked the node up and found nothing; storing is next
    made = _race(
        node, lambda: steps.model_or_start(node), lambda: steps.start_model("react", started)
    )
    assert made is not started
    assert steps.model_at("react") is started  # the start came after: it is the node's call
