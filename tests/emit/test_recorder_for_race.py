"""Two handlers built at once on one meter share its one recorder (its queue and its collection
hook): the recorder is made under the recorders' lock, so the second caller, arriving while the
first makes it, waits and gets the same one.

The interleaving is forced (``tests/support/paused_section.py``): the first caller is paused
after it found no recorder and before it stores the one it made; the second runs then.
"""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from symfonic_otel.emit import recorder
from tests.support.paused_section import PausedBefore


def test_two_callers_asking_at_once_for_a_meters_recorder_get_the_same_one() -> None:
    provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    meter = provider.get_meter("t")
    try:
        with PausedBefore(recorder.recorder_for, "_recorders[meter] = recorder") as first:
            first.start(recorder.recorder_for, meter)
            second = recorder.recorder_for(meter)
            made = first.finish()
        assert made is second
        assert recorder.recorder_for(meter) is made
    finally:
        provider.shutdown()
