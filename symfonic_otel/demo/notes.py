"""What the demo's counts mean, said under its tables with the figures of this run.

Every figure is read from the same metric data as the tables, so a note cannot disagree with
them: why "all" can exceed ``--runs``, why "empty answer" and "silent bails" differ,
and which run's trace is shown (or why none is).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from symfonic_otel import semconv

if TYPE_CHECKING:
    from symfonic_otel.demo.metric_view import MetricView

__all__ = ["RunContext", "count_notes"]


@dataclass(frozen=True)
class RunContext:
    """What the runner knows and the metrics do not: what was asked for, and what happened."""

    requested_runs: int | None = None
    """``--runs``; ``None`` with ``--duration``."""
    duration_s: float | None = None
    warm_up_runs: int = 0
    interrupted: bool = False


def _n(value: float) -> str:
    return f"{value:.0f}"


def _plural(count: float, one: str, many: str) -> str:
    return f"{_n(count)} {one if round(count) == 1 else many}"


def count_notes(view: MetricView, context: RunContext) -> list[str]:
    """One sentence per count that needs one; nothing about counts that are zero."""
    runs = view.sums(semconv.AGENT_RUNS.name, [semconv.RUN_OUTCOME])
    total = sum(runs.values())
    if not total:
        return ["No run finished, so there is nothing to count yet."]
    return [*_total_notes(view, context, runs, total), *_empty_notes(view, runs)]


def _total_notes(
    view: MetricView, context: RunContext, runs: dict[tuple[object, ...], float], total: float
) -> list[str]:
    abandoned = runs.get(("abandoned",), 0.0)
    loop_runs = total - abandoned
    if context.interrupted:
        asked = (
            "the runs that ended before the interrupt, those it cut short included; the "
            "progress bar counted only the ones that finished"
        )
    elif context.requested_runs is not None:
        asked = "--runs"
    else:
        asked = f"{context.duration_s:g} s of traffic" if context.duration_s else "the traffic"
    sentence = f'"all" = {_plural(loop_runs, "agent run", "agent runs")} ({asked})'
    if abandoned:
        them = "it" if round(abandoned) == 1 else "them"
        sentence += (
            f" + {_plural(abandoned, 'run', 'runs')} whose worker died mid-run: AgentStart "
            f"arrived, AgentEnd never did, so the handler closed {them} as abandoned (the "
            "orphaned runs of the health line)"
        )
    notes = [sentence + "."]
    if context.warm_up_runs:
        notes.append(
            f"The {context.warm_up_runs} warm-up runs before the traffic send no telemetry and "
            "are not counted."
        )
    duplicates = view.total(
        semconv.DROPPED_EVENTS.name, {semconv.TELEMETRY_DROP_REASON: "duplicate"}
    )
    if duplicates:
        notes.append(
            f"{_plural(duplicates, 'AgentEnd was', 'AgentEnds were')} delivered twice (a "
            "retrying emitter): recognised as duplicates, each run is counted once."
        )
    return notes


def _empty_notes(view: MetricView, runs: dict[tuple[object, ...], float]) -> list[str]:
    bails = view.total(semconv.SILENT_BAILS.name)
    recovered = view.total(semconv.SYNTHESIS_FALLBACKS.name, {semconv.SYNTHESIS_RECOVERED: True})
    empty = view.sums(semconv.AGENT_RUNS.name, [semconv.RUN_OUTCOME, semconv.RESPONSE_EMPTY])
    empty_completed = empty.get(("completed", True), 0.0)
    empty_other = sum(v for (outcome, flag), v in empty.items() if flag and outcome != "completed")
    errored = sum(v for (outcome,), v in runs.items() if outcome == "error")
    cancelled = sum(v for (outcome,), v in runs.items() if outcome == "cancelled")
    if not (bails or empty_completed or empty_other):
        return []
    sentence = (
        f"Silent bails ({_n(bails)}) count runs whose agent stopped without writing an answer "
        "(a loop cut, the call cap or an empty completion), whether or not a fallback then "
        "produced one"
    )
    if recovered:
        sentence += (
            f"; the synthesis fallback recovered {_n(recovered)} of them, so those runs answered"
        )
    sentence += (
        '. An "empty answer" (not the "empty completion" column: a model turn with no text, '
        "which made the loop stop) is a run whose final answer is blank: "
        f"{_plural(empty_completed, 'completed run', 'completed runs')}"
    )
    details = []
    if empty_completed and empty_completed == bails - recovered:
        details.append("the silent bails left unrecovered")
    if not empty_other and (errored or cancelled):
        kinds = [
            _plural(count, f"{kind} run", f"{kind} runs")
            for kind, count in (("errored", errored), ("cancelled", cancelled))
            if count
        ]
        details.append(f"the {' and '.join(kinds)} carry no empty flag")
    if details:
        sentence += f" ({'; '.join(details)})"
    if empty_other:
        ended = "errored, cancelled or abandoned run"
        sentence += f" + {_plural(empty_other, ended, ended + 's')} (no answer at all)"
    return [sentence + "."]
