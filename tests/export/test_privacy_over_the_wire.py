"""Privacy checked on the wire: every byte the OTLP exporters send, grepped for the run's text.

The reference loop runs with the handler and a fabrication check (refuse mode, heuristic
detector, so original-draft and replacement previews exist), exporting over gRPC and HTTP to the
test receiver, which keeps every request body. With default settings none of the prompts,
responses, previews or finding claims may appear in those bytes; with ``capture_content=True``
they do, cut at the capture limits. The in-memory half of these rules is in
``test_tenancy_and_privacy.py``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from structlog.testing import capture_logs

from symfonic_otel import OTelCallbackHandler, semconv
from symfonic_otel.agent import (
    SAFE_ENVELOPE,
    FrameworkConfig,
    ReactAgent,
    heuristic_fabrication_detector,
)
from symfonic_otel.export.setup import configure_telemetry
from symfonic_otel.read.content import MAX_CONTENT_CHARS
from symfonic_otel.testing import ScriptedChatModel
from tests.support.otlp_receiver import (
    GrpcOtlpReceiver,
    HttpOtlpReceiver,
    OtlpReceiver,
    ReceivedSpan,
)
from tests.support.reliability_support import catalogue

SECRET = "hdr-Secret-7f3e-kite"
PREVIEW_CHARS = 240  # the loop's preview length (FabricationDetectedEvent)
FILLER = "padding " * 700  # pushes the tails past the 4,096-character capture limit

QUERY_A = (
    f"PROMPT-HEAD-kestrel please email the invoice to the customer. {FILLER}PROMPT-TAIL-osprey"
)
DRAFT_A = (
    f"DRAFT-HEAD-marmot I have sent the invoice email to the customer. {FILLER}DRAFT-TAIL-wombat"
)
QUERY_B = "PROMPT-B-heron what does the catalogue say about sku?"
RESPONSE_B1 = "RESPONSE-B1-ibex checking the catalogue first"
RESPONSE_B2 = "RESPONSE-B2-lynx the catalogue has it in stock."

# Text that must stay in the process by default. The claim is what the detector quotes from the
# draft (findings leave as counts and kinds only); the envelope is the replacement preview and
# run A's final response.
PRIVATE = {
    "prompt head": "PROMPT-HEAD-kestrel",
    "prompt tail": "PROMPT-TAIL-osprey",
    "draft head": "DRAFT-HEAD-marmot",
    "draft tail": "DRAFT-TAIL-wombat",
    "finding claim": "I have sent the invoice",
    "prompt B": "PROMPT-B-heron",
    "response B1": "RESPONSE-B1-ibex",
    "response B2": "RESPONSE-B2-lynx",
    "tool result": "value-of-gecko",
    "replacement preview": SAFE_ENVELOPE[:60],
}
CUT_BY_TRUNCATION = ("prompt tail", "draft tail")  # past 4,096 characters: never exported


pytestmark = pytest.mark.usefixtures("clean_otel_env")


@pytest.fixture(params=["grpc", "http/protobuf"])
def receiver(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[OtlpReceiver]:
    server: OtlpReceiver = GrpcOtlpReceiver() if request.param == "grpc" else HttpOtlpReceiver()
    with server:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", server.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", server.protocol)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"x-api-key={SECRET},x-team=sre")
        yield server


def _script_a() -> list[AIMessage]:
    return [AIMessage(content=DRAFT_A, response_metadata={"finish_reason": "stop"})]


def _script_b() -> list[AIMessage]:
    return [
        AIMessage(
            content=RESPONSE_B1,
            tool_calls=[{"name": "catalogue", "args": {"sku": "gecko"}, "id": "c1"}],
            response_metadata={"finish_reason": "tool_calls"},
        ),
        AIMessage(content=RESPONSE_B2, response_metadata={"finish_reason": "stop"}),
    ]


async def _export_two_runs(
    receiver: OtlpReceiver, caplog: pytest.LogCaptureFixture, **handler_kwargs: Any
) -> tuple[list[ReceivedSpan], bytes, str]:
    """Run the fabricated (refused) run and a tool-using run; return spans, raw bytes, logs."""
    caplog.set_level(logging.DEBUG)
    config = FrameworkConfig(
        fabrication_check="refuse", fabrication_detector=heuristic_fabrication_detector
    )
    with capture_logs() as structlog_lines:
        telemetry = configure_telemetry(set_global=False, export_interval_ms=60_000)
        handler = OTelCallbackHandler(
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
            **handler_kwargs,
        )
        run_a = await ReactAgent(
            ScriptedChatModel(_script_a()), [catalogue], config=config, callbacks=[handler]
        ).run(QUERY_A, run_id="run-a")
        run_b = await ReactAgent(
            ScriptedChatModel(_script_b()), [catalogue], config=config, callbacks=[handler]
        ).run(QUERY_B, run_id="run-b")
        assert telemetry.force_flush(timeout_millis=5_000)
        telemetry.shutdown(timeout_millis=5_000)
    assert run_a.final_response == SAFE_ENVELOPE  # refused: previews exist for this run
    assert run_b.final_response == RESPONSE_B2
    assert receiver.wait_for(lambda r: len(r.spans()) >= 5 and bool(r.metric_requests()))
    logs = repr(structlog_lines) + caplog.text
    return receiver.spans(), receiver.raw_bytes(), logs


def _hits(raw: bytes) -> dict[str, bool]:
    return {name: text.encode() in raw for name, text in PRIVATE.items()}


def _run_span(spans: list[ReceivedSpan], run_id: str) -> ReceivedSpan:
    name = semconv.agent_span_name("symfonic")
    [span] = [s for s in spans if s.name == name and s.attributes.get(semconv.RUN_ID) == run_id]
    return span


def _fabrication_event(spans: list[ReceivedSpan]) -> dict[str, Any]:
    run_a = _run_span(spans, "run-a")
    [event] = [attrs for name, attrs in run_a.events if name == semconv.EVENT_FABRICATION_DETECTED]
    return event


async def test_default_settings_send_no_content_and_no_header_secret(
    receiver: OtlpReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    spans, raw, logs = await _export_two_runs(receiver, caplog)

    # The wire carried the runs (two run spans, three chat spans, the detection) ...
    assert sorted(s.name for s in spans).count(semconv.agent_span_name("symfonic")) == 2
    event = _fabrication_event(spans)
    assert event[semconv.FABRICATION_ACTION] == "refuse_replaced"
    assert event[semconv.FABRICATION_FINDINGS] >= 1
    # ... and none of their text: zero hits over every byte received.
    assert _hits(raw) == dict.fromkeys(PRIVATE, False)
    for span in spans:
        assert semconv.GEN_AI_INPUT_MESSAGES not in span.attributes
        assert semconv.GEN_AI_OUTPUT_MESSAGES not in span.attributes
    assert semconv.FABRICATION_DRAFT_PREVIEW not in event
    assert semconv.FABRICATION_REPLACEMENT_PREVIEW not in event

    # The header secret reached the collector (so it was in use) and no log line.
    assert any(h.get("x-api-key") == SECRET for h in receiver.headers())
    assert SECRET.encode() not in raw
    assert SECRET not in logs


async def test_capture_on_sends_content_cut_at_the_limits(
    receiver: OtlpReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    spans, raw, logs = await _export_two_runs(receiver, caplog, capture_content=True)

    # Tool results travel too (``gen_ai.tool.call.result`` on the tool spans, capture only).
    expected = {name: name not in CUT_BY_TRUNCATION for name in PRIVATE}
    assert _hits(raw) == expected

    run_a = _run_span(spans, "run-a")
    [query] = json.loads(run_a.attributes[semconv.GEN_AI_INPUT_MESSAGES])
    assert query["parts"][0]["content"] == QUERY_A[:MAX_CONTENT_CHARS]
    assert run_a.attributes[semconv.CONTENT_TRUNCATED] is True

    drafts = [
        json.loads(s.attributes[semconv.GEN_AI_OUTPUT_MESSAGES])[0]["parts"][0]["content"]
        for s in spans
        if s.parent_span_id == run_a.span_id and semconv.GEN_AI_OUTPUT_MESSAGES in s.attributes
    ]
    assert drafts == [DRAFT_A[:MAX_CONTENT_CHARS]]

    event = _fabrication_event(spans)
    assert event[semconv.FABRICATION_DRAFT_PREVIEW] == DRAFT_A[:PREVIEW_CHARS]
    assert event[semconv.FABRICATION_REPLACEMENT_PREVIEW] == SAFE_ENVELOPE[:PREVIEW_CHARS]
    assert event[semconv.FABRICATION_PREVIEW_TRUNCATED] is True

    assert any(h.get("x-api-key") == SECRET for h in receiver.headers())
    assert SECRET not in logs
