"""Two shutdowns of one handle asked at once (the app's and the exit hook's) shut it down once:
the first claims the shutdown under the handle's lock, so the second, arriving between its check
and its claim, waits and then answers ``False`` (in progress) without running a second one.

The interleaving is forced (``tests/support/paused_section.py``): the first shutdown is paused
after it found none had started and before it claims it; the second runs then.
"""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from structlog.testing import capture_logs

from symfonic_otel.export.handle import Telemetry
from symfonic_otel.export.setup import configure_telemetry
from tests.support.paused_section import PausedBefore

pytestmark = pytest.mark.usefixtures("clean_otel_env")


def test_a_shutdown_arriving_as_another_claims_it_does_not_shut_down_a_second_time() -> None:
    telemetry = configure_telemetry(
        otlp=False, set_global=False, metric_readers=[InMemoryMetricReader()]
    )
    claim = PausedBefore(Telemetry.shutdown, "self._shutdown_result = False")
    with capture_logs() as logs, claim as first:
        first.start(telemetry.shutdown, timeout_millis=2_000)
        second = telemetry.shutdown(timeout_millis=2_000)
        assert first.finish() is True
    assert second is False
    summaries = [line for line in logs if line["event"] == "symfonic_otel.telemetry_shutdown"]
    assert len(summaries) == 1
    assert telemetry.shutdown(timeout_millis=2_000) is True
