"""``SilentBailSpanProcessor``: the run duration is the root span's, in seconds; each option
reaches the part it configures (the trace table's bounds: ``test_span_processor_bounds``); an
interrupt raised while it records passes through, once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics.export import HistogramDataPoint
from structlog.testing import capture_logs

from symfonic_otel import semconv
from symfonic_otel.spans import SilentBailSpanProcessor
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.span_peer import Peer as SpanPeer

RUNS = semconv.AGENT_RUNS.name


class Peer(SpanPeer):
    """Another instrumentation's GenAI spans, with the tenant and timing options these tests
    set on its agent span."""

    @contextmanager
    def agent(self, tenant: str | None = None, **kwargs: Any) -> Iterator[trace.Span]:
        attrs: dict[str, Any] = {semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT}
        if tenant is not None:
            attrs[semconv.TENANT_ID] = tenant
        with self.tracer.start_as_current_span(
            "invoke_agent peer", attributes=attrs, **kwargs
        ) as s:
            yield s

    def chat(self, finish: str = "stop") -> None:
        attrs = {
            semconv.GEN_AI_OPERATION_NAME: semconv.OP_CHAT,
            semconv.GEN_AI_RESPONSE_FINISH_REASONS: (finish,),
        }
        with self.tracer.start_as_current_span("chat peer-model", attributes=attrs):
            pass

    def run(self, tenant: str | None = None) -> None:
        with self.agent(tenant):
            self.chat()


def test_the_run_duration_is_the_root_spans_in_seconds(telemetry: InMemoryTelemetry) -> None:
    peer = Peer(telemetry)
    start = time.time_ns()
    with peer.agent(start_time=start, end_on_exit=False) as root:
        peer.chat()
    root.end(end_time=start + 2_500_000_000)
    [(_, point)] = telemetry.points(semconv.AGENT_DURATION.name)
    assert isinstance(point, HistogramDataPoint)
    assert point.sum == pytest.approx(2.5)


def test_tenant_idle_s_gives_a_slot_and_its_series_back_after_that_long(
    telemetry: InMemoryTelemetry,
) -> None:
    peer = Peer(telemetry, max_tenants=1, tenant_idle_s=0.05)
    peer.run("acme")
    time.sleep(0.1)
    peer.run("globex")
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "globex"}) == 1
    assert telemetry.value(RUNS, {semconv.TENANT_ID: semconv.OVERFLOW_VALUE}) == 0
    for name in (RUNS, semconv.SILENT_BAILS.name):  # and its series: none of acme's is left
        tenants = {
            attrs[semconv.TENANT_ID] for attrs, _ in telemetry.points(name, include_zeros=True)
        }
        assert tenants == {"globex"}


def test_max_tenants_admits_exactly_that_many(telemetry: InMemoryTelemetry) -> None:
    peer = Peer(telemetry, max_tenants=2)
    for tenant in ("a", "b", "c"):
        peer.run(tenant)
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "b"}) == 1
    assert telemetry.value(RUNS, {semconv.TENANT_ID: semconv.OVERFLOW_VALUE}) == 1


def test_agent_name_labels_the_metrics(telemetry: InMemoryTelemetry) -> None:
    Peer(telemetry, agent_name="planner").run("acme")
    [(attrs, _)] = telemetry.points(RUNS)
    assert attrs[semconv.GEN_AI_AGENT_NAME] == "planner"


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_while_recording_passes_through(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, exc: type[BaseException]
) -> None:
    peer = Peer(telemetry)

    def interrupted(*args: object, **kwargs: object) -> None:
        raise exc()

    monkeypatch.setattr(peer.processor._metrics, "run_ended", interrupted)
    with pytest.raises(exc), peer.agent("acme"):
        peer.chat()
    monkeypatch.undo()
    peer.run("acme")  # passed through once: the next run is recorded as usual
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "acme"}) == 1


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        (
            {"tenant_attributes": "tenant.id"},
            TypeError,
            "SilentBailSpanProcessor(tenant_attributes=...) takes a sequence of attribute names, "
            "got 'tenant.id'",
        ),
        (
            {"tenant_attributes": ("tenant.id", "")},
            ValueError,
            "SilentBailSpanProcessor(tenant_attributes=...) must hold non-empty str names, "
            "got ('tenant.id', '')",
        ),
        (
            {"tenant_metadata_key": 5},
            TypeError,
            "SilentBailSpanProcessor(tenant_metadata_key=...) must be a str or None, got 5",
        ),
        (
            {"agent_name": "\n"},
            ValueError,
            "SilentBailSpanProcessor(agent_name=...) must be a non-empty str, got '\\n'",
        ),
        (
            {"tenant_idle_s": 0},
            ValueError,
            "SilentBailSpanProcessor(tenant_idle_s=...) must be a positive number of seconds, "
            "got 0",
        ),
        (
            {"max_traces": 0},
            ValueError,
            "SilentBailSpanProcessor(max_traces=...) must be an int >= 1, got 0",
        ),
        (
            {"trace_ttl_s": -1.0},
            ValueError,
            "SilentBailSpanProcessor(trace_ttl_s=...) must be a positive number of seconds, "
            "got -1.0",
        ),
    ],
)
def test_each_bad_option_says_what_it_takes_and_what_it_got(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        SilentBailSpanProcessor(**options)
    assert str(raised.value) == message


def test_the_smallest_valid_bounds_are_accepted(telemetry: InMemoryTelemetry) -> None:
    Peer(telemetry, max_tenants=1, max_traces=1).run("acme")
    assert telemetry.value(RUNS, {semconv.TENANT_ID: "acme"}) == 1


@pytest.mark.parametrize(
    ("max_tenants", "warned"), [(10, False), (11_233, False), (11_234, True), (10**6, True)]
)
def test_more_tenants_than_the_series_limit_allows_is_said_at_construction(
    telemetry: InMemoryTelemetry, max_tenants: int, warned: bool
) -> None:
    """The budget counts the processor's 18 agent label values (16 names, its default and
    ``_OTHER``): 11,233 tenants fit the 2,000,000 series ``configure_telemetry`` allows,
    11,234 do not."""
    with capture_logs() as logs:
        SilentBailSpanProcessor(meter_provider=telemetry.meter_provider, max_tenants=max_tenants)
    found = [entry for entry in logs if entry["event"] == "symfonic_otel.series_budget_above_limit"]
    assert [entry["max_tenants"] for entry in found] == ([max_tenants] if warned else [])
