"""Loops, the leading signal: per-run call counts and the detection of looping runs.

Every way in (handler events, the reference loop, LangChain, each adapter) reports two facts
here: a model call of a run, and a tool call of a run with its name and arguments. Per run, in
process, this module counts model calls, tool calls and identical tool calls: the same tool
name with the same arguments, compared by a hash of their canonical form computed here (the
arguments are never kept, and never exported unless content capture is on).

* A run *repeats* at its ``loop_threshold``-th identical tool call (identical calls need not
  be consecutive); every identical call past the first counts in
  ``symfonic.agent.repeated_tool_calls`` (the waste).
* A run exceeds its *call budget* at its model call number ``runaway_calls + 1``.

A looping run is counted once, at its first detection, while it still runs:
``symfonic.agent.looping_runs`` with the detected ``symfonic.loop.kind`` (its exemplar the run
span), and a ``symfonic.agent.loop_detected`` event on the run span (tool name, count, kind).
At the run's end its counts go on the run span and into the two semconv histograms.

State per run is a few ints and at most ``MAX_SIGNATURES`` hashes with their counters (threads
racing past the cap may each add one more).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from opentelemetry.trace import Span

from symfonic_otel import semconv
from symfonic_otel.emit import loop_spans
from symfonic_otel.emit.metrics import MetricEmitter
from symfonic_otel.emit.recorder import span_link
from symfonic_otel.emit.retention_marks import keep_trace

DEFAULT_LOOP_THRESHOLD: Final = 3
DEFAULT_RUNAWAY_CALLS: Final = 50
# Distinct (tool, arguments) signatures followed per run; calls with a new one past it are
# counted as tool calls but not compared.
MAX_SIGNATURES: Final = 256
_LOCK = threading.Lock()  # a run's detection, once (parallel tools of one run race for it)
_JSON_START: Final = ("{", "[")
_CALL_BUDGET: Final = semconv.LOOP_CALL_BUDGET
_REPEATED_TOOL_CALL: Final = semconv.LOOP_REPEATED_TOOL_CALL
_INFERENCE_CALLS: Final = semconv.RUN_INFERENCE_CALLS
_TOOL_CALLS: Final = semconv.RUN_TOOL_CALLS
_REPEATED_CALLS: Final = semconv.RUN_REPEATED_TOOL_CALLS
_LOOP_STOP: Final = semconv.STOP_REASON_LOOP_DETECTED
_numbering: Final = itertools.count


@dataclass(frozen=True, slots=True)
class LoopLimits:
    """``threshold``: identical tool calls that make a run repeat; ``runaway``: model calls a
    run may make before it exceeds its call budget."""

    threshold: int = DEFAULT_LOOP_THRESHOLD
    runaway: int = DEFAULT_RUNAWAY_CALLS


DEFAULT_LIMITS: Final = LoopLimits()


def limits(loop_threshold: object, runaway_calls: object) -> LoopLimits:
    """The limits these options set, or a clear error naming the bad one."""
    for name, value, low in (
        ("loop_threshold", loop_threshold, 2),
        ("runaway_calls", runaway_calls, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    assert isinstance(loop_threshold, int) and isinstance(runaway_calls, int)
    if (loop_threshold, runaway_calls) == (DEFAULT_LIMITS.threshold, DEFAULT_LIMITS.runaway):
        return DEFAULT_LIMITS
    return LoopLimits(loop_threshold, runaway_calls)


@dataclass(frozen=True, slots=True)
class Detection:
    kind: str  # ``repeated_tool_call`` or ``call_budget``
    tool: str  # the repeated tool's name; "" for a call budget
    count: int  # identical calls, or model calls, at detection


def _canonical(arguments: object) -> str:
    """The arguments as one text, equal for equal arguments whatever their shape (a JSON
    string and the mapping it encodes compare equal; key order does not matter)."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        text = arguments.strip()
        if not text.startswith(_JSON_START):
            return text
        try:
            arguments = json.loads(text)
        except ValueError:
            return text
    dump = getattr(arguments, "model_dump", None)  # pydantic models: their fields
    if callable(dump) and not isinstance(arguments, type):
        try:
            arguments = dump()
        except Exception:
            return repr(arguments)
    try:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError):  # unsortable keys, circular values
        return repr(arguments)


