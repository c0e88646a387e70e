"""Live: the LlamaIndex and smolagents adapters -> a real Prometheus with the shipped rules.

Three tenants run real agents with scripted models: one on LlamaIndex keeps calling tools until
``max_iterations`` with ``early_stopping_method="generate"`` (the run returns the forced answer
normally), one on smolagents until ``max_steps`` (the same), and one answers on both
frameworks. Prometheus scrapes the ``configure_telemetry`` endpoint and evaluates the shipped
rules (every window and ``for:`` divided by ``FACTOR``): the silent-bail page fires for the two
capped tenants, never for the one that answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tests.support.llama_index_support as llama
import tests.support.smolagents_support as smol
from symfonic_otel import tenant_scope
from symfonic_otel.llama_index import SymfonicLlamaIndex
from symfonic_otel.smolagents import SymfonicSmolagents
from tests.support.live_paging import live_paging

FACTOR = 30  # 1h -> 2 min, 5m -> 10 s, `for: 2m` -> 4 s
PAUSE_S = 0.2  # between rounds
LLAMA_BAILER, SMOL_BAILER, STEADY = "llama-bailer", "smol-bailer", "steady"

pytestmark = pytest.mark.timeout(240)


def _llama(turns: list[str]) -> str:
    result, error = llama.run(llama.agent("function", turns)[0], early_stopping_method="generate")
    assert error is None, error
    return str(result)


def _round(smolagents: SymfonicSmolagents) -> None:
    """One run per tenant (two for the steady one: one per framework)."""
    with tenant_scope(LLAMA_BAILER):
        assert llama.FORCED in _llama(llama.looping())
    with tenant_scope(SMOL_BAILER):
        built, _ = smol.agent("tool_calling", smol.looping(), smolagents.step_callbacks())
        assert smol.run(built, "full_result").state == "max_steps_error"
    with tenant_scope(STEADY):
        assert llama.ANSWER in _llama(llama.answering())
        built, _ = smol.agent("code", smol.answering(), smolagents.step_callbacks())
        assert smol.run(built) == smol.ANSWER


def test_the_page_fires_for_the_capped_tenants_of_llama_index_and_smolagents_only(
    tmp_path: Path,
) -> None:
    with live_paging(tmp_path, FACTOR) as live:
        llama_adapter = SymfonicLlamaIndex(live.handler).instrument()
        smol_adapter = SymfonicSmolagents(live.handler)
        try:
            _, ever = live.watch(lambda: _round(smol_adapter), PAUSE_S, {LLAMA_BAILER, SMOL_BAILER})
        finally:
            llama_adapter.uninstrument()
    assert STEADY not in ever
    assert smol_adapter.open_runs == 0 and llama_adapter.open_runs == 0
