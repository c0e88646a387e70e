"""Checks the LlamaIndex and smolagents adapter tests make alike (both instrument a framework's
own event stream rather than take a handler per run): the answered run's span tree, each tenant's
own verdict, an adapter failure, refused options, content capture and the open-run cap."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.bail_support import bails_of
from tests.support.fallback_support import RUN_SPAN
from tests.support.loop_support import assert_no_text

TASK = "Add 1 and 2"


class _Broken(OTelCallbackHandler):
    def agent_start(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("telemetry bug")


def broken_handler(telemetry: InMemoryTelemetry) -> OTelCallbackHandler:
    """A handler whose run start raises: the adapter's own failure, not the agent's."""
    return telemetry.track(
        _Broken(tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider)
    )


def assert_dropped(telemetry: InMemoryTelemetry, where: str) -> None:
    """One event dropped at ``where``."""
    dropped = {semconv.TELEMETRY_EVENT: where}
    assert telemetry.value(semconv.DROPPED_EVENTS.name, dropped) == 1


def assert_every_span_under_the_run(telemetry: InMemoryTelemetry) -> None:
    """Every other span is a child of the run span, which names the agent ``helper``."""
    root = telemetry.span(RUN_SPAN)
    for span in telemetry.spans():
        if span is not root:
            assert span.parent is not None and span.parent.span_id == root.context.span_id
    assert (root.attributes or {})[semconv.GEN_AI_AGENT_NAME] == "helper"


def assert_capped_and_steady(telemetry: InMemoryTelemetry, capped_outcome: str) -> None:
    """Tenant ``capped`` bailed in one run ending ``capped_outcome``, ``steady`` answered in one
    completed run."""
    assert bails_of(telemetry, "capped") == 1
    assert bails_of(telemetry, "steady") == 0
    for tenant, outcome in (("capped", capped_outcome), ("steady", "completed")):
        where = {semconv.TENANT_ID: tenant, semconv.RUN_OUTCOME: outcome}
        assert telemetry.value(semconv.AGENT_RUNS.name, where) == 1


def assert_bad_options_refused(adapter: Any) -> None:
    """A handler that is not one, and a run cap below one, are refused naming the adapter."""
    with pytest.raises(TypeError, match=f"{adapter.__name__}: handler must be"):
        adapter(object())
    with pytest.raises(ValueError, match="max_runs must be a positive int"):
        adapter(max_runs=0)


def assert_no_task_or(telemetry: InMemoryTelemetry, answer: str) -> None:
    """Without content capture, neither the task nor ``answer`` left the process."""
    assert_no_text(telemetry, TASK)
    assert_no_text(telemetry, answer)


def assert_task_answer_and_arguments(telemetry: InMemoryTelemetry, answer: str) -> Any:
    """Under content capture the task, ``answer`` and the ``add`` tool's arguments are recorded;
    returns the tool span's attributes."""
    seen = repr([(s.attributes, [e.attributes for e in s.events]) for s in telemetry.spans()])
    assert TASK in seen and answer in seen
    tool = dict(telemetry.span("execute_tool add").attributes or {})
    assert '"a": 1' in str(tool[semconv.GEN_AI_TOOL_CALL_ARGUMENTS])
    return tool


def assert_oldest_abandoned(telemetry: InMemoryTelemetry, evicted: str) -> None:
    """Past the run cap of one, the oldest open run ended abandoned (one ``evicted`` dropped
    event) and the other completed."""
    runs = semconv.AGENT_RUNS.name
    assert telemetry.value(runs, {semconv.RUN_OUTCOME: "abandoned"}) == 1
    assert telemetry.value(runs, {semconv.RUN_OUTCOME: "completed"}) == 1
    assert_dropped(telemetry, evicted)
