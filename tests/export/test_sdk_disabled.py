"""``OTEL_SDK_DISABLED=true``, the SDK's off switch, turns this package off too: no span, no
metric point, no per-tenant series, on the console, on ``/metrics`` and over OTLP. The same
setup with the switch off shows every one of them, so the test can fail."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Iterator

import pytest

from symfonic_otel import OTelCallbackHandler, configure_telemetry
from tests.support.event_scripts import bail_with_synthesis, replay
from tests.support.otlp_receiver import GrpcOtlpReceiver, OtlpReceiver

pytestmark = pytest.mark.usefixtures("clean_otel_env")


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    with GrpcOtlpReceiver() as server:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", server.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", server.protocol)
        yield server


def _everything(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """A silent bail per tenant through console, Prometheus and OTLP; (console, /metrics).

    The console exporters write to the stdout of the time of the call, as the spans always did.
    """
    capsys.readouterr()
    telemetry = configure_telemetry(
        set_global=False, otlp=True, console=True, prometheus_port=0, export_interval_ms=600_000
    )
    for tenant in ("acme", "globex"):
        handler = OTelCallbackHandler(
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
            tenant_id=tenant,
        )
        asyncio.run(replay(handler, bail_with_synthesis(f"run-{tenant}", "refund?")))
    assert telemetry.force_flush(timeout_millis=10_000)
    url = f"http://127.0.0.1:{telemetry.prometheus_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        scraped = response.read().decode()
    telemetry.shutdown(timeout_millis=10_000)
    return capsys.readouterr().out, scraped


def test_the_switch_off_exports_everything(
    receiver: OtlpReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control: without the switch each channel carries spans and per-tenant series."""
    console, scraped = _everything(capsys)
    assert "symfonic.agent.runs" in console and '"trace_id"' in console
    assert '"resource_metrics"' in console
    assert "symfonic_agent_runs_total{" in scraped and "tenant_id=" in scraped
    assert receiver.spans() and any(p.name == "symfonic.agent.runs" for p in receiver.points())


@pytest.mark.parametrize("value", ["true", "TRUE", " True "])
def test_otel_sdk_disabled_leaves_no_span_no_point_no_tenant_series(
    monkeypatch: pytest.MonkeyPatch,
    receiver: OtlpReceiver,
    capsys: pytest.CaptureFixture[str],
    value: str,
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", value)
    console, scraped = _everything(capsys)
    # The console exporters print JSON documents (a structlog set up by an earlier test in the
    # process may print the package's own log lines here too: those are not telemetry).
    assert not [line for line in console.splitlines() if line.startswith("{")], console
    assert '"trace_id"' not in console and '"resource_metrics"' not in console
    assert "symfonic" not in scraped and "tenant_id" not in scraped and "gen_ai" not in scraped
    assert receiver.spans() == []
    assert receiver.points() == []
