"""smolagents agents over a scripted model (a ``Model`` subclass), run through each entry point.

The script's ``"tool"`` turns call ``add`` (a tool call for a ``ToolCallingAgent``, a code
block for a ``CodeAgent``), ``"broken"`` calls ``lookup``, a tool that raises, ``"raise"``
fails the call, any other string is the final answer (``final_answer``). Once the script is
spent, the model answers the forced final-answer call with ``FORCED`` (or fails, or answers
blank, as the test asks). Every reply reports its token usage, as smolagents' models do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from smolagents import CodeAgent, Model, ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import TokenUsage

ANSWER = "1 + 2 is 3."
FORCED = "I ran out of steps; the sum so far is 3."
BUDGET = 3  # max_steps
KINDS = ("tool_calling", "code")
MODES = ("run", "stream", "full_result")


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first integer.
        b: The second integer.
    """
    return a + b


@tool
def lookup(key: str) -> str:
    """Look a key up (it always fails, as a tool that raises).

    Args:
        key: The key.
    """
    raise KeyError(key)


class ScriptedModel(Model):
    """Plays ``turns``, then answers the forced final-answer call with ``forced``."""

    def __init__(self, turns: Sequence[str], *, code: bool, forced: str | None = FORCED) -> None:
        super().__init__(model_id="scripted-1")
        self.turns = list(turns)
        self.code = code
        self.forced = forced
        self.calls = 0

    def generate(self, messages: Any, stop_sequences: Any = None, **kwargs: Any) -> ChatMessage:
        index, self.calls = self.calls, self.calls + 1
        usage = TokenUsage(input_tokens=100, output_tokens=10)
        if index >= len(self.turns):  # the forced final-answer call (no tools offered)
            if self.forced is None:
                raise RuntimeError("provider down")
            return ChatMessage(MessageRole.ASSISTANT, self.forced, token_usage=usage)
        turn = self.turns[index]
        if turn == "raise":
            raise RuntimeError("provider down")
        if self.code:
            code = {"tool": "result = add(a=1, b=2)", "broken": "result = lookup(key='k')"}.get(
                turn, f"final_answer({turn!r})"
            )
            content = f"Thought: go.\n<code>\n{code}\n</code>"
            return ChatMessage(MessageRole.ASSISTANT, content, token_usage=usage)
        name, arguments = {
            "tool": ("add", {"a": 1, "b": 2}),
            "broken": ("lookup", {"key": "k"}),
        }.get(turn, ("final_answer", {"answer": turn}))
        call = ChatMessageToolCall(
            ChatMessageToolCallFunction(arguments, name), f"c{index}", "function"
        )
        return ChatMessage(MessageRole.ASSISTANT, "", tool_calls=[call], token_usage=usage)


def looping() -> list[str]:
    return ["tool"] * BUDGET


def answering(tool_turns: int = 1) -> list[str]:
    return ["tool"] * tool_turns + [ANSWER]


def agent(
    kind: str, turns: Sequence[str], callbacks: Any, **model: Any
) -> tuple[Any, ScriptedModel]:
    scripted = ScriptedModel(turns, code=kind == "code", **model)
    cls = CodeAgent if kind == "code" else ToolCallingAgent
    built = cls(
        tools=[add, lookup],
        model=scripted,
        name="helper",
        description="Adds.",
        max_steps=BUDGET,
        step_callbacks=callbacks,
        verbosity_level=-1,
    )
    return built, scripted


def run(built: Any, mode: str = "run") -> Any:
    """One run to the end; the final answer (the ``RunResult`` in ``full_result`` mode)."""
    task = "Add 1 and 2"
    if mode == "stream":
        items = list(built.run(task, stream=True))
        assert items, "the stream yielded nothing"
        return items[-1].output
    if mode == "full_result":
        return built.run(task, return_full_result=True)
    return built.run(task)
