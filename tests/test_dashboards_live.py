"""Dashboards and alerts against a real Prometheus scraping the real plugin.

The plugin (``OTelCallbackHandler`` + the SDK's ``PrometheusMetricReader``) serves /metrics;
Prometheus scrapes it every second with a test copy of the rules whose windows and ``for:``
are shortened. Then every panel query of every dashboard (variables substituted) must return
data, and the silent-bail alert must go pending or firing for the noisy tenant only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry, start_http_server

from symfonic_otel import OTelCallbackHandler, tenant_scope
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    FabricationDetectedEvent,
    LLMEndEvent,
    ReactLoopEndEvent,
)
from tests.prometheus_support import PrometheusServer, free_port, require_binary

DASHBOARDS = Path(__file__).resolve().parent.parent / "dashboards"
RULES = DASHBOARDS / "prometheus" / "symfonic-rules.yml"

NOISY = "acme-noisy"
STEADY = ("globex", "initech", "umbrella")
LOW_VOLUME = "tiny-co"  # every run a silent bail, but far below the volume guard
TENANTS = (NOISY, *STEADY, LOW_VOLUME)

WINDOW = "20s"  # replaces every range window of the rules
FOR = "2s"  # replaces every `for:`
SUBSTITUTIONS = {  # Grafana variables -> values for a direct Prometheus query
    "${datasource}": "",
    "$__rate_interval": "30s",
    "$__interval": "5s",
    "$__range": "1m",
    "$tenant": ".*",
}
SILENT_BAIL_ALERT = "SymfonicSilentBailRateHigh"

pytestmark = pytest.mark.timeout(180)


# --- traffic: the one place that produces metrics (swap for `symfonic-otel demo` later) --------


@contextlib.contextmanager
def traffic(port: int, duration_s: float) -> Iterator[None]:
    """Serve the plugin's /metrics on 127.0.0.1:``port`` while producing agent traffic.

    Traffic runs in the background for at most ``duration_s`` seconds or until the block exits.
    """
    registry = CollectorRegistry()
    reader = PrometheusMetricReader(registry=registry)
    meter_provider = MeterProvider(metric_readers=[reader])
    tracer_provider = TracerProvider()
    handler = OTelCallbackHandler(
        meter_provider=meter_provider, tracer_provider=tracer_provider, run_ttl_s=1.0
    )
    server, server_thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    stop = threading.Event()
    worker = threading.Thread(
        target=lambda: asyncio.run(_produce(handler, stop, duration_s)), daemon=True
    )
    worker.start()
    try:
        yield
    finally:
        stop.set()
        worker.join(timeout=10)
        handler.close_open_runs()
        server.shutdown()
        server_thread.join(timeout=5)
        meter_provider.shutdown()
        tracer_provider.shutdown()


MODELS = ("gpt-4o-mini", "claude-sonnet-4-20250514", "qwen2.5-72b-instruct")  # the last: unpriced
FABRICATION = (("observe", "observed"), ("revise", "revise_forced"), ("refuse", "refuse_replaced"))


async def _produce(handler: OTelCallbackHandler, stop: threading.Event, duration_s: float) -> None:
    rng = random.Random(7)
    deadline = time.monotonic() + duration_s
    counters = dict.fromkeys(TENANTS, 0)
    tick = 0
    while not stop.is_set() and time.monotonic() < deadline:
        for tenant in (NOISY, *STEADY):
            await _one_run(handler, tenant, counters[tenant], rng)
            counters[tenant] += 1
        if tick % 30 == 0:  # one run every 3 s: 100 % bails, a handful per window
            await _one_run(handler, LOW_VOLUME, counters[LOW_VOLUME], rng)
            counters[LOW_VOLUME] += 1
        handler.expire_runs()
        tick += 1
        await asyncio.sleep(0.1)


async def _one_run(handler: OTelCallbackHandler, tenant: str, i: int, rng: random.Random) -> None:
    """One scripted run; the scenario mix is a function of the run's index ``i``."""
    run_id = f"{tenant}-{i}"
    bail_every = {NOISY: 3, LOW_VOLUME: 1}.get(tenant, 40)
    bail = i % bail_every == 0
    error = not bail and i % 23 == 5
    orphan = not bail and tenant == "globex" and i % 13 == 4
    model = MODELS[i % len(MODELS)]
    calls = 1 + i % 3
    with tenant_scope(tenant):
        await handler.on_agent_start(AgentStartEvent(query="q", run_id=run_id))
    for index in range(calls):
        last = index == calls - 1
        await handler.on_llm_end(
            LLMEndEvent(
                model=model,
                output="" if last and bail else "text",
                usage={"input_tokens": 300 + 50 * index, "output_tokens": rng.randint(5, 400)},
                run_id=run_id,
                node_name="react",
                duration_ms=rng.uniform(150, 4000),
                iteration_index=index,
                outcome="error" if last and error else "completed",
            )
        )
    final = "answer"
    if bail:
        tools = i % 2 == 1
        await handler.on_react_loop_end(
            ReactLoopEndEvent(
                run_id=run_id,
                iteration_index=calls - 1,
                content_type="list" if tools else "NoneType",
                has_tool_calls=tools,
                tool_call_count=1 if tools else 0,
                termination_reason="tool_calls_with_no_text"
                if tools
                else "no_content_no_tool_calls",
            )
        )
        synthesis = 0 if tenant == LOW_VOLUME else (i // bail_every) % 3  # 0: synthesis off
        final = ""
        if synthesis:
            recovered = synthesis == 1
            final = "recovered" if recovered else ""
            await handler.on_llm_end(
                LLMEndEvent(
                    model="gpt-4o-mini",
                    output=final,
                    usage={"input_tokens": 900, "output_tokens": 120 if recovered else 0},
                    run_id=run_id,
                    node_name="react_synthesize_fallback",
                    duration_ms=rng.uniform(300, 2500),
                    iteration_index=calls,
                )
            )
    if not bail and i % 7 == 3:
        mode, action = FABRICATION[(i // 7) % 3]
        confidence = round(rng.uniform(0.35, 0.99), 2)
        await handler.on_fabrication_detected(
            FabricationDetectedEvent(
                run_id=run_id,
                mode=mode,  # type: ignore[arg-type]
                action_taken=action,  # type: ignore[arg-type]
                findings=[{"kind": "unsupported_number", "claim": "42", "confidence": confidence}],
                refuse_threshold=0.8,
                max_finding_confidence=confidence,
                original_draft_preview="draft",
                replacement_preview="I can't verify that." if mode == "refuse" else None,
                preview_truncated=False,
            )
        )
    if orphan:
        return  # never ends: the handler closes it as abandoned after its TTL
    outcome = "error" if error else ("cancelled" if i % 29 == 7 else "completed")
    end = AgentEndEvent(
        run_id=run_id,
        final_response=None if error else final,
        duration_ms=rng.uniform(500, 9000),
        node_count=calls,
        outcome=outcome,  # type: ignore[arg-type]
    )
    await handler.on_agent_end(end)
    if i % 17 == 2:
        await handler.on_agent_end(end)  # a duplicate end: dropped and counted


# --- helpers -------------------------------------------------------------------------------------


def shortened_rules(text: str) -> str:
    """The rule file with every range window set to WINDOW and every ``for:`` to FOR."""
    text = re.sub(r"\[\d+[smhdw]\]", f"[{WINDOW}]", text)
    return re.sub(r"(?m)^(\s+for:)\s*\S+\s*$", rf"\g<1> {FOR}", text)


def substitute(expr: str) -> str:
    for variable, value in sorted(SUBSTITUTIONS.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(variable, value)
    assert "$" not in expr, f"unsubstituted variable in {expr!r}"
    return expr


def dashboard_queries() -> list[tuple[str, str, str]]:
    """(dashboard file, panel title, PromQL) for every panel target and annotation query."""
    queries: list[tuple[str, str, str]] = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        board: dict[str, Any] = json.loads(path.read_text())
        panels = list(board.get("panels", []))
        for row in board.get("panels", []):
            panels.extend(row.get("panels", []))
        for panel in panels:
            for target in panel.get("targets", []):
                queries.append((path.name, panel["title"], substitute(target["expr"])))
        for annotation in board.get("annotations", {}).get("list", []):
            if annotation.get("expr"):
                name = f"annotation {annotation['name']}"
                queries.append((path.name, name, substitute(annotation["expr"])))
    return queries


def _silent_bail_tenants(prom: PrometheusServer) -> set[str]:
    return {
        alert["labels"].get("tenant_id", "")
        for alert in prom.alerts()
        if alert["labels"].get("alertname") == SILENT_BAIL_ALERT
        and alert.get("state") in ("pending", "firing")
    }


# --- the test ------------------------------------------------------------------------------------


def test_every_panel_query_returns_data_and_silent_bail_alert_fires_for_noisy_tenant_only(
    tmp_path: Path,
) -> None:
    require_binary("prometheus")
    rules = tmp_path / "symfonic-rules.live.yml"
    rules.write_text(shortened_rules(RULES.read_text()))
    queries = dashboard_queries()
    assert len(queries) > 30

    port = free_port()
    with (
        traffic(port, duration_s=90.0),
        PrometheusServer(
            tmp_path / "prometheus", scrape_targets=[f"127.0.0.1:{port}"], rule_files=[rules]
        ) as prom,
    ):
        # The scrape works and the rules loaded.
        assert prom.wait_for(lambda: prom.query("up == 1"), timeout_s=15), prom.log_tail()
        loaded = {rule["name"] for group in prom.rules() for rule in group["rules"]}
        assert SILENT_BAIL_ALERT in loaded

        # The silent-bail alert goes pending / firing for the noisy tenant, never for another.
        seen: set[str] = set()

        def noisy_alerted() -> bool:
            seen.update(_silent_bail_tenants(prom))
            return NOISY in seen

        assert prom.wait_for(noisy_alerted, timeout_s=30), (
            f"{SILENT_BAIL_ALERT} never fired for {NOISY}; alerts: {prom.alerts()}"
        )

        # Every panel query returns data (retried while counters accumulate).
        missing = dict.fromkeys(queries, True)

        def all_answered() -> bool:
            for key in [key for key, empty in missing.items() if empty]:
                if prom.query(key[2]):
                    missing[key] = False
            seen.update(_silent_bail_tenants(prom))
            return not any(missing.values())

        prom.wait_for(all_answered, timeout_s=20, interval_s=1.0)
        empty = [f"{board} / {title}: {expr}" for (board, title, expr), e in missing.items() if e]
        assert not empty, "panel queries without data:\n" + "\n".join(empty)

        # The tenant variable's label_values(symfonic_agent_runs_total, tenant_id) lists them all.
        tenants = set(prom.label_values("tenant_id", match="symfonic_agent_runs_total"))
        assert set(TENANTS) <= tenants

        # The low-volume tenant (100 % bails) and the steady tenants never alerted.
        seen.update(_silent_bail_tenants(prom))
        assert seen == {NOISY}, f"silent-bail alert for {sorted(seen - {NOISY})}"
        # ... and it is the volume guard that keeps the low-volume tenant quiet: without it, its
        # 100 % bail rate would cross the threshold.
        unguarded = prom.query("tenant_id:symfonic_react_silent_bail_ratio:rate10m > 0.10")
        over = {sample["metric"]["tenant_id"]: float(sample["value"][1]) for sample in unguarded}
        assert over.get(LOW_VOLUME, 0.0) > 0.5, over
        assert NOISY in over and not set(STEADY) & set(over), over
