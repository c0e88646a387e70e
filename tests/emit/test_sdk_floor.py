"""The SDK floor (1.43): what holds on every supported SDK, and what needs 1.45.

SDK 1.45 brought the cardinality limit and the reset of delta storage. Before it the SDK keeps
every attribute set an instrument was given for the life of the process. The package's own sets
stay bounded on every SDK (its label budgets; the per-tenant counters live in its own store),
so the only series that grew without bound were the opt-in per-tenant histograms: on an SDK
without the limit ``tenant_histograms=True`` is turned off with one warning. ``.ci/oldest-sdk``
runs this module on SDK 1.43; here the old SDK is simulated by answering the same capability
check the package makes.
"""

from __future__ import annotations

import asyncio
import warnings

import pytest
from structlog.testing import capture_logs

from symfonic_otel import semconv
from symfonic_otel.emit import budget
from symfonic_otel.events import AgentEndEvent, AgentStartEvent, LLMEndEvent
from symfonic_otel.testing.telemetry import InMemoryTelemetry

NEEDS_145 = r"^tenant_histograms=True needs opentelemetry-sdk 1\.45"
HISTOGRAMS = (semconv.AGENT_DURATION.name, semconv.CLIENT_OPERATION_DURATION.name)


async def _run(handler: object, run_id: str) -> None:
    await handler.on_agent_start(AgentStartEvent(query="q", run_id=run_id))  # type: ignore[attr-defined]
    await handler.on_llm_end(  # type: ignore[attr-defined]
        LLMEndEvent(
            model="gpt-4o",
            output="fine",
            usage={"input_tokens": 10, "output_tokens": 2},
            run_id=run_id,
            node_name="react",
            duration_ms=80.0,
            started_at_utc="2026-11-30T12:00:00.000000+00:00",
            iteration_index=0,
        )
    )
    await handler.on_agent_end(  # type: ignore[attr-defined]
        AgentEndEvent(run_id=run_id, final_response="fine", duration_ms=100.0, node_count=1)
    )


def _histogram_sets(telemetry: InMemoryTelemetry) -> set[tuple[str, frozenset[object]]]:
    return {
        (name, frozenset(attributes.items()))
        for name in HISTOGRAMS
        for attributes, _ in telemetry.points(name)
    }


def _tenants_in_histograms(telemetry: InMemoryTelemetry) -> set[object]:
    return {
        attributes.get(semconv.TENANT_ID)
        for name in HISTOGRAMS
        for attributes, _ in telemetry.points(name)
    } - {None}


@pytest.fixture
def old_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The capability check answers as SDK 1.43 / 1.44 would (already so on such an SDK)."""
    monkeypatch.setattr(budget, "sdk_bounds_series", lambda: False)


def test_on_an_sdk_without_limits_tenant_histograms_are_off_with_one_warning(
    old_sdk: None,
) -> None:
    telemetry = InMemoryTelemetry()
    try:
        with (
            pytest.warns(RuntimeWarning, match=NEEDS_145) as warned,
            capture_logs() as logs,
        ):
            handler = telemetry.handler(tenant_id="acme", tenant_histograms=True)
        (warning,) = warned
        assert str(warning.message).endswith(
            "before it the SDK keeps every tenant's histogram series for the life of the process, "
            "so memory grows with every tenant ever seen; the histograms carry no tenant "
            "(tenant_histograms=False). The per-tenant counters are unaffected."
        )
        (log,) = [e for e in logs if e["event"] == "symfonic_otel.tenant_histograms_off"]
        assert (log["log_level"], log["needs"]) == ("warning", "1.45")
        assert log["sdk_version"] in str(warning.message)
        asyncio.run(_run(handler, "run-1"))
        assert _tenants_in_histograms(telemetry) == set()
        assert telemetry.value(semconv.AGENT_RUNS.name, {semconv.TENANT_ID: "acme"}) == 1
    finally:
        telemetry.shutdown()


def test_histogram_series_stay_bounded_whatever_the_tenants_on_every_sdk() -> None:
    """Without per-tenant histograms, 300 tenants add no histogram series to one tenant's."""
    telemetry = InMemoryTelemetry()
    try:
        first = telemetry.handler(tenant_id="tenant-0")
        asyncio.run(_run(first, "run-0"))
        one_tenant = _histogram_sets(telemetry)
        for index in range(1, 300):
            handler = telemetry.handler(tenant_id=f"tenant-{index}")
            asyncio.run(_run(handler, f"run-{index}"))
        assert _histogram_sets(telemetry) == one_tenant
    finally:
        telemetry.shutdown()


def test_on_an_sdk_with_limits_tenant_histograms_carry_the_tenant() -> None:
    if not budget.sdk_bounds_series():
        pytest.skip("this SDK has no cardinality limit: the option is off (the test above)")
    telemetry = InMemoryTelemetry()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            handler = telemetry.handler(tenant_id="acme", tenant_histograms=True)
        asyncio.run(_run(handler, "run-1"))
        assert _tenants_in_histograms(telemetry) == {"acme"}
    finally:
        telemetry.shutdown()
