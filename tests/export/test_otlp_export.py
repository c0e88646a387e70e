"""``configure_telemetry`` end to end: real OTLP receivers, Prometheus scrapes, dead collectors.

The exporters are configured only through the standard ``OTEL_*`` environment variables, the way
an operator would, and the assertions read what arrived on the wire (decoded by the official
protobuf classes), not what the SDK kept in memory.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from structlog.testing import CapturingLogger, capture_logs

from symfonic_otel import OTelCallbackHandler, semconv, tenant_scope
from symfonic_otel.export.setup import Telemetry, configure_telemetry
from symfonic_otel.logs import FailureLog, add_trace_context
from tests.support.event_scripts import RUN_DURATION_MS, T0_NS, T1_NS, bail_with_synthesis, replay
from tests.support.otlp_receiver import (
    CLEANUP_MS,
    GrpcOtlpReceiver,
    HangingServer,
    HttpOtlpReceiver,
    OtlpReceiver,
    ReceivedPoint,
    points_of,
    refused_endpoint,
)

SECRET = "s3cr3t-Token-0f-9a7"
QUERY = "What is our refund policy for order 4711?"
RUN = "run-otlp-1"


# --- fixtures -------------------------------------------------------------------------------------


pytestmark = pytest.mark.usefixtures("clean_otel_env")


@pytest.fixture(params=["grpc", "http/protobuf"])
def receiver(request: pytest.FixtureRequest) -> Iterator[OtlpReceiver]:
    server: OtlpReceiver = GrpcOtlpReceiver() if request.param == "grpc" else HttpOtlpReceiver()
    with server:
        yield server


def _point_to(monkeypatch: pytest.MonkeyPatch, endpoint: str, protocol: str) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)


@pytest.fixture
def otlp_env(monkeypatch: pytest.MonkeyPatch, receiver: OtlpReceiver) -> OtlpReceiver:
    _point_to(monkeypatch, receiver.endpoint, receiver.protocol)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "checkout-agent")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=staging")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"x-api-key={SECRET},x-team=sre")
    return receiver


def _configure(**kwargs: Any) -> Telemetry:
    kwargs.setdefault("set_global", False)
    kwargs.setdefault("export_interval_ms", 60_000)  # only explicit flushes export
    return configure_telemetry(**kwargs)


def _handler(telemetry: Telemetry, **kwargs: Any) -> OTelCallbackHandler:
    return OTelCallbackHandler(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        **kwargs,
    )


async def _scripted_run(handler: OTelCallbackHandler) -> None:
    """A silent bail recovered by synthesis, with a fabrication observation: every event kind."""
    await replay(handler, bail_with_synthesis(RUN, QUERY))


def _one(items: list[Any], what: str) -> Any:
    assert len(items) == 1, f"expected exactly one {what}, got {len(items)}: {items}"
    return items[0]


def _points(receiver: OtlpReceiver, name: str) -> list[ReceivedPoint]:
    """Points of ``name`` in the first metrics export (the one ``force_flush`` triggered).

    Shutdown exports once more; with cumulative temporality that repeats the same points.
    Counter series the handler created at zero for a new tenant are left out (see
    ``test_new_tenant_series_arrive_at_zero``).
    """
    requests = receiver.metric_requests()[:1]
    return [
        p
        for p in points_of(requests)
        if p.name == name and not (p.kind == "sum" and p.is_monotonic and p.value == 0)
    ]


# --- OTLP: the contract arrives on the wire -------------------------------------------------------


async def test_scripted_run_reaches_the_collector(otlp_env: OtlpReceiver) -> None:
    receiver = otlp_env
    with _configure() as telemetry:
        request_tracer = telemetry.tracer_provider.get_tracer("web")
        handler = _handler(telemetry)
        with (
            request_tracer.start_as_current_span("POST /ask") as request_span,
            tenant_scope("acme"),
        ):
            await _scripted_run(handler)
        assert telemetry.force_flush(timeout_millis=10_000) is True
        assert handler.open_runs == 0

    all_spans = receiver.spans()
    assert len(all_spans) == 4, [s.name for s in all_spans]
    request = _one([s for s in all_spans if s.name == "POST /ask"], "request span")
    run = _one([s for s in all_spans if s.name == semconv.agent_span_name("symfonic")], "run span")
    chats = [s for s in all_spans if s.name == semconv.chat_span_name("gpt-4o")]
    assert run.name == "invoke_agent symfonic" and len(chats) == 2

    # Parenthood: request -> run -> chat, one trace.
    assert request.span_id == format(request_span.get_span_context().span_id, "016x")
    assert run.parent_span_id == request.span_id
    assert {c.parent_span_id for c in chats} == {run.span_id}
    assert {s.trace_id for s in all_spans} == {request.trace_id}
    assert run.kind == "INTERNAL" and {c.kind for c in chats} == {"CLIENT"}
    assert run.status_code == "UNSET"

    # Run span attributes and events.
    assert run.attributes[semconv.TENANT_ID] == "acme"
    assert run.attributes[semconv.GEN_AI_OPERATION_NAME] == semconv.OP_INVOKE_AGENT
    assert run.attributes[semconv.GEN_AI_AGENT_NAME] == "symfonic"
    assert run.attributes[semconv.RUN_ID] == RUN
    assert run.attributes[semconv.RUN_OUTCOME] == "completed"
    assert run.attributes[semconv.RESPONSE_EMPTY] is False
    assert run.attributes[semconv.REACT_TERMINATION_REASON] == "tool_calls_with_no_text"
    events = dict(run.events)
    assert list(events) == [
        semconv.EVENT_REACT_LOOP_END,
        semconv.EVENT_FABRICATION_DETECTED,
        semconv.EVENT_EVALUATION_RESULT,
    ]
    assert events[semconv.EVENT_REACT_LOOP_END] == {
        semconv.REACT_TERMINATION_REASON: "tool_calls_with_no_text",
        semconv.REACT_ITERATION_INDEX: 0,
        semconv.REACT_CONTENT_TYPE: "list",
        semconv.REACT_HAS_TOOL_CALLS: True,
        semconv.REACT_TOOL_CALL_COUNT: 2,
    }
    fabrication = events[semconv.EVENT_FABRICATION_DETECTED]
    assert fabrication[semconv.FABRICATION_MODE] == "observe"
    assert fabrication[semconv.FABRICATION_ACTION] == "observed"
    assert fabrication[semconv.FABRICATION_MAX_CONFIDENCE] == pytest.approx(0.65)
    assert fabrication[semconv.FABRICATION_FINDINGS] == 1
    evaluation = events[semconv.EVENT_EVALUATION_RESULT]
    assert evaluation[semconv.GEN_AI_EVALUATION_NAME] == semconv.EVALUATION_FABRICATION
    assert evaluation[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == pytest.approx(0.65)
    assert evaluation[semconv.GEN_AI_EVALUATION_SCORE_LABEL] == "observed"

    # Chat spans: times from started_at_utc + duration_ms, tokens in both spellings.
    react, synth = sorted(chats, key=lambda s: s.start_time_unix_nano)
    assert (react.start_time_unix_nano, react.end_time_unix_nano) == (T0_NS, T0_NS + 800_000_000)
    assert (synth.start_time_unix_nano, synth.end_time_unix_nano) == (T1_NS, T1_NS + 250_000_000)
    for span, node, tokens in (
        (react, semconv.NODE_REACT, (1200, 30)),
        (synth, semconv.NODE_SYNTHESIZE_FALLBACK, (1000, 20)),
    ):
        assert span.attributes[semconv.GEN_AI_OPERATION_NAME] == semconv.OP_CHAT
        assert span.attributes[semconv.GEN_AI_REQUEST_MODEL] == "gpt-4o"
        assert span.attributes[semconv.GEN_AI_PROVIDER_NAME] == "openai"
        assert span.attributes[semconv.NODE_NAME] == node
        assert span.attributes[semconv.TENANT_ID] == "acme"
        assert (
            span.attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS],
            span.attributes[semconv.GEN_AI_USAGE_OUTPUT_TOKENS],
        ) == tokens
    assert synth.attributes[semconv.SYNTHESIS_RECOVERED] is True
    assert semconv.SYNTHESIS_RECOVERED not in react.attributes

    # Resource: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, on spans and metrics alike.
    for resource in [run.resource, *(p.resource for p in receiver.points())]:
        assert resource["service.name"] == "checkout-agent"
        assert resource["deployment.environment.name"] == "staging"

    # Metrics.
    runs = _one(_points(receiver, semconv.AGENT_RUNS.name), "agent runs point")
    assert (runs.kind, runs.value, runs.is_monotonic) == ("sum", 1.0, True)
    assert runs.temporality == "CUMULATIVE"  # the SDK default
    assert runs.attributes == {
        semconv.TENANT_ID: "acme",
        semconv.GEN_AI_AGENT_NAME: "symfonic",
        semconv.RUN_OUTCOME: "completed",
        semconv.RESPONSE_EMPTY: False,
    }
    bails = _one(_points(receiver, semconv.SILENT_BAILS.name), "silent bail point")
    assert bails.value == 1.0
    assert bails.attributes == {
        semconv.TENANT_ID: "acme",
        semconv.GEN_AI_AGENT_NAME: "symfonic",
        semconv.REACT_TERMINATION_REASON: "tool_calls_with_no_text",
    }
    synthesis = _one(_points(receiver, semconv.SYNTHESIS_FALLBACKS.name), "synthesis point")
    assert synthesis.value == 1.0
    assert synthesis.attributes[semconv.SYNTHESIS_RECOVERED] is True

    durations = _points(receiver, semconv.CLIENT_OPERATION_DURATION.name)
    assert {p.unit for p in durations} == {"s"}
    assert {p.kind for p in durations} == {"histogram"}
    by_node = {p.attributes[semconv.NODE_NAME]: p for p in durations}
    assert set(by_node) == {semconv.NODE_REACT, semconv.NODE_SYNTHESIZE_FALLBACK}
    assert by_node[semconv.NODE_REACT].count == 1
    assert by_node[semconv.NODE_REACT].sum == pytest.approx(0.8)
    assert by_node[semconv.NODE_SYNTHESIZE_FALLBACK].sum == pytest.approx(0.25)
    assert by_node[semconv.NODE_REACT].explicit_bounds == pytest.approx(
        semconv.GEN_AI_DURATION_BUCKETS
    )
    assert by_node[semconv.NODE_REACT].attributes[semconv.GEN_AI_PROVIDER_NAME] == "openai"

    tokens = _points(receiver, semconv.CLIENT_TOKEN_USAGE.name)
    assert {p.unit for p in tokens} == {"{token}"}
    assert sorted(
        (p.attributes[semconv.NODE_NAME], p.attributes[semconv.GEN_AI_TOKEN_TYPE], p.sum)
        for p in tokens
    ) == [
        ("react", "input", 1200.0),
        ("react", "output", 30.0),
        ("react_synthesize_fallback", "input", 1000.0),
        ("react_synthesize_fallback", "output", 20.0),
    ]
    agent_duration = _one(_points(receiver, semconv.AGENT_DURATION.name), "agent duration")
    assert (agent_duration.unit, agent_duration.sum) == ("s", pytest.approx(RUN_DURATION_MS / 1000))
    detections = _one(_points(receiver, semconv.FABRICATION_DETECTIONS.name), "detection")
    assert detections.value == 1.0
    active = _one(_points(receiver, semconv.ACTIVE_RUNS.name), "active runs")
    assert (active.value, active.is_monotonic) == (0.0, False)

    # Exporter headers from OTEL_EXPORTER_OTLP_HEADERS reached the collector on every request.
    headers = receiver.headers()
    assert headers and all(h.get("x-api-key") == SECRET for h in headers)
    assert all(h.get("x-team") == "sre" for h in headers)
    # Privacy default: the user's query never leaves the process.
    assert QUERY.encode() not in receiver.raw_bytes()


async def test_delta_temporality_from_the_standard_variable(
    otlp_env: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
    with _configure() as telemetry, tenant_scope("acme"):
        await _scripted_run(_handler(telemetry))
        assert telemetry.force_flush()
    runs = _one(_points(otlp_env, semconv.AGENT_RUNS.name), "agent runs point")
    # Every counter goes delta: the per-tenant ones as increments of the series that changed.
    assert (runs.temporality, runs.value) == ("DELTA", 1.0)
    duration = _one(_points(otlp_env, semconv.AGENT_DURATION.name), "agent duration point")
    assert (duration.temporality, duration.count) == ("DELTA", 1)


async def test_each_signal_can_use_its_own_protocol_and_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Traces over HTTP to one collector, metrics over gRPC to another, all from env variables."""
    with HttpOtlpReceiver() as http_receiver, GrpcOtlpReceiver() as grpc_receiver:
        _point_to(monkeypatch, grpc_receiver.endpoint, "grpc")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
        monkeypatch.setenv(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{http_receiver.endpoint}/v1/traces"
        )
        with _configure(service_name="explicit-name") as telemetry:
            await _scripted_run(_handler(telemetry))
            assert telemetry.force_flush()
        assert len(http_receiver.spans()) == 3 and not http_receiver.points()
        assert grpc_receiver.points() and not grpc_receiver.spans()
        # An explicit service_name wins over the SDK default.
        assert {s.resource["service.name"] for s in http_receiver.spans()} == {"explicit-name"}


