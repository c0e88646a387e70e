"""A CrewAI agent that calls tools until ``max_iter``: what the listener records.

A scripted ``BaseLLM`` stands in for a real model (no network); in-memory telemetry shows the
result. At ``max_iter`` CrewAI asks the model once more for its best final answer and returns
it normally: a silent bail, and a synthesis fallback that recovered text.
"""

from typing import Any

from crewai import Agent, Crew, Task
from crewai.events import crewai_event_bus
from crewai.events.types.llm_events import LLMCallType
from crewai.llms.base_llm import BaseLLM, llm_call_context
from crewai.tools import tool

from symfonic_otel.crewai import SymfonicListener
from symfonic_otel.testing.telemetry import InMemoryTelemetry


class ThreeLookupsThenAGuess(BaseLLM):
    calls: int = 0

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        with llm_call_context():
            self._emit_call_started_event(messages=messages)
            self.calls += 1
            if self.calls <= 3:
                text = f'Action: lookup\nAction Input: {{"q": "try {self.calls}"}}'
            else:  # the call CrewAI makes after max_iter
                text = "Final Answer: Probably sunny."
            self._emit_call_completed_event(
                response=text, call_type=LLMCallType.LLM_CALL, messages=messages
            )
        return text


@tool("lookup")
def lookup(q: str) -> str:
    """Look something up."""
    return "nothing found"


telemetry = InMemoryTelemetry()
listener = SymfonicListener(handler=telemetry.handler())
agent = Agent(
    role="helper",
    goal="Answer questions",
    backstory="A helper.",
    llm=ThreeLookupsThenAGuess(model="scripted"),
    tools=[lookup],
    max_iter=3,
)
task = Task(description="What is the weather?", expected_output="An answer.", agent=agent)
crew = Crew(agents=[agent], tasks=[task])

output = crew.kickoff(inputs={"tenant_id": "acme"})
crewai_event_bus.flush()
print("answer:", output.raw)  # answer: Probably sunny.

bails = telemetry.value("symfonic.react.silent_bails", {"tenant.id": "acme"})
fallbacks = telemetry.value(
    "symfonic.react.synthesis_fallbacks", {"symfonic.synthesis.recovered": True}
)
run = telemetry.span("invoke_agent helper").attributes or {}
print("silent bails:", int(bails))  # silent bails: 1
print("recovered synthesis fallbacks:", int(fallbacks))  # recovered synthesis fallbacks: 1
print("stop reason:", run["symfonic.run.stop_reason"])  # stop reason: recursion_limit
listener.close()
