"""Claude Agent SDK adapter: ``SymfonicRecorder``, hooks plus a reader of the message stream.

``recorder`` (runs from the message stream, tools from the SDK's hooks -> the core handler),
``read`` (an assistant message's shape and usage, a result's verdict). Needs the
``claude-agent-sdk`` extra; the core package never imports this.
"""

from __future__ import annotations

from symfonic_otel.invocation.extras import require

require(
    "claude_agent_sdk",
    __name__,
    "the Claude Agent SDK",
    "pip install -e '.[claude-agent-sdk]' from a checkout of symfonic-otel",
)

from symfonic_otel.claude_agent_sdk.recorder import RecordedSession, SymfonicRecorder  # noqa: E402

__all__ = ["RecordedSession", "SymfonicRecorder"]