async def test_explicit_protocol_argument_overrides_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with HttpOtlpReceiver() as receiver:
        _point_to(monkeypatch, receiver.endpoint, "grpc")
        with _configure(otlp_protocol="http/protobuf") as telemetry:
            await _scripted_run(_handler(telemetry))
            assert telemetry.force_flush()
        assert len(receiver.spans()) == 3


async def test_otel_traces_exporter_none_disables_trace_export(
    otlp_env: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    with _configure() as telemetry:
        await _scripted_run(_handler(telemetry))
        assert telemetry.force_flush()
    assert otlp_env.spans() == []
    assert _points(otlp_env, semconv.AGENT_RUNS.name)


def test_otlp_false_builds_no_exporter_and_console_prints(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with _configure(otlp=False, console=True, service_name="console-demo") as telemetry:
        with telemetry.tracer_provider.get_tracer("t").start_as_current_span("hello"):
            pass
        assert telemetry.force_flush()
    out = capfd.readouterr().out
    assert '"name": "hello"' in out and "console-demo" in out


# --- Prometheus pull endpoint ---------------------------------------------------------------------


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        body: bytes = response.read()
    return body.decode()


async def test_prometheus_endpoint_serves_the_contract_names() -> None:
    telemetry = _configure(otlp=False, prometheus_port=0, service_name="prom-demo")
    try:
        assert telemetry.prometheus_port is not None and telemetry.prometheus_port > 0
        with tenant_scope("acme"):
            await _scripted_run(_handler(telemetry))
        text = _scrape(telemetry.prometheus_port)
    finally:
        assert telemetry.shutdown(timeout_millis=5_000)
    runs = semconv.AGENT_RUNS.prometheus_name
    assert runs == "symfonic_agent_runs_total"
    sample = re.search(rf"^{runs}\{{([^}}]*)\}} (\S+)$", text, re.MULTILINE)
    assert sample is not None, text
    labels, value = sample.groups()
    assert float(value) == 1.0
    assert 'tenant_id="acme"' in labels and 'symfonic_run_outcome="completed"' in labels
    for spec in (semconv.SILENT_BAILS, semconv.CLIENT_OPERATION_DURATION, semconv.AGENT_DURATION):
        for series in semconv.prometheus_series_names(spec):
            assert re.search(rf"^{series}\{{", text, re.MULTILINE), series
    # Shutdown closed the HTTP server: the port no longer answers.
    with pytest.raises(urllib.error.URLError):
        _scrape(telemetry.prometheus_port)


def test_two_prometheus_configurations_do_not_collide() -> None:
    """Each configuration has its own registry, so reconfiguring in one process works."""
    with (
        _configure(otlp=False, prometheus_port=0) as first,
        _configure(otlp=False, prometheus_port=0) as second,
    ):
        assert first.prometheus_port != second.prometheus_port
        first.meter_provider.get_meter("a").create_counter("only.first").add(1)
        second.meter_provider.get_meter("b").create_counter("only.second").add(1)
        first_text = _scrape(first.prometheus_port or 0)
        second_text = _scrape(second.prometheus_port or 0)
    assert "only_first_total" in first_text and "only_second" not in first_text
    assert "only_second_total" in second_text and "only_first" not in second_text


def test_prometheus_port_already_taken_is_a_clear_error() -> None:
    with (
        _configure(otlp=False, prometheus_port=0) as taken,
        pytest.raises(ValueError, match="prometheus_port"),
    ):
        _configure(otlp=False, prometheus_port=taken.prometheus_port)


# --- argument validation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prometheus_port": -1}, "prometheus_port must be"),
        ({"prometheus_port": 70_000}, "prometheus_port must be"),
        ({"prometheus_port": True}, "prometheus_port must be"),
        ({"prometheus_port": "9464"}, "prometheus_port must be"),
        ({"prometheus_host": ""}, "prometheus_host must be"),
        ({"otlp_protocol": "http/json"}, "otlp_protocol must be"),
        ({"service_name": "  "}, "service_name must be"),
        ({"export_interval_ms": 0}, "export_interval_ms must be"),
    ],
)
def test_bad_arguments_are_rejected_by_name(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        configure_telemetry(set_global=False, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"resource_attributes": {"team": 1}}, "resource_attributes must"),
        ({"console": "yes"}, "console must be a bool"),
        ({"otlp": 1}, "otlp must be a bool"),
    ],
)
def test_bad_argument_types_are_rejected_by_name(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        configure_telemetry(set_global=False, **kwargs)


def test_unsupported_protocol_in_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Named with its value in one warning; the default (grpc) is used and the app starts."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    with pytest.warns(RuntimeWarning, match="OTEL_EXPORTER_OTLP_PROTOCOL='http/json'"):
        telemetry = configure_telemetry(set_global=False, otlp=True)
    telemetry.shutdown(timeout_millis=CLEANUP_MS)


# --- reliability: a collector that is down or stuck -----------------------------------------------


def _emit_some(telemetry: Telemetry, spans: int = 5) -> None:
    tracer = telemetry.tracer_provider.get_tracer("load")
    for index in range(spans):
        with tracer.start_as_current_span(f"work {index}"):
            pass
    telemetry.meter_provider.get_meter("load").create_counter("load.items").add(spans)


def _timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
@pytest.mark.parametrize("collector", ["refused", "hanging"])
def test_flush_and_shutdown_are_bounded_when_the_collector_is_unreachable(
    monkeypatch: pytest.MonkeyPatch, protocol: str, collector: str
) -> None:
    hanging = HangingServer() if collector == "hanging" else None
    endpoint = hanging.endpoint if hanging is not None else refused_endpoint()
    try:
        _point_to(monkeypatch, endpoint, protocol)
        # The exporters' own timeout is far longer than ours: the bound must be ours.
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "30")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer {SECRET}")
        with capture_logs() as logs:
            telemetry = _configure()
            _emit_some(telemetry)
            flushed, flush_s = _timed(lambda: telemetry.force_flush(timeout_millis=1_000))
            clean, shutdown_s = _timed(lambda: telemetry.shutdown(timeout_millis=1_500))
            again, again_s = _timed(telemetry.shutdown)
        assert flush_s < 2.5, f"force_flush took {flush_s:.2f}s"
        assert shutdown_s < 3.0, f"shutdown took {shutdown_s:.2f}s"
        assert again_s < 0.1 and again is clean  # idempotent
        if collector == "hanging":
            assert flushed is False  # nothing can have been delivered
        assert telemetry.force_flush(timeout_millis=100) is False  # after shutdown
        assert SECRET not in repr(logs)
        assert any(e["event"] == "symfonic_otel.telemetry_shutdown" for e in logs)
    finally:
        if hanging is not None:
            hanging.close()


