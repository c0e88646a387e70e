"""Shared by the reliability tests and ``benchmarks/reliability.py``.

Dead collectors, a spy proving no exception reaches the agent, interleaved latency batches with a
robust statistic, a handler-only run for sustained load, and resident-memory readings.
"""

from __future__ import annotations

import contextlib
import gc
import random
import resource
import statistics
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.tools import tool
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)

from symfonic_otel import OTelCallbackHandler, tenant_scope
from symfonic_otel.agent import ReactAgent
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from symfonic_otel.testing import ScriptedChatModel
from tests.support.otlp_receiver import HangingServer, refused_endpoint

__all__ = [
    "ANSWER",
    "LatencyResult",
    "RaiseSpy",
    "dead_collector",
    "handler_for",
    "handler_run",
    "live_instances",
    "measure_latency",
    "no_exporter_telemetry",
    "rss_mb",
]

ANSWER = "The catalogue value is value-of-sku."
EXPORT_INTERVAL_MS = 200  # metric readers collect and export often, so the exporters are busy


# --- collectors that are down or stuck -----------------------------------------------------------


@contextlib.contextmanager
def dead_collector(kind: str) -> Iterator[str]:
    """An OTLP endpoint refusing connections (``refused``) or accepting and never answering."""
    if kind == "refused":
        yield refused_endpoint()
        return
    if kind != "hanging":
        raise ValueError(f"kind must be 'refused' or 'hanging', got {kind!r}")
    with HangingServer() as hanging:
        yield hanging.endpoint


class _NullMetricExporter(MetricExporter):
    """Exports nowhere: the baseline's reader collects on the same schedule as the OTLP one."""

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        return None


def no_exporter_telemetry() -> Telemetry:
    """Providers with no exporter at all; metrics are still collected on the OTLP schedule, so
    the only difference from an OTLP configuration is the exporters themselves."""
    reader = PeriodicExportingMetricReader(
        _NullMetricExporter(), export_interval_millis=EXPORT_INTERVAL_MS
    )
    return configure_telemetry(otlp=False, set_global=False, metric_readers=[reader])


def handler_for(telemetry: Telemetry, **kwargs: Any) -> OTelCallbackHandler:
    return OTelCallbackHandler(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        **kwargs,
    )


# --- the agent side ------------------------------------------------------------------------------


@tool
def catalogue(sku: str) -> str:
    """Look a SKU up in the catalogue."""
    return f"value-of-{sku}"


def _script() -> list[AIMessage]:
    """One tool call, then the answer: a run span, two chat spans and a tool execution."""
    usage: UsageMetadata = {"input_tokens": 40, "output_tokens": 6, "total_tokens": 46}
    return [
        AIMessage(
            content="",
            tool_calls=[{"name": "catalogue", "args": {"sku": "sku"}, "id": "c1"}],
            response_metadata={"finish_reason": "tool_calls", "model_name": "gpt-4o"},
            usage_metadata=usage,
        ),
        AIMessage(
            content=ANSWER,
            response_metadata={"finish_reason": "stop", "model_name": "gpt-4o"},
            usage_metadata=usage,
        ),
    ]


class RaiseSpy:
    """Sits between the agent and the handler and records anything the handler raises.

    The agent's dispatcher swallows handler exceptions (by design), so "no exception reaches the
    agent" is proved here, at the boundary, rather than by the run merely completing.
    """

    def __init__(self, handler: OTelCallbackHandler) -> None:
        self.handler = handler
        self.raised: list[BaseException] = []
        self.calls = 0

    async def _forward(self, name: str, event: object) -> None:
        self.calls += 1
        try:
            await getattr(self.handler, name)(event)
        except BaseException as exc:
            self.raised.append(exc)
            raise

    async def on_agent_start(self, event: object) -> None:
        await self._forward("on_agent_start", event)

    async def on_agent_end(self, event: object) -> None:
        await self._forward("on_agent_end", event)

    async def on_llm_end(self, event: object) -> None:
        await self._forward("on_llm_end", event)

    async def on_react_loop_end(self, event: object) -> None:
        await self._forward("on_react_loop_end", event)

    async def on_fabrication_detected(self, event: object) -> None:
        await self._forward("on_fabrication_detected", event)


