"""A raising model or tool through LangChain's ``create_agent`` and LangGraph's prebuilt agent.

The caller gets the very exception the model or tool raised (LangGraph's default tool error
handling passes any error but a bad tool call on), and the run is ``error`` with its class name:
never a silent bail.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from symfonic_otel import LangChainCallbackHandler, tenant_scope
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import AGENT_SPAN, add, call, react_agent, tool_turn
from tests.support.raising_support import assert_error_run


class ModelDown(Exception):
    """A provider failure LangChain does not know of."""


def _build(builder: str, turns: list[Any], tools: list[Any]) -> Any:
    if builder == "create_react_agent":
        return react_agent(ScriptedChatModel(turns), tools)
    from langchain.agents import create_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_agent(ScriptedChatModel(turns), tools)


@pytest.mark.parametrize("builder", ["create_agent", "create_react_agent"])
@pytest.mark.parametrize("raising", ["model", "tool"])
def test_a_raising_model_or_tool_reaches_the_caller_as_itself_and_the_run_is_error(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler, builder: str, raising: str
) -> None:
    down = ModelDown("provider down") if raising == "model" else LookupError("backend down")

    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        raise down

    if raising == "model":
        agent = _build(builder, [tool_turn(), down], [add])
    else:
        agent = _build(builder, [AIMessage("", tool_calls=[call("lookup", {"q": "w"})])], [lookup])
    with tenant_scope("acme"), pytest.raises(type(down)) as raised:
        agent.invoke({"messages": [("user", "q")]}, config={"callbacks": [lc]})
    assert raised.value is down
    assert_error_run(telemetry, "acme", down, span=AGENT_SPAN)
