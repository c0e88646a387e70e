"""A LangGraph prebuilt agent whose step budget runs out is counted as a silent bail.

The scripted model stands in for one that keeps calling tools. At ``recursion_limit=10`` the
agent's ``remaining_steps`` guard replaces the model's fifth tool call with a text message and
the graph ends normally; the run is recorded as a silent bail with stop reason
``recursion_limit`` and an empty answer.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

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
    agent = create_react_agent(model, [order_status])
    agent.invoke(
        {"messages": [("user", "Where is order A1?")]},
        config={
            "callbacks": [handler],
            "recursion_limit": 10,
            "metadata": {"tenant_id": "acme"},
        },
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
