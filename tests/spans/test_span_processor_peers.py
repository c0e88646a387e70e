"""The span processor beside real instrumentations: their spans, our runs and silent bails.

OpenLLMetry's, OpenInference's and OpenTelemetry's util-genai LangChain instrumentors trace a
LangGraph ReAct agent over the real ``ChatOpenAI`` (loopback server); Pydantic AI traces its own
agent over ``FunctionModel``. With content capture on and off, the bailing tenant's runs count as
silent bails, the answering tenant's do not, and the processor neither adds nor changes a span.
"""

from __future__ import annotations

import itertools

import pytest

from symfonic_otel import semconv
from tests.support.span_processor_support import (
    ANSWER,
    LANGCHAIN_INSTRUMENTATIONS,
    OUTCOMES,
    PYDANTIC_AI,
    PYDANTIC_AI_OUTCOMES,
    SEEN,
    rig,
)

pytestmark = pytest.mark.timeout(120)
CASES = [
    pytest.param(name, content, scenario, id=f"{name}-{'on' if content else 'off'}-{scenario}")
    for (name, content), seen in SEEN.items()
    for scenario in seen
    if scenario != ANSWER
]


@pytest.mark.parametrize(("name", "content", "scenario"), CASES)
def test_the_bailing_tenant_counts_a_bail_and_the_answering_one_does_not(
    name: str, content: bool, scenario: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = SEEN[(name, content)][scenario]
    outcomes = PYDANTIC_AI_OUTCOMES if name == PYDANTIC_AI else OUTCOMES
    with rig(name, content, monkeypatch) as peers:
        peers.run(scenario, "globex")
        peers.run(ANSWER, "acme")

        assert peers.bails("globex") == ({expected: 1} if expected else {})
        assert peers.bails("acme") == {}
        assert sum(peers.runs("globex").values()) == sum(peers.runs("acme").values()) == 1
        assert {outcome for outcome, _ in peers.runs("globex")} == {outcomes[scenario]}
        assert {outcome for outcome, _ in peers.runs("acme")} == {"completed"}
        if expected == "tool_calls_with_no_text":
            assert peers.stop_reasons("globex") == {semconv.STOP_REASON_RECURSION_LIMIT: 1}
        assert semconv.STOP_REASON_RECURSION_LIMIT not in peers.stop_reasons("acme")
        assert peers.processor.open_traces == 0
        assert peers.memory.unended_spans == []


@pytest.mark.parametrize("content", [True, False], ids=["capture-on", "capture-off"])
@pytest.mark.parametrize("name", [*LANGCHAIN_INSTRUMENTATIONS, PYDANTIC_AI])
def test_an_answer_is_a_run_and_no_bail(
    name: str, content: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    with rig(name, content, monkeypatch) as peers:
        peers.run(ANSWER, "acme")
        runs = peers.runs("acme")
        assert sum(runs.values()) == 1
        # The answer's text is known only when content is recorded.
        assert runs == ({("completed", False): 1} if content else {("completed", None): 1})
        assert peers.bails("acme") == {}


@pytest.mark.parametrize("name", [*LANGCHAIN_INSTRUMENTATIONS, PYDANTIC_AI])
def test_their_spans_are_the_same_with_and_without_the_processor(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The processor adds no span and changes none: the same run without it exports the same
    span names, scopes and attribute keys."""

    def shape(installed: bool) -> list[tuple[str, str, tuple[str, ...]]]:
        with rig(name, True, monkeypatch, installed=installed) as peers:
            peers.run(ANSWER, "acme")
            return sorted(
                (
                    span.name,
                    span.instrumentation_scope.name if span.instrumentation_scope else "",
                    tuple(sorted(span.attributes or {})),
                )
                for span in peers.memory.spans()
            )

    with_it, without_it = shape(True), shape(False)
    assert with_it == without_it
    assert all(scope != semconv.SCOPE_NAME for _, scope, _ in with_it)


def test_many_runs_interleaved_leave_no_trace_state(monkeypatch: pytest.MonkeyPatch) -> None:
    with rig("openllmetry", False, monkeypatch) as peers:
        for tenant, scenario in itertools.islice(
            itertools.cycle([("globex", "cap_answered"), ("acme", ANSWER)]), 6
        ):
            peers.run(scenario, tenant)
        assert peers.bails("globex") == {"tool_calls_with_no_text": 3}
        assert peers.bails("acme") == {}
        assert peers.processor.open_traces == 0


@pytest.mark.parametrize("content", [True, False], ids=["capture-on", "capture-off"])
def test_openinference_takes_the_tenant_from_the_runs_metadata(
    content: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenInference records LangChain's run metadata as one JSON attribute, with content
    capture on or off; ``tenant_metadata_key`` reads the tenant from it."""
    with rig(
        "openinference", content, monkeypatch, tenant_attributes=(), tenant_metadata_key="tenant_id"
    ) as peers:
        peers.run("cap_answered", "globex")
        peers.run(ANSWER, "acme")
        assert peers.bails("globex") == {"tool_calls_with_no_text": 1}
        assert peers.bails("acme") == {}
        assert sum(peers.runs("acme").values()) == 1
