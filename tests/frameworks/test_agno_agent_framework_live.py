"""Live: the Agno and Microsoft Agent Framework adapters -> a real Prometheus with the shipped
rules -> the page.

For each framework one tenant's agent goes past its framework's cap (Agno's soft
``tool_call_limit``; the Agent Framework's ``max_iterations`` and its forced final answer), its
neighbour answers. Prometheus scrapes the ``configure_telemetry`` endpoint and evaluates the
shipped rules (windows and ``for:`` divided by ``FACTOR``): the silent-bail page fires for the
capped tenant, never for its neighbour.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.live_paging import BAILER, STEADY, assert_pages_the_bailer_only

pytest.importorskip("agno", reason="needs the agno extra")
pytest.importorskip("agent_framework", reason="needs the agent-framework extra")

from symfonic_otel import OTelCallbackHandler, tenant_scope
from symfonic_otel.agent_framework import SymfonicAgentFramework
from symfonic_otel.agno import SymfonicAgno
from tests.support import agent_framework_support as maf
from tests.support import agno_support as ag

pytestmark = pytest.mark.timeout(240)


def _agno_round(handler: OTelCallbackHandler) -> Callable[[], None]:
    adapter = SymfonicAgno(handler=handler)
    capped = ag.agent(adapter, ag.ScriptedModel(tool_turns=3), tool_call_limit=2)
    steady = ag.agent(adapter, ag.ScriptedModel(tool_turns=1), tool_call_limit=2)

    def round_() -> None:
        with tenant_scope(BAILER):
            assert capped.run(ag.QUESTION).content == "It is sunny."  # Agno raised nothing
        with tenant_scope(STEADY):
            assert steady.run(ag.QUESTION).content == "It is sunny."

    return round_


def _agent_framework_round(handler: OTelCallbackHandler) -> Callable[[], None]:
    adapter = SymfonicAgentFramework(handler=handler)
    capped = maf.agent(adapter, maf.capped_client(2))
    steady = maf.agent(adapter, maf.capped_client(5, tool_turns=1))

    def round_() -> None:
        with tenant_scope(BAILER):
            assert asyncio.run(capped.run(maf.QUESTION)).text == "Probably sunny."
        with tenant_scope(STEADY):
            assert asyncio.run(steady.run(maf.QUESTION)).text == "It is sunny."

    return round_


ROUNDS = {"agno": _agno_round, "agent-framework": _agent_framework_round}


@pytest.mark.parametrize("framework", sorted(ROUNDS))
def test_the_page_fires_for_the_capped_tenant_only(tmp_path: Path, framework: str) -> None:
    assert_pages_the_bailer_only(tmp_path, ROUNDS[framework])
