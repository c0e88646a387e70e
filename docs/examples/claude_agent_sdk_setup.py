"""Record every Claude Agent SDK run read through one recorder: its hooks, and the stream."""

from claude_agent_sdk import ClaudeAgentOptions

from symfonic_otel import configure_telemetry
from symfonic_otel.claude_agent_sdk import SymfonicRecorder

configure_telemetry()  # OTLP to OTEL_EXPORTER_OTLP_ENDPOINT, as every OTel SDK setup
recorder = SymfonicRecorder()
session = recorder.session(ClaudeAgentOptions(max_turns=8), name="support")
# async for message in recorder.query(prompt="...", options=ClaudeAgentOptions(max_turns=8)): ...
# or: ClaudeSDKClient(session.options); async for m in session.record(client.receive_response())
