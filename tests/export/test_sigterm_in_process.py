"""``Telemetry.shutdown_on_sigterm()`` in process: the shutdown first, then the handler that
was there before (a Python handler called, an ignored signal left ignored, the default action
ending the process as SIGTERM would).

The live tests stop a real app over OTLP; these raise SIGTERM in the test process (and, for the
default action that ends a process, in a forked copy of it), so the chaining is guarded in the
fast lane.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from types import FrameType

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from symfonic_otel import OTelCallbackHandler, configure_telemetry, semconv
from symfonic_otel.events import AgentStartEvent
from symfonic_otel.export.handle import Telemetry


@pytest.fixture
def sigterm_restored() -> Iterator[None]:
    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _telemetry() -> tuple[Telemetry, InMemorySpanExporter, OTelCallbackHandler]:
    exporter = InMemorySpanExporter()
    telemetry = configure_telemetry(
        service_name="sigterm-in-process",
        otlp=False,
        set_global=False,
        span_processors=[SimpleSpanProcessor(exporter)],
        metric_readers=[InMemoryMetricReader()],
    )
    handler = OTelCallbackHandler(
        agent_name="app",
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
    )
    handler.agent_start(AgentStartEvent(query="q", run_id="open-at-sigterm"))
    return telemetry, exporter, handler


def _abandoned(exporter: InMemorySpanExporter) -> list[object]:
    return [
        span.attributes.get(semconv.RUN_OUTCOME)
        for span in exporter.get_finished_spans()
        if span.attributes is not None and semconv.RUN_OUTCOME in span.attributes
    ]


def test_the_apps_own_handler_runs_after_the_shutdown(sigterm_restored: None) -> None:
    seen: list[bool] = []
    telemetry, exporter, _handler = _telemetry()

    def own(signum: int, frame: FrameType | None) -> None:
        seen.append(telemetry.is_shut_down)

    signal.signal(signal.SIGTERM, own)
    telemetry.shutdown_on_sigterm(timeout_millis=5_000)
    signal.raise_signal(signal.SIGTERM)
    assert seen == [True]  # called once, after the telemetry was shut down
    assert _abandoned(exporter) == ["abandoned"]  # the open run reached the exporter


def test_an_ignored_sigterm_stays_ignored_after_the_shutdown(sigterm_restored: None) -> None:
    telemetry, exporter, _handler = _telemetry()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    telemetry.shutdown_on_sigterm(timeout_millis=5_000)
    signal.raise_signal(signal.SIGTERM)  # the test process lives on
    assert telemetry.is_shut_down
    assert _abandoned(exporter) == ["abandoned"]


def test_with_the_default_action_the_process_still_ends_as_sigterm_would() -> None:
    """In a forked copy: the handler shuts down, then the default action ends the process."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read_end)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            telemetry, exporter, _handler = _telemetry()
            telemetry.shutdown_on_sigterm(timeout_millis=5_000)
            signal.raise_signal(signal.SIGTERM)
            os.write(write_end, f"survived {_abandoned(exporter)}".encode())
        finally:
            os._exit(7)
    os.close(write_end)
    deadline = time.monotonic() + 30
    done, status = os.waitpid(pid, os.WNOHANG)
    while not done and time.monotonic() < deadline:  # a copy that hangs must not hang pytest
        time.sleep(0.01)
        done, status = os.waitpid(pid, os.WNOHANG)
    if not done:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    with os.fdopen(read_end) as child_output:
        said = child_output.read()
    assert done, "the forked copy neither ended nor survived within 30 s"
    assert os.WIFSIGNALED(status), (status, said)
    assert os.WTERMSIG(status) == signal.SIGTERM
    assert said == ""
