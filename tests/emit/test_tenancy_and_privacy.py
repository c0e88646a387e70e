"""Tenant resolution, sanitising, the tenant cap, and content capture."""

from __future__ import annotations

import asyncio
import json

import pytest

from symfonic_otel import semconv, tenant_scope
from symfonic_otel.events import (
    AgentEndEvent,
    AgentStartEvent,
    FabricationDetectedEvent,
    LLMEndEvent,
)
from symfonic_otel.handler import OTelCallbackHandler
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.recorded import recorded_text


def _run(handler: OTelCallbackHandler, run_id: str, answer: str = "ok") -> None:
    handler.agent_start(AgentStartEvent(query="secret question", run_id=run_id))
    handler.llm_end(LLMEndEvent(model="gpt-4o", output=answer, usage={}, run_id=run_id))
    handler.agent_end(AgentEndEvent(run_id, answer, 1.0, 1))


def _tenants(memory: InMemoryTelemetry) -> list[str]:
    return [a["tenant.id"] for a, _ in memory.points("symfonic.agent.runs")]


def test_no_tenant_anywhere_is_unknown(telemetry: InMemoryTelemetry) -> None:
    _run(telemetry.handler(), "a")
    assert _tenants(telemetry) == ["unknown"]


def test_tenant_is_fixed_at_agent_start(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()
    with tenant_scope("first"):
        handler.agent_start(AgentStartEvent("q", "r"))
    with tenant_scope("second"):
        handler.llm_end(LLMEndEvent(model="gpt-4o", output="x", usage={}, run_id="r"))
        handler.agent_end(AgentEndEvent("r", "x", 1.0, 1))
    cost = telemetry.points("symfonic.llm.cost.usd", include_zeros=True)
    assert {a["tenant.id"] for a, _ in cost} == {"first"}
    assert _tenants(telemetry) == ["first"]


async def test_scope_follows_asyncio_tasks(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler()

    async def one(tenant: str, run_id: str) -> None:
        with tenant_scope(tenant):
            await asyncio.sleep(0)
            await handler.on_agent_start(AgentStartEvent("q", run_id))
            await asyncio.sleep(0)
            await handler.on_agent_end(AgentEndEvent(run_id, "x", 1.0, 1))

    await asyncio.gather(*(one(f"t{i % 3}", f"r{i}") for i in range(30)))
    runs = telemetry.spans()
    assert len(runs) == 30
    for span in runs:
        attrs = span.attributes or {}
        assert attrs["tenant.id"] == f"t{int(str(attrs['symfonic.run.id'])[1:]) % 3}"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  acme  ", "acme"),
        ("a\nb\x00c", "a_b_c"),
        ("x" * 100, "x" * 64),
        ("   ", "unknown"),
        ("ünïcødé-ok", "ünïcødé-ok"),
        # Only the first 4 x 64 characters are read: a huge value costs no more than that.
        (" " * 252 + "acme", "acme"),
        (" " * 256 + "acme", "unknown"),
    ],
)
def test_tenant_values_are_sanitised(telemetry: InMemoryTelemetry, raw: str, expected: str) -> None:
    with tenant_scope(raw):
        _run(telemetry.handler(), "r")
    assert _tenants(telemetry) == [expected]


def test_tenant_cap_sends_the_rest_to_overflow(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(max_tenants=3)
    for i in range(10):
        with tenant_scope(f"tenant-{i}"):
            _run(handler, f"r{i}")
    assert set(_tenants(telemetry)) == {"tenant-0", "tenant-1", "tenant-2", "__overflow__"}
    assert telemetry.value("symfonic.agent.runs", {"tenant.id": "__overflow__"}) == 7


def test_tenant_scope_rejects_non_strings() -> None:
    with pytest.raises(TypeError, match="tenant_id"), tenant_scope(123):  # type: ignore[arg-type]
        pass


def _fabrication(run_id: str, draft: str) -> FabricationDetectedEvent:
    return FabricationDetectedEvent(
        run_id=run_id,
        mode="refuse",
        action_taken="refuse_replaced",
        findings=[{"kind": "unsupported_figure", "claim": draft}],
        refuse_threshold=0.8,
        max_finding_confidence=0.9,
        original_draft_preview=draft[:240],
        replacement_preview="I can't verify that.",
        preview_truncated=len(draft) > 240,
    )


def test_no_content_leaves_by_default(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(semconv.CAPTURE_CONTENT_ENV, raising=False)
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent(query="QUERY-SECRET", run_id="r"))
    handler.llm_end(LLMEndEvent(model="gpt-4o", output="OUTPUT-SECRET", usage={}, run_id="r"))
    handler.fabrication_detected(_fabrication("r", "DRAFT-SECRET"))
    handler.agent_end(AgentEndEvent("r", "OUTPUT-SECRET", 1.0, 1))
    text = recorded_text(telemetry)
    for secret in ("QUERY-SECRET", "OUTPUT-SECRET", "DRAFT-SECRET", "can't verify"):
        assert secret not in text


@pytest.mark.parametrize("env", ["true", "SPAN_ONLY", "span_and_event"])
def test_env_switch_turns_capture_on(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch, env: str
) -> None:
    monkeypatch.setenv(semconv.CAPTURE_CONTENT_ENV, env)
    assert telemetry.handler().capture_content is True


def test_explicit_false_wins_over_env(
    telemetry: InMemoryTelemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(semconv.CAPTURE_CONTENT_ENV, "true")
    assert telemetry.handler(capture_content=False).capture_content is False


def test_captured_content_is_truncated_and_flagged(telemetry: InMemoryTelemetry) -> None:
    handler = telemetry.handler(capture_content=True)
    long_answer = "A" * 10_000
    handler.agent_start(AgentStartEvent(query="short question", run_id="r"))
    handler.fabrication_detected(_fabrication("r", "D" * 300))
    handler.agent_end(AgentEndEvent("r", long_answer, 1.0, 1))
    run = telemetry.span("invoke_agent symfonic")
    attrs = run.attributes or {}
    question = json.loads(str(attrs["gen_ai.input.messages"]))
    assert question == [{"role": "user", "parts": [{"type": "text", "content": "short question"}]}]
    answer = json.loads(str(attrs["gen_ai.output.messages"]))
    assert len(answer[0]["parts"][0]["content"]) == 4096
    assert attrs["symfonic.content.truncated"] is True
    event = dict(run.events[0].attributes or {})
    assert event["symfonic.fabrication.original_draft_preview"] == "D" * 240
    assert event["symfonic.fabrication.replacement_preview"] == "I can't verify that."
    assert event["symfonic.fabrication.preview_truncated"] is True
