"""Step caps: a run a framework ended because its step budget ran out, told by structure.

Frameworks that enforce a budget themselves often end the run *normally*, on an AI message of
their own making, so the run looks answered unless the adapter sees how that message came to be:

* LangGraph's prebuilt ``create_react_agent`` (its ``remaining_steps`` guard) replaces the
  model's tool-calling output with a text message under the *same message id*, and the graph
  ends. Seen here as: the run's final AI message has the id of the model's last output, which
  asked for tools, but carries no tool calls itself.
* LangChain's ``create_agent`` call-limit middlewares (``ModelCallLimitMiddleware``,
  ``ToolCallLimitMiddleware`` with exit behaviour "end") return ``jump_to="end"`` from a hook
  node together with the closing AI message they wrote. Seen here as: a node inside the run
  ended with ``jump_to == "end"`` and an AI message without tool calls, and that message is the
  run's final one.

A graph that runs a capped agent as a sub-graph and ends on the budget message it relays is
capped too (the sub-agent's run passes the message id up), as a parent run that relays a
sub-agent's blank answer is a bail too.

Never by the message text: it changes between releases and languages. Budgets that raise
(``GraphRecursionError``, the middlewares' "error" behaviour) are classified by type in
``errors``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from symfonic_otel.langchain.messages import AIShape, ai_message, message_list

__all__ = ["UNKNOWN_ID", "capped", "closing_message"]

# ``closing_message`` of a hook's closing message that has no id: any final AI message without
# tool calls matches it (nothing writes messages after a jump to the end).
UNKNOWN_ID: Final = ""
_JUMP_KEY: Final = "jump_to"
_JUMP_END: Final = "end"


def closing_message(outputs: object) -> str | None:
    """The id of the AI message a ``create_agent`` hook closed the run with when it jumped to
    the end (``UNKNOWN_ID`` when it has none); None for any other node output."""
    if not isinstance(outputs, Mapping) or outputs.get(_JUMP_KEY) != _JUMP_END:
        return None
    messages = message_list(outputs)
    if not messages:
        return None
    found = ai_message(messages[-1])
    if found is None or found[0].tool_call_count:
        return None
    return found[0].message_id or UNKNOWN_ID


def capped(model_output: AIShape | None, closing: str | None, final: AIShape | None) -> bool:
    """Whether a run that ended normally on ``final`` was ended by a step cap.

    ``model_output``: the shape of the model's last output in the run; ``closing``: the id of a
    budget message written inside the run (``closing_message`` of a node's output, or a capped
    sub-agent's final message; None: neither).
    """
    if final is None or final.tool_call_count:
        return False
    if closing is not None and closing in (UNKNOWN_ID, final.message_id):
        return True
    return (
        model_output is not None
        and model_output.tool_call_count > 0
        and model_output.message_id is not None
        and model_output.message_id == final.message_id
    )
