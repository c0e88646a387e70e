"""Cost of SilentBailSpanProcessor on the span path, and its memory with traces held open.

    python benchmarks/span_processor.py            # a few seconds
    python benchmarks/span_processor.py --traces 50000

Time: traces shaped like an instrumented ReAct turn (a request root, an ``invoke_agent`` span,
three ``chat`` spans with finish reasons and recorded output messages, two tool spans) are made
on an SDK tracer provider with no exporter, with and without the processor, interleaved in
rounds; "added" is the median over rounds of the difference per span, and the metric collection
(where the counters are applied) is timed on its own. Memory: ``--traces`` agent runs whose
roots stay open, at the processor's ``max_traces`` (tracemalloc, the processor's state only).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tracemalloc

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor

SPANS_PER_TURN = 7
TOOL_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "name": "add"}]}])
TEXT_TURN = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "3" * 400}]}])


def turn(provider: TracerProvider, tenant: str) -> None:
    tracer = provider.get_tracer("peer")
    chat = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT}
    with tracer.start_as_current_span("POST /chat", attributes={semconv.TENANT_ID: tenant}):
        agent = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
        with tracer.start_as_current_span("invoke_agent peer", attributes=agent):
            for i, output in enumerate((TOOL_TURN, TOOL_TURN, TEXT_TURN)):
                finish = ("tool_calls",) if i < 2 else ("stop",)
                attrs = {
                    **chat,
                    semconv.GEN_AI_RESPONSE_FINISH_REASONS: finish,
                    semconv.GEN_AI_OUTPUT_MESSAGES: output,
                }
                with tracer.start_as_current_span("chat model", attributes=attrs):
                    pass
                if i < 2:
                    tool = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_EXECUTE_TOOL}
                    with tracer.start_as_current_span("execute_tool add", attributes=tool):
                        pass


def timed(provider: TracerProvider, turns: int) -> float:
    start = time.perf_counter()
    for i in range(turns):
        turn(provider, f"tenant-{i % 50}")
    return (time.perf_counter() - start) / (turns * SPANS_PER_TURN)


def cost(rounds: int, turns: int) -> None:
    bare = TracerProvider()
    with_it = TracerProvider()
    reader = InMemoryMetricReader()
    processor = SilentBailSpanProcessor(meter_provider=MeterProvider(metric_readers=[reader]))
    with_it.add_span_processor(processor)
    timed(bare, 200)  # warm-up: tenants seeded, caches filled
    timed(with_it, 200)
    added, collections = [], []
    for _ in range(rounds):
        base = timed(bare, turns)
        added.append(timed(with_it, turns) - base)
        start = time.perf_counter()
        reader.get_metrics_data()
        collections.append((time.perf_counter() - start) / (turns * SPANS_PER_TURN))
    print(
        f"span path, added per span: {statistics.median(added) * 1e6:.2f} us (median of {rounds})"
    )
    print(f"collection, per span recorded: {statistics.median(collections) * 1e6:.2f} us")


def memory(traces: int) -> None:
    provider = TracerProvider()
    processor = SilentBailSpanProcessor(
        meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]), max_traces=traces
    )
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("peer")
    roots = [tracer.start_span("POST /chat") for _ in range(traces)]
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for root in roots:
        with tracer.start_as_current_span(
            "invoke_agent peer",
            context=trace.set_span_in_context(root),
            attributes={semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT},
        ):
            pass
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    held = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert processor.open_traces == traces
    print(f"{traces} open traces: {held / traces:.0f} bytes each ({held / 1e6:.1f} MB)")
    for root in roots:
        root.end()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--traces", type=int, default=10_000)
    args = parser.parse_args()
    cost(args.rounds, args.turns)
    memory(args.traces)


if __name__ == "__main__":
    main()
