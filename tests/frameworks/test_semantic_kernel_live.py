"""Live: the Semantic Kernel adapter -> a real Prometheus with the shipped rules -> the page.

One tenant's prompt keeps calling functions until ``maximum_auto_invoke_attempts``; Semantic
Kernel's forced final request answers and it returns normally. Its neighbour answers within the
attempts. Prometheus scrapes the ``configure_telemetry`` endpoint and evaluates the shipped rules
(windows and ``for:`` divided by ``FACTOR``): the silent-bail page fires for the capped tenant,
never for its neighbour. Runs in the ``semantic-kernel`` environment (``.ci/framework-envs``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("semantic_kernel", reason="needs the semantic-kernel extra")

from symfonic_otel import OTelCallbackHandler, tenant_scope
from symfonic_otel.semantic_kernel import SymfonicFilters
from tests.support.live_paging import BAILER, STEADY, assert_pages_the_bailer_only
from tests.support.semantic_kernel_support import arguments, chat, kernel

pytestmark = pytest.mark.timeout(240)


def _round(handler: OTelCallbackHandler) -> Callable[[], None]:
    filters = SymfonicFilters(handler=handler)
    capped = filters.register(kernel(chat()))
    steady = filters.register(kernel(chat(tool_turns=1)))
    capped_fn = capped.add_function(plugin_name="agent", function_name="helper", prompt="q")
    steady_fn = steady.add_function(plugin_name="agent", function_name="helper", prompt="q")

    def round_() -> None:
        with tenant_scope(BAILER):
            forced = asyncio.run(capped.invoke(capped_fn, arguments(attempts=2)))
            assert str(forced) == "Probably sunny."  # returned normally, past the cap
        with tenant_scope(STEADY):
            assert str(asyncio.run(steady.invoke(steady_fn, arguments()))) == "It is sunny."

    return round_


def test_the_page_fires_for_the_capped_tenant_only(tmp_path: Path) -> None:
    assert_pages_the_bailer_only(tmp_path, _round)
