"""The LangChain handler's option errors name the LangChain handler; the core options pass on."""

from __future__ import annotations

import pytest

from symfonic_otel import LangChainCallbackHandler
from symfonic_otel.testing.telemetry import InMemoryTelemetry

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
