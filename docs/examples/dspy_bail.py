"""A DSPy ReAct agent that calls tools until ``max_iters``: what the callback records.

DSPy's ``DummyLM`` stands in for a real model (no network); in-memory telemetry shows the
result. DSPy raises nothing at the cap: its ``extract`` step writes an answer anyway, the
forced answer this page calls a synthesis fallback.
"""

import dspy
from dspy.utils.dummies import DummyLM

from symfonic_otel import tenant_scope
from symfonic_otel.dspy import SymfonicCallback
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def lookup(q: str) -> str:
    """Look something up."""
    return "nothing found"


step = {"next_thought": "look", "next_tool_name": "lookup", "next_tool_args": {"q": "x"}}
forced = {"reasoning": "the lookups found nothing", "answer": "I could not find out."}
telemetry = InMemoryTelemetry()
agent = dspy.ReAct("question -> answer", tools=[lookup], max_iters=3)
agent.set_lm(DummyLM([step, step, step, forced]))

callback = SymfonicCallback(handler=telemetry.handler())
with dspy.context(callbacks=[callback]), tenant_scope("acme"):
    prediction = agent(question="What is the weather?")
print("answer from DSPy:", prediction.answer)  # answer from DSPy: I could not find out.

bails = telemetry.value("symfonic.react.silent_bails", {"tenant.id": "acme"})
recovered = {"symfonic.synthesis.recovered": True}
fallbacks = telemetry.value("symfonic.react.synthesis_fallbacks", recovered)
run = telemetry.span("invoke_agent ReAct").attributes or {}
print("silent bails:", int(bails))  # silent bails: 1
print("recovered fallbacks:", int(fallbacks))  # recovered fallbacks: 1
print("stop reason:", run["symfonic.run.stop_reason"])  # stop reason: recursion_limit
