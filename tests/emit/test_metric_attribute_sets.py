"""The attribute set of each metric series, exactly: the labels the design table names, optional
ones only when they have a value, and nothing else (an extra key is a new series)."""

from __future__ import annotations

from symfonic_otel.emit import metric_attrs
from symfonic_otel.emit.metric_attrs import AgentAttrs

AGENT = AgentAttrs("support")


def test_a_run_carries_tenant_agent_and_outcome_and_empty_only_when_known() -> None:
    assert AGENT.runs("acme", "completed", None, False) == {
        "tenant.id": "acme",
        "gen_ai.agent.name": "support",
        "symfonic.run.outcome": "completed",
    }
    assert AGENT.runs("acme", "completed", False, False)["symfonic.response.empty"] is False
    assert AGENT.runs("acme", "completed", True, False)["symfonic.response.empty"] is True


def test_only_a_paused_run_carries_the_paused_flag() -> None:
    assert "symfonic.run.paused" not in AGENT.runs("acme", "completed", True, False)
    assert AGENT.runs("acme", "completed", True, True)["symfonic.run.paused"] is True


def test_duration_and_iterations_carry_the_tenant_only_when_given() -> None:
    assert AGENT.duration(None, "error") == {
        "gen_ai.agent.name": "support",
        "symfonic.run.outcome": "error",
    }
    assert AGENT.duration("acme", "error")["tenant.id"] == "acme"
    assert AGENT.iterations(None) == {"gen_ai.agent.name": "support"}
    assert AGENT.iterations("acme") == {"tenant.id": "acme", "gen_ai.agent.name": "support"}


def test_a_bail_and_a_stop_name_their_reason() -> None:
    assert AGENT.bail("acme", "tool_calls_with_no_text") == {
        "tenant.id": "acme",
        "gen_ai.agent.name": "support",
        "symfonic.react.termination_reason": "tool_calls_with_no_text",
    }
    assert AGENT.stop("acme", "max_tokens") == {
        "tenant.id": "acme",
        "gen_ai.agent.name": "support",
        "symfonic.run.stop_reason": "max_tokens",
    }


def test_a_tool_carries_tenant_and_error_only_when_given() -> None:
    assert AGENT.tool(None, "search", None) == {
        "gen_ai.tool.name": "search",
        "gen_ai.agent.name": "support",
    }
    assert AGENT.tool("acme", "search", "TimeoutError") == {
        "gen_ai.tool.name": "search",
        "gen_ai.agent.name": "support",
        "tenant.id": "acme",
        "error.type": "TimeoutError",
    }


def test_a_model_call_carries_provider_tenant_and_error_only_when_given() -> None:
    assert metric_attrs.operation(None, "chat", "gpt-4o", "agent", None, None) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "symfonic.node.name": "agent",
    }
    full = metric_attrs.operation("acme", "chat", "gpt-4o", "agent", "openai", "RateLimitError")
    assert full == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "symfonic.node.name": "agent",
        "tenant.id": "acme",
        "error.type": "RateLimitError",
    }
    assert metric_attrs.tokens(full, "input") == {**full, "gen_ai.token.type": "input"}
    assert "gen_ai.token.type" not in full  # the call's own set is left as it was


def test_tenant_counters_name_their_model_and_flags() -> None:
    assert metric_attrs.cost("acme", "gpt-4o", "agent", True) == {
        "tenant.id": "acme",
        "gen_ai.request.model": "gpt-4o",
        "symfonic.node.name": "agent",
        "symfonic.llm.pricing_unknown": True,
    }
    assert metric_attrs.synthesis("acme", "gpt-4o", False) == {
        "tenant.id": "acme",
        "gen_ai.request.model": "gpt-4o",
        "symfonic.synthesis.recovered": False,
    }
    assert metric_attrs.tenant_tokens("acme", "gpt-4o", "output") == {
        "tenant.id": "acme",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.token.type": "output",
    }


def test_fabrication_and_drop_series() -> None:
    assert metric_attrs.fabrication(None, "refuse", "refuse_replaced") == {
        "symfonic.fabrication.mode": "refuse",
        "symfonic.fabrication.action": "refuse_replaced",
    }
    assert metric_attrs.fabrication("acme", "observe", "observed")["tenant.id"] == "acme"
    assert metric_attrs.drop("agent_end", "duplicate") == {
        "symfonic.telemetry.event": "agent_end",
        "symfonic.telemetry.drop_reason": "duplicate",
    }