def signature(name: str, arguments: object) -> int:
    """The in-process hash of one tool call (never exported). A mapping of hashable values
    is hashed as the set of its items (the common case, no serialisation, key order does not
    matter); anything else as its canonical JSON text."""
    if type(arguments) is dict:  # the common case first: no parsing, no sorting
        try:
            return hash((name, frozenset(arguments.items())))
        except TypeError:  # unhashable values
            pass
    elif isinstance(arguments, str) and arguments.lstrip().startswith(_JSON_START):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
        if type(arguments) is dict:
            try:
                return hash((name, frozenset(arguments.items())))
            except TypeError:
                pass
    try:
        text = _canonical(arguments)
    except Exception:  # a hostile object: its identity stands for it
        text = f"\x00{id(arguments)}"
    return hash((name, text))


class RunLoops:
    """One run's counts and its detection. The limits are copied in at the run's start: the
    per-call checks read two ints of this object, nothing further away.

    Threads: the counts are plain increments of ints (the interpreter's lock keeps each one
    whole: no call between the read and the store); each signature's identical calls are
    numbered by ``next`` on its own ``itertools.count`` (one C call, so every call gets its own
    number and exactly one gets ``threshold``); a new signature's counter, starting at 2 (the
    call that puts it in is number 1), is put in the table by ``setdefault`` (one C call:
    racing threads share the first one put). Only the detection, once per run, takes the
    lock.

    Every count and flag starts as the class's value and becomes the run's own at its first
    write, so a run's state is built with one dict (its signatures), and its limits only where
    they are not the defaults (no ``__slots__``: a slot has no class default)."""

    threshold: int = DEFAULT_LOOP_THRESHOLD
    runaway: int = DEFAULT_RUNAWAY_CALLS
    model_calls = 0
    tool_calls = 0
    repeated = 0
    # The repeats counted in ``repeated_tool_calls`` so far, and whether the run waits for the
    # next collection to count the rest (``LoopMetrics.report_repeats``).
    reported = 0
    queued = False
    detected: str | None = None
    top: tuple[int, str] = (0, "")  # the most repeated call: (its count, its tool)

    def __init__(self, limits: LoopLimits = DEFAULT_LIMITS) -> None:
        self.seen: dict[int, Iterator[int]] = {}  # signature: its calls' numbering
        if limits is not DEFAULT_LIMITS:  # ``limits`` gives the defaults as this very object
            self.threshold = limits.threshold
            self.runaway = limits.runaway

    def detect(self, kind: str, tool: str, count: int) -> Detection | None:
        """The run's detection, once per run (the first of racing threads wins)."""
        with _LOCK:
            if self.detected is not None:
                return None
            self.detected = kind
        return Detection(kind, tool, count)

    def framework_loop(self) -> Detection | None:
        """The framework ended the run on its own loop guard (stop reason ``loop_detected``):
        the call it refused repeats the run's most repeated call once more."""
        count, name = self.top
        return self.detect(semconv.LOOP_REPEATED_TOOL_CALL, name, count + 1)


# --- the facts every way in reports ------------------------------------------------------------


class _Spans(Protocol):
    @property
    def capture_content(self) -> bool: ...


class HandlerCore(Protocol):
    """What the loop facts need of the handler's core (``core.handler_core``)."""

    @property
    def metrics(self) -> MetricEmitter: ...
    @property
    def spans(self) -> _Spans: ...


class OpenRun(Protocol):
    """What the loop facts need of an open run (``core.runs``)."""

    @property
    def loops(self) -> RunLoops: ...
    @property
    def span(self) -> Span: ...
    @property
    def tenant(self) -> str: ...
    @property
    def metrics(self) -> MetricEmitter | None: ...


def _emitter(core: HandlerCore, run: OpenRun) -> MetricEmitter:
    return run.metrics or core.metrics


def model_call(core: HandlerCore, run: OpenRun) -> None:
    """A model call of ``run`` (any node: the run's own calls)."""
    loops = run.loops
    loops.model_calls = calls = loops.model_calls + 1
    if calls > loops.runaway and loops.detected is None:
        found = loops.detect(_CALL_BUDGET, "", calls)
        if found is not None:
            _detected(core, run, found, None)


