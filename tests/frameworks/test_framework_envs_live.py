"""Live: a framework adapter of its own environment -> a real Prometheus with the shipped rules.

Run in each environment that ``.ci/framework-envs`` builds (Google ADK, Strands, Haystack, DSPy):
one tenant's agent keeps calling tools until the framework's step cap (``max_llm_calls``;
``limits``; ``max_agent_steps``; ``max_iters``, then DSPy's forced answer), its neighbour
answers. Prometheus scrapes the ``configure_telemetry`` endpoint and evaluates the shipped rules
(windows and ``for:`` divided by ``FACTOR``): the silent-bail page fires for the capped tenant,
never for its neighbour. Skipped where none of the frameworks is installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable
from pathlib import Path

import pytest

from symfonic_otel import OTelCallbackHandler, tenant_scope
from tests.support.live_paging import BAILER, STEADY, assert_pages_the_bailer_only


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # its parent package is missing
        return False


FRAMEWORKS = [
    name
    for name, module in (
        ("google-adk", "google.adk"),
        ("strands", "strands"),
        ("haystack", "haystack"),
        ("dspy", "dspy"),
    )
    if _installed(module)
]
if not FRAMEWORKS:
    pytest.skip(
        "needs google-adk, strands, haystack or dspy (.ci/framework-envs)", allow_module_level=True
    )


pytestmark = pytest.mark.timeout(240)


def _adk_round(handler: OTelCallbackHandler) -> Callable[[], None]:
    from google.adk.agents.invocation_context import LlmCallsLimitExceededError
    from google.adk.agents.run_config import RunConfig
    from test_google_adk import ScriptedLlm, _runner, run_async

    from symfonic_otel.google_adk import SymfonicPlugin

    plugin = SymfonicPlugin(handler=handler)
    capped = _runner(None, ScriptedLlm(), plugin=plugin)  # type: ignore[arg-type]
    steady = _runner(None, ScriptedLlm(tool_turns=1), plugin=plugin)  # type: ignore[arg-type]

    def round_() -> None:
        with tenant_scope(BAILER), pytest.raises(LlmCallsLimitExceededError):
            asyncio.run(run_async(capped, RunConfig(max_llm_calls=2)))
        with tenant_scope(STEADY):
            assert asyncio.run(run_async(steady, RunConfig(max_llm_calls=5)))

    return round_


def _strands_round(handler: OTelCallbackHandler) -> Callable[[], None]:
    from test_strands import ScriptedModel, _agent

    from symfonic_otel.strands import SymfonicHooks

    hooks = SymfonicHooks(handler=handler)

    def round_() -> None:
        with tenant_scope(BAILER):
            capped = _agent(None, ScriptedModel(), hooks=hooks)  # type: ignore[arg-type]
            assert capped("q", limits={"turns": 2}).stop_reason == "limit_turns"
        with tenant_scope(STEADY):
            steady = _agent(None, ScriptedModel(tool_turns=1), hooks=hooks)  # type: ignore[arg-type]
            assert steady("q", limits={"turns": 5}).stop_reason == "end_turn"

    return round_


def _haystack_round(handler: OTelCallbackHandler) -> Callable[[], None]:
    from test_haystack_adapter import QUESTION, Script, _agent

    from symfonic_otel.haystack import SymfonicTracer

    tracer = SymfonicTracer(handler=handler)

    def round_() -> None:
        tracer.install()
        try:
            with tenant_scope(BAILER):
                capped = _agent(Script(), max_agent_steps=2).run(QUESTION)
                assert capped["exit_reason"] == "max_agent_steps"
            with tenant_scope(STEADY):
                steady = _agent(Script(tool_turns=1), max_agent_steps=5).run(QUESTION)
                assert steady["exit_reason"] == "text"
        finally:
            tracer.uninstall()

    return round_


def _dspy_round(handler: OTelCallbackHandler) -> Callable[[], None]:
    import dspy
    from test_dspy_adapter import _react, capped, healthy

    from symfonic_otel.dspy import SymfonicCallback

    callback = SymfonicCallback(handler=handler)

    def round_() -> None:
        with dspy.context(callbacks=[callback]):
            with tenant_scope(BAILER):  # a forced answer: a bail, whatever it wrote
                assert _react(capped(2), max_iters=2)(question="q").answer
            with tenant_scope(STEADY):
                assert _react(healthy(1), max_iters=5)(question="q").answer

    return round_


ROUNDS = {
    "google-adk": _adk_round,
    "strands": _strands_round,
    "haystack": _haystack_round,
    "dspy": _dspy_round,
}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_page_fires_for_the_capped_tenant_only(tmp_path: Path, framework: str) -> None:
    assert_pages_the_bailer_only(tmp_path, ROUNDS[framework])
