"""Defects found by using the package as its users do, each pinned by the behaviour they expect.

The reference loop's callback-failure line carrying its run id is checked with the other log
lines, under structlog and stdlib logging, in ``test_logs_privacy.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from symfonic_otel import LangChainCallbackHandler, ModelPrice
from symfonic_otel.emit import pricing
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}

# --- typed usage: pricing_unknown from the price table, read when asked ------------------------


def test_typed_usage_of_a_model_no_table_prices_is_pricing_unknown() -> None:
    event = LLMEndEvent("no-such-model-v9", "x", USAGE)
    assert event.pricing_unknown is False  # the emitter left the flag alone, as it may
    usage = event.typed_usage
    assert usage.pricing_unknown is True
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (10, 5, 15)


@pytest.mark.parametrize("model", ["gpt-4o-mini", "claude-sonnet-4-20250514", "openai/gpt-4.1"])
def test_typed_usage_of_a_priced_model_is_not_pricing_unknown(model: str) -> None:
    assert LLMEndEvent(model, "x", USAGE).typed_usage.pricing_unknown is False


def test_typed_usage_keeps_the_flag_the_event_set() -> None:
    event = LLMEndEvent("gpt-4o-mini", "x", USAGE, pricing_unknown=True)
    assert event.typed_usage.pricing_unknown is True


def test_typed_usage_reads_the_table_at_access_time(monkeypatch: pytest.MonkeyPatch) -> None:
    event = LLMEndEvent("acme-llm-2", "x", USAGE)  # built before the model had a price
    assert event.typed_usage.pricing_unknown is True
    monkeypatch.setitem(pricing.DEFAULT_PRICES, "acme-llm", ModelPrice(1.0, 2.0))
    assert event.typed_usage.pricing_unknown is False


# --- a core run whose answer cannot be read still ends -----------------------------------------


class _StoreDown(RuntimeError):
    pass


class _LazyEnd:
    """An AgentEnd whose answer is a lazy property over a store that is down."""

    def __init__(self, run_id: str, outcome: str) -> None:
        self.run_id = run_id
        self.outcome = outcome
        self.duration_ms = 12.0
        self.node_count = 2

    @property
    def final_response(self) -> str:
        raise _StoreDown("answer store unreachable")


@pytest.fixture
def structlog_quiet() -> Iterator[list[dict[str, object]]]:
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        yield logs


@pytest.mark.parametrize("outcome", ["completed", "error"])
def test_run_whose_answer_raises_on_read_ends_counted_malformed(
    telemetry: InMemoryTelemetry, structlog_quiet: list[dict[str, object]], outcome: str
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "lazy-run"))
    handler.agent_end(_LazyEnd("lazy-run", outcome))
    assert handler.open_runs == 0  # ended now, not at the TTL
    span = telemetry.span("invoke_agent symfonic")
    assert span.end_time is not None and span.attributes is not None
    assert span.attributes["symfonic.run.outcome"] == outcome  # as reported
    assert "symfonic.response.empty" not in span.attributes  # the answer is unknown
    assert telemetry.value("symfonic.agent.runs", {"symfonic.run.outcome": outcome}) == 1
    drops = telemetry.points("symfonic.telemetry.dropped_events")
    assert [(a["symfonic.telemetry.drop_reason"], v) for a, v in drops] == [("malformed", 1)]
    assert telemetry.value("symfonic.agent.active_runs") == 0
    [line] = [entry for entry in structlog_quiet if entry.get("log_level") == "warning"]
    assert (line["kind"], line["error_type"], line["run_id"]) == (
        "agent_end",
        "test_user_reports._StoreDown",
        "lazy-run",
    )


class _AllButIdRaise:
    run_id = "broken-run"

    def __getattr__(self, name: str) -> object:
        raise _StoreDown(name)


def test_run_whose_every_other_field_raises_still_ends(
    telemetry: InMemoryTelemetry, structlog_quiet: list[dict[str, object]]
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "broken-run"))
    handler.agent_end(_AllButIdRaise())
    assert handler.open_runs == 0
    span = telemetry.span("invoke_agent symfonic")
    assert span.end_time is not None and span.attributes is not None
    assert span.attributes["symfonic.run.outcome"] == "completed"  # none reported: the default
    assert telemetry.value("symfonic.agent.runs") == 1
    assert (
        telemetry.value(
            "symfonic.telemetry.dropped_events", {"symfonic.telemetry.drop_reason": "malformed"}
        )
        == 1
    )


def test_a_later_readable_end_of_the_same_run_is_a_duplicate(
    telemetry: InMemoryTelemetry, structlog_quiet: list[dict[str, object]]
) -> None:
    handler = telemetry.handler()
    handler.agent_start(AgentStartEvent("q", "lazy-run"))
    handler.agent_end(_LazyEnd("lazy-run", "completed"))
    handler.agent_end(AgentEndEvent("lazy-run", "the answer", 12.0, 2))
    assert telemetry.value("symfonic.agent.runs") == 1
    assert (
        telemetry.value(
            "symfonic.telemetry.dropped_events", {"symfonic.telemetry.drop_reason": "duplicate"}
        )
        == 1
    )


# --- the LangChain handler's errors name the LangChain handler ---------------------------------


def test_langchain_handler_rejects_an_unknown_option_naming_itself() -> None:
    with pytest.raises(TypeError) as raised:
        LangChainCallbackHandler(tenant="acme")
    message = str(raised.value)
    assert message.startswith("LangChainCallbackHandler() got an unexpected keyword argument")
    assert "'tenant'" in message and "OTelCallbackHandler.__init__" not in message


def test_langchain_handler_passes_the_core_options_on(telemetry: InMemoryTelemetry) -> None:
    lc = LangChainCallbackHandler(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        tenant_id="acme",
        agent_name="clerk",
        max_tenants=3,
    )
    assert lc.handler.agent_name == "clerk"
