"""The step flow: tools, graph nodes and an adapter's other calls -> spans (and tool metrics).

Tools come from Symfonic's ToolCallStart (``executing`` phase only) / ToolResult, or from an
adapter's ``start_tool`` / ``end_tool``, and record ``gen_ai.execute_tool.duration``; graph nodes
from NodeStart / NodeEnd / NodeError when ``node_spans`` is on; other calls (retrieval, an
adapter's graph nodes) from ``start_call`` / ``end_call``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.core import loops
from symfonic_otel.core.handler_core import (
    EMPTY_CONTEXT,
    MALFORMED,
    UNKNOWN_CALL,
    UNKNOWN_RUN,
    HandlerCore,
    key,
)
from symfonic_otel.core.runs import OpenRun
from symfonic_otel.core.steps import OpenCall
from symfonic_otel.emit.recorder import span_link
from symfonic_otel.emit.spans import NO_CONTENT
from symfonic_otel.read import extract as ex
from symfonic_otel.read import extract_steps as xs
from symfonic_otel.read.sanitise import (
    MAX_CALL_MS,
    MAX_ID_BYTES,
    MAX_NAME_BYTES,
    clean_attributes,
    clean_label,
    clean_text,
)


def _name(raw: object) -> str:
    return clean_text(str(raw)[: MAX_NAME_BYTES * 4].strip(), MAX_NAME_BYTES)


class StepFlow:
    __slots__ = ("_core",)

    def __init__(self, core: HandlerCore) -> None:
        self._core = core

    # --- Symfonic tool and node events ---------------------------------------------------------

    def _step_run(self, event_kind: str, run_id: str) -> OpenRun | None:
        """The event's run; Symfonic's own step events name none: then the sole open run."""
        run = self._core.run(run_id) if run_id else self._core.runs.sole()
        if run is None:
            self._core.drop(event_kind, UNKNOWN_RUN if run_id else MALFORMED)
        return run

    def tool_call_start(self, event: Any) -> None:
        core = self._core
        step = xs.tool_start(event)
        if not step.executing:  # the model announcing a call: its execution is what we trace
            return
        run = self._step_run("tool_call_start", step.run_id)
        if run is None:
            return
        start = time.time_ns()
        span = core.spans.start_tool(
            step.name,
            step.call_id or None,
            run.tenant,
            run.run_id,
            core.parent_in(run),
            start,
            step.arguments,
        )
        call = OpenCall(span, start, run.tenant, step.name)
        core.end_unfinished(run.step_state().add_tool(step.call_id, call))
        loops.tool_call(core, run, step.name, step.arguments)

    def tool_result(self, event: Any) -> None:
        core = self._core
        end = xs.tool_result(event)
        run = self._step_run("tool_result", end.run_id)
        if run is None:
            return
        call = run.steps.pop_tool(end.call_id, end.name) if run.steps is not None else None
        if call is None:
            core.drop("tool_result", UNKNOWN_CALL)
            return
        self._end_tool(call, end.error_type, time.time_ns(), end.result, None)

    def node_start(self, event: Any) -> None:
        core = self._core
        if not core.node_spans:
            return
        step = xs.node_step(event)
        run = self._step_run("node_start", step.run_id)
        if run is None:
            return
        start = time.time_ns()
        span = self._node_span(run, step.name, start)
        call = OpenCall(span, start, run.tenant, None)
        core.end_unfinished(run.step_state().push_node(step.name, call))

    def node_end(self, event: Any, *, failed: bool) -> None:
        core = self._core
        if not core.node_spans:
            if failed:  # without node spans, the error's type still names the run's failure
                step = xs.node_step(event, failed=True)
                run = core.run(step.run_id)
                if run is not None:
                    run.node_error_type = step.error_type
            return
        event_kind = "node_error" if failed else "node_end"
        step = xs.node_step(event, failed=failed)
        run = self._step_run(event_kind, step.run_id)
        if run is None:
            return
        if step.error_type is not None:
            run.node_error_type = step.error_type
        call = run.steps.pop_node(step.name) if run.steps is not None else None
        now = time.time_ns()
        if call is None:  # its start never came: rebuilt from the duration, else a point
            duration_ms = None if failed else ex.number(event, "duration_ms")
            if duration_ms is None and not failed:
                core.drop(event_kind, UNKNOWN_CALL)
                return
            start = now - int(min(duration_ms or 0.0, MAX_CALL_MS) * 1_000_000)
            span = self._node_span(run, step.name, start)
        else:
            span = call.span
        core.spans.end_step(span, step.error_type, now, message=step.message)

    def _node_span(self, run: OpenRun, name: str, start: int) -> Span:
        core = self._core
        return core.spans.start_step(
            semconv.node_span_name(name),
            semconv.OP_INVOKE_NODE,
            run.tenant,
            run.run_id,
            core.parent_in(run),
            start,
            node=name,
        )

    # --- the adapter API: tools and generic calls ---------------------------------------------

    def start(
        self,
        run_id: object,
        parent: Context | None,
        tenant_id: str | None,
        start_time_ns: int | None,
        *,
        root: bool = False,
    ) -> tuple[OpenRun | None, str, Context, int] | None:
        """Where a call of the adapter goes: (its run, tenant, parent, start). With no run and no
        parent: a root span when ``root``, else None."""
        core = self._core
        run_key = key(run_id)
        run = core.runs.get(run_key) if run_key else None
        if parent is not None:
            where = parent
        elif run is not None:
            where = core.parent_in(run)
        elif root:
            where = EMPTY_CONTEXT  # never the ambient span
        else:
            return None
        tenant = run.tenant if run is not None else core.tenant(tenant_id)
        start, _ = ex.explicit_time(start_time_ns)
        return run, tenant, where, start if start is not None else time.time_ns()

    def start_tool(
        self,
        run_id: object,
        tool_name: object,
        call_id: object,
        start_time_ns: int | None,
        parent: Context | None,
        tenant_id: str | None,
        attributes: Mapping[str, AttributeValue] | None,
        arguments: object = None,
    ) -> Span | None:
        """``arguments`` are compared in process for loop detection (``core.loops``), never
        exported here: an adapter puts them on the span itself when capture is on."""
        placed = self.start(run_id, parent, tenant_id, start_time_ns)
        if placed is None:
            return None
        run, tenant, where, start = placed
        name = _name(tool_name)
        tool_call = clean_text(str(call_id)[: MAX_ID_BYTES * 4], MAX_ID_BYTES) if call_id else None
        span = self._core.spans.start_tool(
            name,
            tool_call,
            tenant,
            run.run_id if run is not None else None,
            where,
            start,
            extra=clean_attributes(attributes) if attributes else None,
        )
        self._core.calls.add(OpenCall(span, start, tenant, name))
        if run is not None:
            loops.tool_call(self._core, run, name, arguments)
        return span

    def tool_arguments(self, run_id: object, tool_name: object, arguments: object) -> None:
        run = self._core.runs.get(key(run_id))
        if run is not None:
            loops.tool_arguments(self._core, run, _name(tool_name), arguments)

    def start_call(
        self,
        operation_name: object,
        span_name: object,
        run_id: object,
        parent: Context | None,
        tenant_id: str | None,
        attributes: Mapping[str, AttributeValue] | None,
        start_time_ns: int | None,
    ) -> Span | None:
        placed = self.start(run_id, parent, tenant_id, start_time_ns, root=True)
        if placed is None:
            return None
        run, tenant, where, start = placed
        operation = clean_label(operation_name) if operation_name else ""
        span = self._core.spans.start_step(
            _name(span_name) or operation or semconv.OP_CHAT,
            operation,
            tenant,
            run.run_id if run is not None else None,
            where,
            start,
            clean_attributes(attributes) if attributes else None,
        )
        self._core.calls.add(OpenCall(span, start, tenant, None))
        return span

    def end(
        self,
        span: Span,
        error_type: str | None,
        end_time_ns: int | None,
        attributes: Mapping[str, AttributeValue] | None,
    ) -> None:
        """``end_tool`` / ``end_call``: a tool started by ``start_tool`` records its duration."""
        core = self._core
        call = core.calls.pop(span)
        end = core.end_time(span, end_time_ns)
        extra = clean_attributes(attributes) if attributes else None
        error = ex.error_type(error_type, None)
        if call is None:
            core.spans.end_step(span, error, end, extra=extra)
            return
        self._end_tool(call, error, end if end is not None else time.time_ns(), NO_CONTENT, extra)

    def _end_tool(
        self,
        call: OpenCall,
        error: str | None,
        end_ns: int,
        result: object,
        extra: Mapping[str, AttributeValue] | None,
    ) -> None:
        core = self._core
        end_ns = max(end_ns, call.start_ns)
        core.spans.end_step(call.span, error, end_ns, result=result, extra=extra)
        if call.tool is not None:
            core.metrics.tool_call(
                call.tenant,
                call.tool,
                error,
                (end_ns - call.start_ns) / 1e9,
                span_link(call.span.get_span_context()),
            )
