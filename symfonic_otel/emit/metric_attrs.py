"""Attribute sets of every metric series, one builder per instrument family.

Each builder runs once per label combination: the metric emitter caches what it returns and
reuses the same dict on the hot path (the deferred recorder keys counter sums by its identity).
"""

from __future__ import annotations

from typing import Any

from symfonic_otel import semconv


class AgentAttrs:
    """Attribute sets labelled with one handler's agent name."""

    __slots__ = ("agent",)

    def __init__(self, agent: str) -> None:
        self.agent = agent

    def runs(self, tenant: str, outcome: str, empty: bool | None, paused: bool) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            semconv.TENANT_ID: tenant,
            semconv.GEN_AI_AGENT_NAME: self.agent,
            semconv.RUN_OUTCOME: outcome,
        }
        if empty is not None:
            attrs[semconv.RESPONSE_EMPTY] = empty
        if paused:  # only on paused runs: the series of every other run keep their names
            attrs[semconv.RUN_PAUSED] = True
        return attrs

    def duration(self, tenant: str | None, outcome: str) -> dict[str, Any]:
        attrs = _tenant(tenant)
        attrs[semconv.GEN_AI_AGENT_NAME] = self.agent
        attrs[semconv.RUN_OUTCOME] = outcome
        return attrs

    def iterations(self, tenant: str | None) -> dict[str, Any]:
        attrs = _tenant(tenant)
        attrs[semconv.GEN_AI_AGENT_NAME] = self.agent
        return attrs

    def bail(self, tenant: str, reason: str) -> dict[str, Any]:
        return {
            semconv.TENANT_ID: tenant,
            semconv.GEN_AI_AGENT_NAME: self.agent,
            semconv.REACT_TERMINATION_REASON: reason,
        }

    def stop(self, tenant: str, stop: str) -> dict[str, Any]:
        return {
            semconv.TENANT_ID: tenant,
            semconv.GEN_AI_AGENT_NAME: self.agent,
            semconv.RUN_STOP_REASON: stop,
        }

    def tool(self, tenant: str | None, tool: str, error: str | None) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            semconv.GEN_AI_TOOL_NAME: tool,
            semconv.GEN_AI_AGENT_NAME: self.agent,
        }
        if tenant is not None:  # histograms carry the tenant only with tenant_histograms=True
            attrs[semconv.TENANT_ID] = tenant
        if error is not None:
            attrs[semconv.ERROR_TYPE] = error
        return attrs


def _tenant(tenant: str | None) -> dict[str, Any]:
    return {} if tenant is None else {semconv.TENANT_ID: tenant}


def fabrication(tenant: str | None, mode: str, action: str) -> dict[str, Any]:
    attrs = _tenant(tenant)
    attrs[semconv.FABRICATION_MODE] = mode
    attrs[semconv.FABRICATION_ACTION] = action
    return attrs


def drop(event_kind: str, reason: str) -> dict[str, Any]:
    return {semconv.TELEMETRY_EVENT: event_kind, semconv.TELEMETRY_DROP_REASON: reason}


def operation(
    tenant: str | None, op: str, model: str, node: str, provider: str | None, error: str | None
) -> dict[str, Any]:
    attrs: dict[str, Any] = {semconv.GEN_AI_OPERATION_NAME: op}
    if provider is not None:
        attrs[semconv.GEN_AI_PROVIDER_NAME] = provider
    attrs[semconv.GEN_AI_REQUEST_MODEL] = model
    attrs[semconv.NODE_NAME] = node
    if tenant is not None:
        attrs[semconv.TENANT_ID] = tenant
    if error is not None:
        attrs[semconv.ERROR_TYPE] = error
    return attrs


def tokens(op_attrs: dict[str, Any], token_type: str) -> dict[str, Any]:
    return {**op_attrs, semconv.GEN_AI_TOKEN_TYPE: token_type}


def cost(tenant: str, model: str, node: str, pricing_unknown: bool) -> dict[str, Any]:
    return {
        semconv.TENANT_ID: tenant,
        semconv.GEN_AI_REQUEST_MODEL: model,
        semconv.NODE_NAME: node,
        semconv.LLM_PRICING_UNKNOWN: pricing_unknown,
    }


def synthesis(tenant: str, model: str, recovered: bool) -> dict[str, Any]:
    return {
        semconv.TENANT_ID: tenant,
        semconv.GEN_AI_REQUEST_MODEL: model,
        semconv.SYNTHESIS_RECOVERED: recovered,
    }


def tenant_tokens(tenant: str, model: str, token_type: str) -> dict[str, Any]:
    return {
        semconv.TENANT_ID: tenant,
        semconv.GEN_AI_REQUEST_MODEL: model,
        semconv.GEN_AI_TOKEN_TYPE: token_type,
    }
