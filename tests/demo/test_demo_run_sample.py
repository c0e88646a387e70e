"""The demo's sample of one run's trace: a bounded number of its spans, the best candidate
with spans, and a tree rooted at the run span even when the run sits under a span of its
caller's."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from rich.console import Console

from symfonic_otel import semconv
from symfonic_otel.demo.report import RunSpanSampler, trace_tree


def _traced(sampler: RunSpanSampler) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(sampler))
    return provider


def test_a_candidate_run_keeps_at_most_its_bound_and_other_runs_nothing() -> None:
    sampler = RunSpanSampler(max_spans=2)
    sampler.candidates["r1"] = "a loop cut"
    tracer = _traced(sampler).get_tracer("t")
    for run_id in ("r1", "r1", "r1", "r2"):
        tracer.start_span("chat", attributes={semconv.RUN_ID: run_id}).end()
    assert {run: len(spans) for run, spans in sampler.spans_by_run.items()} == {"r1": 2}


def test_the_best_candidate_is_the_first_that_completed() -> None:
    sampler = RunSpanSampler()
    sampler.candidates.update({"cut": "a loop cut", "ok": "an answer"})
    tracer = _traced(sampler).get_tracer("t")
    for run_id, outcome in (("cut", "cancelled"), ("ok", "completed")):
        attributes = {semconv.RUN_ID: run_id, semconv.RUN_OUTCOME: outcome}
        tracer.start_span("invoke_agent support", attributes=attributes).end()
    best = sampler.best()
    assert best is not None and best[:2] == ("ok", "an answer")


def test_a_run_under_a_span_of_its_callers_is_still_the_trees_root() -> None:
    sampler = RunSpanSampler()
    sampler.candidates["r1"] = "an answer"
    tracer = _traced(sampler).get_tracer("t")
    run = {semconv.RUN_ID: "r1"}
    with (
        tracer.start_as_current_span("http request"),  # the caller's: not the run's
        tracer.start_as_current_span("invoke_agent support", attributes=run),
    ):
        tracer.start_span("chat gpt-4o", attributes=run).end()
    tree = trace_tree(sampler.spans_by_run["r1"])
    assert tree is not None
    console = Console(record=True, width=120)
    console.print(tree)
    lines = console.export_text().splitlines()
    assert lines[0].startswith("invoke_agent support")
    assert "chat gpt-4o" in lines[1]


def test_each_tree_label_shows_its_own_attribute() -> None:
    sampler = RunSpanSampler()
    sampler.candidates["r1"] = "an answer"
    tracer = _traced(sampler).get_tracer("t")
    labelled = {
        semconv.RUN_ID: "r1",
        semconv.TENANT_ID: "acme",
        semconv.NODE_NAME: "agent",
        semconv.GEN_AI_USAGE_INPUT_TOKENS: 11,
        semconv.GEN_AI_USAGE_OUTPUT_TOKENS: 7,
        semconv.SYNTHESIS_RECOVERED: True,
        semconv.RUN_OUTCOME: "completed",
        semconv.RESPONSE_EMPTY: False,
    }
    tracer.start_span("chat gpt-4o", attributes=labelled).end()
    tree = trace_tree(sampler.spans_by_run["r1"])
    assert tree is not None
    console = Console(record=True, width=200)
    console.print(tree)
    assert console.export_text().split("  ", 1)[1].split() == [
        "tenant=acme",
        "node=agent",
        "in=11",
        "out=7",
        "recovered=True",
        "outcome=completed",
        "empty_answer=False",
    ]
