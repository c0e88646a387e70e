"""The LangChain handler takes the core handler's options by name, and names its own mistakes."""

from __future__ import annotations

import pytest

from symfonic_otel.langchain import LangChainCallbackHandler
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def test_langchain_handler_rejects_an_unknown_option_naming_itself() -> None:
    with pytest.raises(TypeError) as raised:
        LangChainCallbackHandler(tenant="acme")
    message = str(raised.value)
    assert message.startswith("LangChainCallbackHandler() got an unexpected keyword argument")
    assert "'tenant'" in message and "OTelCallbackHandler.__init__" not in message
    assert message.endswith("did you mean 'tenant_id'?")


def test_an_unknown_option_far_from_every_name_gets_no_guess() -> None:
    with pytest.raises(TypeError) as raised:
        LangChainCallbackHandler(colour="blue")
    assert str(raised.value) == (
        "LangChainCallbackHandler() got an unexpected keyword argument 'colour'"
    )


def test_langchain_handler_shows_every_core_option_by_name() -> None:
    """help() and IDEs list the options: the core handler's, each with the same default."""
    import inspect

    from symfonic_otel import OTelCallbackHandler

    ours = inspect.signature(LangChainCallbackHandler.__init__).parameters
    core = inspect.signature(OTelCallbackHandler.__init__).parameters
    for name, parameter in core.items():
        if name == "self":
            continue
        assert name in ours, name
        assert ours[name].default == parameter.default, name
        assert ours[name].kind is inspect.Parameter.KEYWORD_ONLY, name
    assert "handler_kwargs" not in ours


def test_langchain_handler_passes_the_core_options_on(telemetry: InMemoryTelemetry) -> None:
    lc = LangChainCallbackHandler(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        tenant_id="acme",
        agent_name="clerk",
        max_tenants=3,
    )
    assert lc.handler.agent_name == "clerk"