class LatencyResult:
    """Per-batch mean run latency of each arm, batches interleaved round by round."""

    def __init__(self, arms: Sequence[str]) -> None:
        self.batch_means: dict[str, list[float]] = {arm: [] for arm in arms}
        self.answers: dict[str, list[str]] = {arm: [] for arm in arms}

    @property
    def rounds(self) -> int:
        return min(len(means) for means in self.batch_means.values())

    def ratio(self, arm: str, baseline: str) -> float:
        """Median over rounds of (arm's batch mean / baseline's batch mean in the same round).

        Pairing by round cancels slow drifts in machine load; the median ignores the rounds a
        neighbour process or a collector thread happened to disturb.
        """
        pairs = zip(self.batch_means[arm], self.batch_means[baseline], strict=True)
        return statistics.median(a / b for a, b in pairs)

    def median_ms(self, arm: str) -> float:
        return statistics.median(self.batch_means[arm]) * 1000.0


async def measure_latency(
    spies: Mapping[str, RaiseSpy],
    *,
    rounds: int,
    batch: int,
    model_latency_s: float,
    seed: int = 7,
    result: LatencyResult | None = None,
) -> LatencyResult:
    """Run ``rounds`` rounds; in each, every arm (in a shuffled order) runs ``batch`` agent runs
    one after the other, and the mean of their wall-clock latencies is recorded.

    Agents are built outside the timed section, and the cyclic garbage collector is paused
    during a batch so a collection triggered by one arm's garbage is not billed to another.
    """
    result = result or LatencyResult(list(spies))
    rng = random.Random(seed + len(next(iter(result.batch_means.values()))))
    for _ in range(rounds):
        order = list(spies)
        rng.shuffle(order)
        for arm in order:
            agents = [
                ReactAgent(
                    ScriptedChatModel(_script(), latency_s=model_latency_s),
                    [catalogue],
                    callbacks=[spies[arm]],
                )
                for _ in range(batch)
            ]
            total = 0.0
            gc.disable()
            try:
                for agent in agents:
                    started = time.perf_counter()
                    response = await agent.run("What does the catalogue say about sku?")
                    total += time.perf_counter() - started
                    result.answers[arm].append(response.final_response)
            finally:
                gc.enable()
            result.batch_means[arm].append(total / batch)
    return result


# --- sustained load through the handler alone -----------------------------------------------------

_TENANTS = tuple(f"tenant-{index}" for index in range(20))


def handler_run(handler: OTelCallbackHandler, index: int) -> None:
    """One run as the reference loop reports it: start, two model calls, end (three spans)."""
    run_id = f"load-{index}"
    with tenant_scope(_TENANTS[index % len(_TENANTS)]):
        handler.agent_start(AgentStartEvent(query="What is our refund policy?", run_id=run_id))
    for iteration in range(2):
        handler.llm_end(
            LLMEndEvent(
                model="gpt-4o",
                output="" if iteration == 0 else "Refunds within 30 days.",
                usage={"input_tokens": 120, "output_tokens": 12},
                run_id=run_id,
                node_name="react",
                duration_ms=4.0,
                started_at_utc="2026-11-30T12:00:00",
                iteration_index=iteration,
            )
        )
    handler.agent_end(AgentEndEvent(run_id, "Refunds within 30 days.", 9.0, 2))


def rss_mb() -> float:
    """Resident set size now, in MB (``VmRSS``; peak RSS where /proc is unavailable)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def live_instances(*types: type) -> int:
    """Objects of ``types`` the garbage collector still tracks (after a full collection)."""
    gc.collect()
    return sum(1 for item in gc.get_objects() if isinstance(item, types))
