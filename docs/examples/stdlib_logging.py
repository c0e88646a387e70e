import logging

from langchain_core.messages import AIMessage

from symfonic_otel.agent import ReactAgent
from symfonic_otel.testing import ScriptedChatModel

logging.basicConfig(level=logging.INFO)  # the package logs nothing until you configure logging

# An empty completion (no text, no tool calls): a silent bail, logged at INFO.
agent = ReactAgent(ScriptedChatModel([AIMessage(content="")]), [])
response = agent.run_sync("Is sku-42 in stock?")
print(repr(response.final_response), response.termination_reason)  # '' no_content_no_tool_calls
# stderr: INFO:symfonic_otel.agent:react: empty final_response on terminator iteration_index=0
#   content_type=str has_tool_calls=False tool_call_count=0
#   termination_reason=no_content_no_tool_calls run_id=…                      (one line)