def tool_call(
    core: HandlerCore, run: OpenRun, name: str, arguments: object, counted: bool = False
) -> None:
    """A tool call of ``run`` that runs (never the announced phase); ``arguments`` None:
    unknown, the call is counted but not compared. ``counted``: the call was counted before,
    its arguments are known only now (``tool_arguments``). One function, no call further on
    the common path: the hash, the numbering and the repeat count are all here."""
    loops = run.loops
    if not counted:
        loops.tool_calls += 1
    if arguments is None:
        return
    if type(arguments) is dict:  # ``signature``'s common case, inline
        try:
            key = hash((name, frozenset(arguments.items())))
        except TypeError:
            key = signature(name, arguments)
    else:
        key = signature(name, arguments)
    seen = loops.seen
    counter = seen.get(key)
    if counter is None:  # a new signature (or another thread's, just added)
        if len(seen) >= MAX_SIGNATURES:  # past the table's cap: not compared
            return
        mine = _numbering(2)  # this call is number 1 if its counter is the one put in
        counter = seen.setdefault(key, mine)  # one C call: the first thread's counter wins
        if counter is mine:
            if not loops.top[0]:  # the run's first compared call
                loops.top = (1, name)
            return
    count = next(counter)  # this call's number among the identical ones (atomic: a C call)
    loops.repeated += 1
    if count > loops.top[0]:
        loops.top = (count, name)
    if not loops.queued:  # counted in ``repeated_tool_calls`` at the next collection
        loops.queued = True
        (run.metrics or core.metrics).loops.repeating(loops, run.tenant)
    if count == loops.threshold:  # exactly one call of a signature is its threshold-th
        found = loops.detect(_REPEATED_TOOL_CALL, name, count)
        if found is not None:
            _detected(core, run, found, arguments)


def tool_arguments(core: HandlerCore, run: OpenRun, name: str, arguments: object) -> None:
    """The arguments of a tool call already counted, known only now."""
    tool_call(core, run, name, arguments, counted=True)


def _detected(core: HandlerCore, run: OpenRun, found: Detection, arguments: object) -> None:
    span = run.span
    context = span.get_span_context()
    # A looping run's trace is kept whole: the counter's exemplar names it only if it is.
    link = span_link(context) if keep_trace(context) else None
    _emitter(core, run).loops.looping_run(run.tenant, found.kind, link)
    loop_spans.loop_detected(
        span, found.kind, found.tool, found.count, arguments, core.spans.capture_content
    )
    loops = run.loops
    span.set_attributes(loop_spans.counts(loops.model_calls, loops.tool_calls, loops.repeated))


def run_ended(
    core: HandlerCore,
    run: OpenRun,
    outcome: str,
    stop_reason: str | None = None,
    *,
    on_span: bool = True,
) -> dict[str, Any]:
    """The run's counts in the two histograms, and on its span unless ``on_span`` is False:
    then they are returned for the caller's own ``set_attributes`` at the span's end. A run
    its framework stopped on its own loop guard (the reference loop's ``loop_detected``) is a
    looping run, detected now if not before."""
    loops = run.loops
    if stop_reason == _LOOP_STOP:
        found = loops.framework_loop()
        if found is not None:
            _detected(core, run, found, None)
    model_calls, tool_calls = loops.model_calls, loops.tool_calls
    attributes = {  # ``loop_spans.counts``, inline: one call less per run
        _INFERENCE_CALLS: model_calls,
        _TOOL_CALLS: tool_calls,
        _REPEATED_CALLS: loops.repeated,
    }
    if on_span:
        run.span.set_attributes(attributes)
    # No exemplar: the run's duration histogram already leads to its span.
    (run.metrics or core.metrics).loops.run_calls(run.tenant, outcome, model_calls, tool_calls)
    return attributes


def ended_run(
    emitter: MetricEmitter,
    tenant: str,
    limits: LoopLimits,
    outcome: str,
    model_calls: int,
    link: tuple[int, int] | None,
    tool_calls: Mapping[tuple[str, int], int] | None = None,
) -> bool:
    """A run seen only once it ended (the span processor): its model-call histogram and, past
    the call budget or at ``threshold`` identical tool calls (``tool_calls``: counts per (tool,
    hash of the arguments), from spans that record arguments), one looping run, of the kind
    ``repeated_tool_call`` when both hold. Whether it looped."""
    repeated = top = 0
    if tool_calls:
        for count in tool_calls.values():
            repeated += count - 1
            top = max(top, count)
    if repeated:
        emitter.loops.repeated_tool_calls(tenant, repeated)
    kind = None
    if top >= limits.threshold:
        kind = semconv.LOOP_REPEATED_TOOL_CALL
    elif model_calls > limits.runaway:
        kind = semconv.LOOP_CALL_BUDGET
    looped = kind is not None
    if kind is not None:
        emitter.loops.looping_run(tenant, kind, link)
    emitter.loops.run_calls(tenant, outcome, model_calls, None, link)
    return looped


def counts(run: OpenRun) -> Mapping[str, Any]:
    """The run's counts so far (for tests and adapters' own summaries)."""
    loops = run.loops
    return {
        semconv.RUN_INFERENCE_CALLS: loops.model_calls,
        semconv.RUN_TOOL_CALLS: loops.tool_calls,
        semconv.RUN_REPEATED_TOOL_CALLS: loops.repeated,
    }
