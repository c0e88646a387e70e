"""Live: the span processor's counts page through a real Prometheus with the shipped rules.

Pydantic AI agents traced by Pydantic AI's own instrumentation (content capture off, as by
default) run for two tenants inside the application's request span, which carries
``tenant.id``: globex's agent keeps calling tools until its request limit raises, acme's
answers. ``SilentBailSpanProcessor`` sits on the tracer provider of ``configure_telemetry``,
whose Prometheus endpoint a real Prometheus scrapes every second with the shipped rules
(windows divided by ``FACTOR``). The silent-bail page must fire for globex, and only for it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from symfonic_otel import semconv
from symfonic_otel.export.setup import configure_telemetry
from symfonic_otel.spans import SilentBailSpanProcessor
from tests.support.fleet_support import RULES, shortened_rules, silent_bail_pages
from tests.support.prometheus_support import PrometheusServer, require_binary
from tests.support.span_processor_support import (
    ANSWER,
    APP_SCOPE,
    CAP_RAISED,
    pydantic_ai_agent,
    run_pydantic_agent,
)

FACTOR = 30
BAILING = "globex"
ANSWERING = "acme"
pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def traffic(tmp_path: Path) -> Iterator[tuple[int, threading.Event]]:
    """Both tenants' agents running in a thread until the test ends; yields the metrics port."""
    telemetry = configure_telemetry(
        service_name="span-processor-live", otlp=False, prometheus_port=0, set_global=False
    )
    processor = SilentBailSpanProcessor(meter_provider=telemetry.meter_provider)
    telemetry.tracer_provider.add_span_processor(processor)
    provider, meters = telemetry.tracer_provider, telemetry.meter_provider
    agents = {
        BAILING: pydantic_ai_agent(CAP_RAISED, provider, meters, content=False),
        ANSWERING: pydantic_ai_agent(ANSWER, provider, meters, content=False),
    }
    tracer = provider.get_tracer(APP_SCOPE)
    stop = threading.Event()
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            while not stop.is_set():
                for tenant, agent in agents.items():
                    attrs = {semconv.TENANT_ID: tenant}
                    with tracer.start_as_current_span("POST /chat", attributes=attrs):
                        run_pydantic_agent(agent)
                stop.wait(0.1)  # a few runs a second: the machine is shared
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=serve, daemon=True)
    worker.start()
    try:
        assert telemetry.prometheus_port is not None
        yield telemetry.prometheus_port, stop
    finally:
        stop.set()
        worker.join(30)
        telemetry.shutdown()
    assert not errors, errors
    assert processor.open_traces == 0


def test_a_real_prometheus_pages_for_the_bailing_tenant_only(
    tmp_path: Path, traffic: tuple[int, threading.Event]
) -> None:
    require_binary("prometheus")
    port, _ = traffic
    pages = set(silent_bail_pages(yaml.safe_load(RULES.read_text())))
    assert pages
    rules = tmp_path / "symfonic-rules.yml"
    rules.write_text(shortened_rules(RULES.read_text(), factor=FACTOR))
    with PrometheusServer(
        tmp_path / "prometheus", scrape_targets=[f"127.0.0.1:{port}"], rule_files=[rules]
    ) as prometheus:

        def active(states: tuple[str, ...]) -> set[Any]:
            return {
                alert["labels"].get("tenant_id")
                for alert in prometheus.alerts()
                if alert["labels"].get("alertname") in pages and alert["state"] in states
            }

        fired = prometheus.wait_for(
            lambda: BAILING in active(("firing",)), timeout_s=120, interval_s=1.0
        )
        assert fired, (prometheus.alerts(), prometheus.log_tail())
        assert active(("pending", "firing")) == {BAILING}
        # Both tenants' runs arrived, counted by the processor; only globex's are bails.
        runs = {
            series["metric"]["tenant_id"]: float(series["value"][1])
            for series in prometheus.query("sum by (tenant_id) (symfonic_agent_runs_total)")
        }
        bails = {
            series["metric"]["tenant_id"]: float(series["value"][1])
            for series in prometheus.query("sum by (tenant_id) (symfonic_react_silent_bails_total)")
        }
        assert runs.get(BAILING, 0) >= 20 and runs.get(ANSWERING, 0) >= 20, runs
        assert bails.get(BAILING, 0) >= 20 and bails.get(ANSWERING) == 0, bails
