"""The duck-typed Symfonic handler protocol: an async ``on_*`` method for every event.

Symfonic awaits ``on_<event>`` on each object in an agent's ``callbacks`` list that has one.
Each method here only calls its synchronous twin (``agent_start`` for ``on_agent_start``...),
which is guarded: none of them raises into the agent or awaits anything.
"""

from __future__ import annotations

from typing import Any


class SymfonicProtocol:
    """Mixin: the async entry points, delegating to the sync twins of the subclass."""

    __slots__ = ()

    def agent_start(self, event: Any) -> None: ...
    def agent_end(self, event: Any) -> None: ...
    def llm_start(self, event: Any) -> None: ...
    def llm_pre_call(self, event: Any) -> None: ...
    def llm_end(self, event: Any) -> None: ...
    def react_loop_end(self, event: Any) -> None: ...
    def fabrication_detected(self, event: Any) -> None: ...
    def text_delta(self, event: Any) -> None: ...
    def tool_call_start(self, event: Any) -> None: ...
    def tool_result(self, event: Any) -> None: ...
    def node_start(self, event: Any) -> None: ...
    def node_end(self, event: Any) -> None: ...
    def node_error(self, event: Any) -> None: ...
    def interrupt(self, event: Any) -> None: ...
    def ask_user_question(self, event: Any) -> None: ...

    async def on_agent_start(self, event: Any) -> None:
        self.agent_start(event)

    async def on_agent_end(self, event: Any) -> None:
        self.agent_end(event)

    async def on_llm_start(self, event: Any) -> None:
        self.llm_start(event)

    async def on_llm_pre_call(self, event: Any) -> None:
        self.llm_pre_call(event)

    async def on_llm_end(self, event: Any) -> None:
        self.llm_end(event)

    async def on_react_loop_end(self, event: Any) -> None:
        self.react_loop_end(event)

    async def on_fabrication_detected(self, event: Any) -> None:
        self.fabrication_detected(event)

    async def on_text_delta(self, event: Any) -> None:
        self.text_delta(event)

    async def on_tool_call_start(self, event: Any) -> None:
        self.tool_call_start(event)

    async def on_tool_result(self, event: Any) -> None:
        self.tool_result(event)

    async def on_node_start(self, event: Any) -> None:
        self.node_start(event)

    async def on_node_end(self, event: Any) -> None:
        self.node_end(event)

    async def on_node_error(self, event: Any) -> None:
        self.node_error(event)

    async def on_interrupt(self, event: Any) -> None:
        self.interrupt(event)

    async def on_ask_user_question(self, event: Any) -> None:
        self.ask_user_question(event)
