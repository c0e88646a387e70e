"""The sanitiser's time range and int64 attributes, at the bound and one past."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider

from symfonic_otel.events import AgentEndEvent, AgentStartEvent
from symfonic_otel.read.sanitise import MAX_TIME_NS
from symfonic_otel.testing.telemetry import InMemoryTelemetry

MALFORMED = {"symfonic.telemetry.drop_reason": "malformed"}


# --- the sanitiser: time range and int64, at the bound and one past --------------------------


@pytest.mark.parametrize(("start_ns", "kept"), [(MAX_TIME_NS - 1, True), (MAX_TIME_NS, False)])
def test_start_time_at_the_upper_bound_is_rejected_one_below_is_kept(
    telemetry: InMemoryTelemetry, start_ns: int, kept: bool
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"), start_time_ns=start_ns)
    handler.agent_end(AgentEndEvent("r", "a", 1.0, 1), end_time_ns=start_ns)
    span = telemetry.span("invoke_agent symfonic")
    assert (span.start_time == start_ns) is kept
    assert telemetry.value("symfonic.telemetry.dropped_events", MALFORMED) == (0 if kept else 1)
    encode_spans([span])  # whatever was kept, the OTLP encoder takes it


def _encoded_attributes(span: Any) -> dict[str, Any]:
    """The span's attributes as the real OTLP encoder wrote them (it skips what it cannot)."""
    [encoded] = encode_spans([span]).resource_spans[0].scope_spans[0].spans
    return {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in encoded.attributes}


@pytest.mark.parametrize(
    ("value", "kept"),
    [(2**63 - 1, True), (2**63, False), (-(2**63), True), (-(2**63) - 1, False)],
)
def test_int_attribute_at_the_int64_bound_is_kept_one_past_is_left_out(
    telemetry: InMemoryTelemetry, value: int, kept: bool
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "r"), attributes={"app.count": value, "app.ok": 1})
    handler.agent_end(AgentEndEvent("r", "a", 1.0, 1))
    span = telemetry.span("invoke_agent symfonic")
    assert span.attributes is not None and span.attributes["app.ok"] == 1
    assert ("app.count" in span.attributes) is kept
    encoded = _encoded_attributes(span)
    assert encoded.keys() == span.attributes.keys()  # the encoder lost nothing we kept
    assert (encoded.get("app.count") == value) is kept


def test_the_encoder_itself_loses_an_int_one_past_int64(caplog: pytest.LogCaptureFixture) -> None:
    """The bound above is the encoder's: one past it, the attribute does not reach the wire."""
    tracer = TracerProvider().get_tracer("t")
    at_bound = tracer.start_span("ok", attributes={"n": 2**63 - 1})
    at_bound.end()
    assert _encoded_attributes(at_bound) == {"n": 2**63 - 1}
    past = tracer.start_span("bad")
    past._attributes._dict["n"] = 2**63  # type: ignore[attr-defined]  # past the SDK's own check
    past.end()
    assert _encoded_attributes(past) == {}
