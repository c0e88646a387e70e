"""A LangChain agent whose step budget runs out is counted as a silent bail.

The scripted model stands in for one that keeps calling tools. ``create_agent`` with
``ModelCallLimitMiddleware(run_limit=3)`` lets the model answer three times; before the fourth
call the middleware ends the run with a message of its own, and the graph ends normally. The run
is recorded as a silent bail with stop reason ``recursion_limit`` and an empty answer.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry


@tool
def order_status(order_id: str) -> str:
    """Look up an order."""
    return "in transit"


def lookup(i: int) -> AIMessage:
    call = {"name": "order_status", "args": {"order_id": "A1"}, "id": f"call-{i}"}
    return AIMessage("", tool_calls=[call])


def main() -> dict[str, Any]:
    telemetry = InMemoryTelemetry()  # in-memory providers; use configure_telemetry() in production
    handler = LangChainCallbackHandler(handler=telemetry.handler())
    model = ScriptedChatModel([lookup(i) for i in range(10)])  # never answers
    budget = ModelCallLimitMiddleware(run_limit=3)  # exit_behavior="end", the default
    agent = create_agent(model, [order_status], middleware=[budget])
    agent.invoke(
        {"messages": [("user", "Where is order A1?")]},
        config={"callbacks": [handler], "metadata": {"tenant_id": "acme"}},
    )
    run = dict(telemetry.span(semconv.agent_span_name("symfonic")).attributes or {})
    bails = telemetry.value(semconv.SILENT_BAILS.name, {semconv.TENANT_ID: "acme"})
    telemetry.shutdown()
    return {
        "outcome": run[semconv.RUN_OUTCOME],  # "completed": the graph ended normally
        "stop_reason": run[semconv.RUN_STOP_REASON],  # "recursion_limit"
        "empty": run[semconv.RESPONSE_EMPTY],  # True: the user got no answer
        "silent_bails": bails,  # 1.0
    }


if __name__ == "__main__":
    print(main())
