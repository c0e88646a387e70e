"""Claude Agent SDK adapter: ``SymfonicRecorder``, hooks plus a reader of the message stream.

``recorder`` (runs from the message stream, tools from the SDK's hooks -> the core handler),
``read`` (an assistant message's shape and usage, a result's verdict). Needs the
``claude-agent-sdk`` extra; the core package never imports this.
"""

from __future__ import annotations

try:
    import claude_agent_sdk as _claude_agent_sdk  # noqa: F401  (fail here, with the extra's name)
except ImportError as exc:  # pragma: no cover - exercised in an environment without it
    raise ImportError(
        "symfonic_otel.claude_agent_sdk needs the Claude Agent SDK: "
        "pip install -e '.[claude-agent-sdk]' from a checkout of symfonic-otel"
    ) from exc

from symfonic_otel.claude_agent_sdk.recorder import RecordedSession, SymfonicRecorder

__all__ = ["RecordedSession", "SymfonicRecorder"]