def test_spans_dropped_on_a_full_queue_are_counted_and_logged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with HangingServer() as hanging:
        _point_to(monkeypatch, hanging.endpoint, "grpc")
        monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "4")
        monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "2")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"x-api-key={SECRET}")
        with capture_logs() as logs:
            telemetry = _configure()
            _emit_some(telemetry, spans=50)
            # The worker hands at most one batch to the (stuck) exporter: 4 queued + <= 2 sent.
            assert 44 <= telemetry.dropped_spans <= 46
            telemetry.shutdown(timeout_millis=1_000)
        first_drop = [e for e in logs if e.get("kind") == "span_queue_full"]
        assert len(first_drop) == 1  # logged once, not 44 times
        summary = _one(
            [e for e in logs if e["event"] == "symfonic_otel.telemetry_shutdown"], "summary"
        )
        assert summary["dropped_spans"] == telemetry.dropped_spans
        assert summary["log_level"] == "warning"
        assert SECRET not in repr(logs)


def test_no_log_line_carries_header_secrets(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Neither our structlog lines nor the SDK's stdlib ones print OTEL_EXPORTER_OTLP_HEADERS."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer {SECRET}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", refused_endpoint())
    caplog.set_level("DEBUG")
    with capture_logs() as logs:
        telemetry = _configure(prometheus_port=0)
        _emit_some(telemetry)
        telemetry.force_flush(timeout_millis=500)
        telemetry.shutdown(timeout_millis=500)
    assert logs, "expected configure/shutdown log lines"
    assert SECRET not in repr(logs)
    assert SECRET not in caplog.text


def test_set_global_installs_the_providers_once() -> None:
    """The OTel globals can be set once per process; a second configuration says so.

    Run in a fresh interpreter: the globals are process-wide and other tests rely on theirs.
    """
    script = textwrap.dedent(
        """
        from opentelemetry import metrics, trace
        from structlog.testing import capture_logs
        from symfonic_otel import configure_telemetry

        with capture_logs() as logs:
            first = configure_telemetry(otlp=False)
            second = configure_telemetry(otlp=False)
        assert first.is_global and not second.is_global
        assert trace.get_tracer_provider() is first.tracer_provider
        assert metrics.get_meter_provider() is first.meter_provider
        events = [entry["event"] for entry in logs]
        assert "symfonic_otel.global_providers_already_set" in events, events
        second.shutdown()
        first.shutdown()
        print("ok")
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")


# --- log-trace correlation ------------------------------------------------------------------------


def test_add_trace_context_inside_and_outside_a_span() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("test")
    capture = CapturingLogger()
    logger = structlog.wrap_logger(capture, processors=[add_trace_context, lambda _l, _m, e: e])
    logger.info("outside")
    with tracer.start_as_current_span("inside") as span:
        logger.info("inside")
        logger.info("explicit", trace_id="caller-set")
    context = span.get_span_context()
    outside, inside, explicit = capture.calls
    assert "trace_id" not in outside.kwargs and "span_id" not in outside.kwargs
    assert inside.kwargs["trace_id"] == format(context.trace_id, "032x")
    assert inside.kwargs["span_id"] == format(context.span_id, "016x")
    assert re.fullmatch(r"[0-9a-f]{32}", inside.kwargs["trace_id"])
    assert re.fullmatch(r"[0-9a-f]{16}", inside.kwargs["span_id"])
    assert explicit.kwargs["trace_id"] == "caller-set"  # the caller's value wins
    provider.shutdown()


def test_add_trace_context_ignores_an_invalid_span() -> None:
    with trace.use_span(trace.INVALID_SPAN):
        assert add_trace_context(None, "info", {"event": "x"}) == {"event": "x"}


# --- FailureLog -----------------------------------------------------------------------------------


class _RecordingLogger:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def warning(self, event: str, **fields: Any) -> None:
        self.calls.append((event, fields))


def test_failure_log_logs_the_first_of_each_kind_and_counts_the_rest() -> None:
    logger = _RecordingLogger()
    failures = FailureLog(logger=logger)
    boom = RuntimeError("boom")
    for _ in range(5):
        failures.report("llm_end", boom, run_id="r1")
    failures.report("agent_end")
    assert failures.counts() == {"llm_end": 5, "agent_end": 1}
    assert [(fields["kind"], fields.get("error_type")) for _, fields in logger.calls] == [
        ("llm_end", "RuntimeError"),
        ("agent_end", None),
    ]
    assert all("exc_info" not in fields for _, fields in logger.calls)
    assert logger.calls[0][1]["run_id"] == "r1"


def test_failure_log_caps_kinds_into_other() -> None:
    logger = _RecordingLogger()
    failures = FailureLog(max_kinds=2, logger=logger)
    for kind in ("a", "b", "c", "d", "c"):
        failures.report(kind)
    assert failures.counts() == {"a": 1, "b": 1, "other": 3}
    assert [fields["kind"] for _, fields in logger.calls] == ["a", "b", "other"]
    assert logger.calls[-1][1]["original_kind"] == "c"


def test_failure_log_is_thread_safe_and_never_raises() -> None:
    class Exploding:
        def warning(self, *args: Any, **kwargs: Any) -> None:
            raise OSError("log sink down")

    failures = FailureLog(logger=Exploding())
    failures.report("x", ValueError("v"), event="collides with structlog's argument")

    logger = _RecordingLogger()
    shared = FailureLog(logger=logger)
    barrier = threading.Barrier(8)

    def hammer() -> None:
        barrier.wait()
        for _ in range(1_000):
            shared.report("same")

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert shared.counts() == {"same": 8_000}
    assert len(logger.calls) == 1
    assert failures.counts() == {"x": 1}


def test_failure_log_through_structlog_names_the_exception_type_not_its_text() -> None:
    with capture_logs() as logs:
        failures = FailureLog()
        try:
            raise KeyError("missing")
        except KeyError as exc:
            failures.report("lookup", exc, field="usage")
            failures.report("lookup", exc)
    entry = _one(logs, "log entry")
    assert entry["log_level"] == "warning"
    assert entry["kind"] == "lookup" and entry["field"] == "usage"
    assert entry["error_type"] == "KeyError" and "exc_info" not in entry
    assert "missing" not in repr(entry)  # the message may quote user data
