"""How one ended span folds into the runs around it: a run is an agent invocation.

An agent span turns what its subtree handed up into one ``AgentRun``, judged on its own model
calls. What was below it is placed first:

* a *nested* run below (a GenAI ``invoke_agent`` span) is a sub-agent: a run of its own, counted
  once, for itself; its ending stands for one call of this run, at the time it ended (so a
  parent whose own model answers afterwards is judged on that answer, and one that ends on a
  capped sub-agent's message relays no answer);
* an agent span that wraps exactly one nested run and makes no model call of its own is that
  same invocation (OpenLLMetry's ``invoke_agent`` span around its ``workflow`` span): one run;
* a run that is an agent only by a name or a position (OpenInference ``AGENT``, a node named
  "agent", or a chain) is part of the run around it, whose model calls it holds.

A step-cap error on a span that is no run counts for the run around it, unless a run inside was
capped: then it is that run's error on its way up, already counted.
"""

from __future__ import annotations

from symfonic_otel.spans.reading import Kind, SpanReading
from symfonic_otel.spans.traces import AgentRun, Calls, Pending, SpanKey, Tenant
from symfonic_otel.spans.verdict import judge, relayed

__all__ = ["fold"]


def fold(
    held: Pending | None,
    reading: SpanReading | None,
    ours: bool,
    tenant: tuple[int, str] | None,
    key: SpanKey,
    span_times: tuple[int, int],
) -> Pending:
    """What the ended span ``key`` hands up, from what it ``held`` and what it reads as."""
    out = held if held is not None else Pending()
    if tenant is not None:
        out.tenant.offer(*tenant)
        for run in out.all_runs():  # a tenant on a span around a run is the run's tenant too
            run.tenant.offer(*tenant)
    if ours:
        out.ours = True
    elif reading is not None:
        if reading.kind is Kind.CHAT:
            out.calls.chat(span_times[1], reading.output, reading.finish_reason)
        elif reading.kind is Kind.AGENT:
            _close_run(out, reading, key, span_times)
        else:
            if reading.tool_call is not None:
                out.calls.tool(reading.tool_call)
            _join_parts(out)
            if reading.step_cap and not _capped(out.all_runs()):
                out.step_cap = True
    return out


def _join_parts(out: Pending) -> None:
    """Runs that are agents by name only, side by side under a span that is no run, are parts
    of one invocation (OpenInference's LangGraph nodes named "agent", under a graph span that
    is not the root): one run, never one per node."""
    parts = [run for run in out.runs if not run.nested]
    if len(parts) < 2:
        return
    joined = min(parts, key=lambda run: run.start)
    for part in parts:
        if part is joined:
            continue
        joined.calls.merge(part.calls)
        joined.start, joined.end = min(joined.start, part.start), max(joined.end, part.end)
        joined.name = joined.name or part.name
        joined.failed = joined.failed or part.failed
        joined.step_cap = joined.step_cap or part.step_cap
        joined.inherited_cap = joined.inherited_cap or part.inherited_cap
        joined.capped_below = joined.capped_below or part.capped_below
        joined.answer(part.final_end, part.final_output)
        joined.tenant.offer(part.tenant.rank, part.tenant.value)
    out.runs = [run for run in out.runs if run.nested or run is joined]


def _capped(runs: list[AgentRun]) -> bool:
    return any(run.step_cap or run.capped_below for run in runs)


def _close_run(out: Pending, reading: SpanReading, key: SpanKey, times: tuple[int, int]) -> None:
    start, end = times
    nested = [run for run in out.runs if run.nested]
    calls = out.calls
    step_cap = out.step_cap
    capped_below = False
    for part in out.runs:
        if not part.nested:  # an agent by name or position only: part of this run
            calls.merge(part.calls)
            step_cap = step_cap or part.step_cap
            capped_below = capped_below or part.capped_below
    if calls.count == 0 and len(nested) == 1:  # a wrapper of that one invocation
        run = nested[0]
        run.nested = True
        run.name = run.name or reading.name
        run.start, run.end, run.link = min(run.start, start), max(run.end, end), key
        run.failed = run.failed or reading.failed
        run.step_cap = run.step_cap or step_cap or (reading.step_cap and not run.capped_below)
        run.capped_below = run.capped_below or capped_below
        run.answer(end, reading.output)
        for call, count in (calls.tools or {}).items():  # tool calls beside the one invocation
            run.calls.tool(call, count)
        out.runs = [run]
    else:
        for sub in nested:
            verdict = judge(sub)
            calls.chat(sub.end, relayed(verdict), sub.calls.last_finish, count=0)
        capped_below = capped_below or _capped(nested)
        own_cap = step_cap or reading.step_cap
        run = AgentRun(
            calls,
            reading.nested,
            reading.name,
            start,
            end,
            key,
            Tenant(out.tenant.value, out.tenant.rank),
            failed=reading.failed,
            step_cap=own_cap and not capped_below,
            inherited_cap=own_cap and capped_below,
            capped_below=capped_below,
        )
        run.answer(end, reading.output)
        out.placed.extend(nested)
        out.runs = [run]
    out.calls = Calls()
    out.step_cap = False
