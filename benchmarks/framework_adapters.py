"""Overhead of the framework adapters per agent run, and the state they keep.

    PYTHONPATH=. python benchmarks/framework_adapters.py            # a few seconds of runs
    PYTHONPATH=. python benchmarks/framework_adapters.py --runs 2000

Each framework runs the same scripted agent (one tool turn, then an answer; no network) in
interleaved slices with and without our adapter: the OpenAI Agents SDK with no trace processor
vs ``SymfonicTracingProcessor``, Pydantic AI with no capability vs ``SymfonicCapability``. Spans
go to an in-memory exporter, metrics to an in-memory reader (collected outside the timed part).
"Added" is the median over slices of (with - without) per run. After all runs the adapter must
hold no run: its state is bounded by the runs in flight, not by the runs made.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents import Runner, set_trace_processors
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from symfonic_otel.openai_agents import SymfonicTracingProcessor
from symfonic_otel.pydantic_ai import SymfonicCapability
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.openai_agents_support import agent as agents_agent
from tests.support.openai_agents_support import answering


def _pydantic(capabilities: list[Any]) -> Agent[None, str]:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) > 2:
            return ModelResponse(parts=[TextPart("It is sunny.")])
        return ModelResponse(parts=[ToolCallPart("lookup", {"q": "weather"})])

    agent: Agent[None, str] = Agent(FunctionModel(model), capabilities=capabilities)

    @agent.tool_plain
    def lookup(q: str) -> str:
        return f"result for {q}"

    return agent


def _per_run_us(run: Callable[[], None], n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        run()
    return (time.perf_counter() - started) / n * 1e6


def _compare(name: str, plain: Callable[[], None], ours: Callable[[], None], runs: int) -> None:
    slice_runs = max(runs // 20, 1)
    for run in (plain, ours):  # warm-up
        _per_run_us(run, 5)
    added: list[float] = []
    base: list[float] = []
    for _ in range(20):
        without = _per_run_us(plain, slice_runs)
        with_ours = _per_run_us(ours, slice_runs)
        base.append(without)
        added.append(with_ours - without)
    print(
        f"{name}: {statistics.median(base):8.0f} us/run uninstrumented, "
        f"added {statistics.median(added):6.0f} us/run "
        f"({statistics.median(added) / statistics.median(base) * 100:4.1f} %)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=400)
    runs = parser.parse_args().runs
    telemetry = InMemoryTelemetry()

    processor = SymfonicTracingProcessor(handler=telemetry.handler())

    def agents_plain() -> None:
        set_trace_processors([])
        Runner.run_sync(agents_agent(answering()), "q")

    def agents_ours() -> None:
        set_trace_processors([processor])
        Runner.run_sync(agents_agent(answering()), "q")

    _compare("OpenAI Agents SDK", agents_plain, agents_ours, runs)
    set_trace_processors([])

    capability = SymfonicCapability(handler=telemetry.handler())
    plain_agent, our_agent = _pydantic([]), _pydantic([capability])
    _compare(
        "Pydantic AI",
        lambda: plain_agent.run_sync("q") and None,
        lambda: our_agent.run_sync("q") and None,
        runs,
    )
    telemetry.exporter.clear()
    telemetry.reader.collect()
    print(
        f"after the runs: {processor.open_runs} open runs in the processor, "
        f"{telemetry.open_runs} in the handlers"
    )


if __name__ == "__main__":
    main()
