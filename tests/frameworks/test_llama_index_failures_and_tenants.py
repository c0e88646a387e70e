"""The LlamaIndex adapter on the failures of a run's parts and on the tenant's two sources.

A tool that failed (LlamaIndex catches the exception into an error ``ToolOutput``) ends its
``execute_tool`` span with ``error.type`` ``tool_error``; a model call that raised ends its
``chat`` span with the exception's type, and the run with it. ``tenant_scope`` around the run
wins over the ``tenant_id`` of LlamaIndex's ``instrument_tags``; the tags name it without one.
Real LlamaIndex agents over the scripted model (no network).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from llama_index_instrumentation.dispatcher import instrument_tags
from opentelemetry.trace import StatusCode

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.llama_index_support import ANSWER, Script, agent, answering, instrumented, run


def _failing_add(a: int, b: int) -> int:
    """Add two integers (the service is down)."""
    raise ConnectionError("adder down")


def _spans(telemetry: InMemoryTelemetry, prefix: str) -> list[Any]:
    return [s for s in telemetry.spans() if s.name.startswith(prefix)]


def test_a_tool_that_failed_ends_its_span_as_a_tool_error_and_the_run_goes_on(
    telemetry: InMemoryTelemetry,
) -> None:
    llm = MockFunctionCallingLLM(response_generator=Script(["tool", ANSWER]))
    tool = FunctionTool.from_defaults(fn=_failing_add, name="add")
    built = FunctionAgent(name="helper", llm=llm, tools=[tool], streaming=False)
    with instrumented(telemetry):
        result, error = run(built)
    assert error is None and ANSWER in str(result)
    (span,) = _spans(telemetry, "execute_tool add")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})[semconv.ERROR_TYPE] == semconv.TOOL_ERROR_TYPE
    (run_span,) = _spans(telemetry, "invoke_agent")
    assert (run_span.attributes or {}).get(semconv.RUN_OUTCOME) == "completed"


def test_a_tool_that_worked_ends_its_span_without_an_error(telemetry: InMemoryTelemetry) -> None:
    with instrumented(telemetry):
        run(agent("function", answering())[0])
    (span,) = _spans(telemetry, "execute_tool add")
    assert span.status.status_code is not StatusCode.ERROR
    assert semconv.ERROR_TYPE not in (span.attributes or {})


def test_a_model_call_that_raised_ends_its_span_with_the_exception_type(
    telemetry: InMemoryTelemetry,
) -> None:
    built, _ = agent("function", ["raise"], streaming=False)
    with instrumented(telemetry):
        _, error = run(built)
    assert error is not None
    (chat,) = _spans(telemetry, "chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert (chat.attributes or {})[semconv.ERROR_TYPE] == "RuntimeError"
    (run_span,) = _spans(telemetry, "invoke_agent")
    assert (run_span.attributes or {})[semconv.RUN_OUTCOME] == "error"
    assert (run_span.attributes or {})[semconv.ERROR_TYPE] == type(error).__name__


def test_the_tenant_scope_wins_over_the_instrument_tags_tenant(
    telemetry: InMemoryTelemetry,
) -> None:
    with instrumented(telemetry), instrument_tags({"tenant_id": "tagged"}):
        with tenant_scope("scoped"):
            run(agent("function", answering())[0])
        run(agent("function", answering())[0])
    runs = semconv.AGENT_RUNS.name
    assert telemetry.value(runs, {semconv.TENANT_ID: "scoped"}) == 1
    assert telemetry.value(runs, {semconv.TENANT_ID: "tagged"}) == 1
