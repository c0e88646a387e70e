"""Per-iteration forced tool choice (seed 001): ``ForcedToolChoiceResolver``.

The loop asks the resolver before every loop model call, on ``run`` and ``stream`` alike, so
forcing and releasing are symmetric: a resolver that forces a tool until its result is in the
history releases on the next iteration by itself. The resolver only narrows the choice to one
tool; it never writes arguments. Whatever goes wrong in it degrades to "no forced choice".
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from langchain_core.runnables import Runnable

from symfonic_otel.logs import FailureLog

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.tools import BaseTool

    from symfonic_otel.agent.calls import RunState

__all__ = ["ForcedToolChoiceResolver", "ToolBinding", "resolve_tool_choice"]

RESOLVER_RAISED: Final = "agent.tool_choice_resolver.raised"
RESOLVER_UNKNOWN_TOOL: Final = "agent.tool_choice_resolver.unknown_tool"
FORCED_BINDING_FAILED: Final = "agent.tool_choice_binding_failed"
_RESOLVE: Final = "ForcedToolChoiceResolver.resolve"


@runtime_checkable
class ForcedToolChoiceResolver(Protocol):
    """Decides, once per loop iteration, which tool the model must call (or none).

    ``state`` describes the run (``run_id``, ``query``, ``iteration_index``: the 0-based loop
    call about to be made, ``streaming``, ``run_start``: where the current run begins in
    ``messages``, ``forced_tool_choice``: what the previous iteration forced). ``messages`` is a
    copy of the conversation so far. Return a tool name of the agent to force it (forwarded as
    ``bind_tools(tools, tool_choice=name)``) or ``None`` to let the model choose.
    """

    async def resolve(self, state: dict[str, Any], messages: list[Any]) -> str | None: ...


async def resolve_tool_choice(
    resolver: ForcedToolChoiceResolver,
    state: dict[str, Any],
    messages: list[Any],
    tool_names: Collection[str],
    failures: FailureLog,
    run_id: str,
) -> str | None:
    """The resolver's answer if it names one of ``tool_names``, else ``None``.

    A raising resolver, or one that names no tool of the agent, is reported to ``failures``
    (logged on its first occurrence) with the exception's type and place and the run id only:
    its message and the returned value may quote the conversation, so neither is logged.
    """
    try:
        resolve: Callable[..., Any] = resolver.resolve
        name = await resolve(state, messages)
    except Exception as exc:
        failures.report(RESOLVER_RAISED, exc, where=_RESOLVE, run_id=run_id)
        return None
    if name is None:
        return None
    if not isinstance(name, str) or name not in tool_names:
        returned_type = type(name).__qualname__
        failures.report(
            RESOLVER_UNKNOWN_TOOL, where=_RESOLVE, returned_type=returned_type, run_id=run_id
        )
        return None
    return name


class ToolBinding:
    """The runnable for each loop call: the model with the tools bound, one forced if asked.

    Forced bindings are built once per tool name and reused. A model whose ``bind_tools``
    cannot force a choice degrades to the unforced binding (reported once).
    """

    def __init__(
        self,
        model: BaseChatModel,
        tools: Sequence[BaseTool],
        resolver: ForcedToolChoiceResolver | None,
        failures: FailureLog,
    ) -> None:
        self._model = model
        self._tools = list(tools)
        self._names = frozenset(item.name for item in tools)
        self._resolver = resolver
        self._failures = failures
        self.default: Runnable[Any, Any] = model.bind_tools(self._tools) if tools else model
        self._forced: dict[str, Runnable[Any, Any]] = {}

    async def for_iteration(self, run: RunState) -> tuple[Runnable[Any, Any], str | None]:
        """Ask the resolver (if any) and return the runnable and the forced tool name."""
        resolver = self._resolver
        if resolver is None or not self._tools:
            return self.default, None
        state: dict[str, Any] = {
            "run_id": run.run_id,
            "query": run.query,
            "iteration_index": run.loop_calls,
            "streaming": run.streaming,
            "run_start": run.run_start(),
            "forced_tool_choice": run.forced_tool_choice,
        }
        name = await resolve_tool_choice(
            resolver, state, list(run.messages), self._names, self._failures, run.run_id
        )
        run.forced_tool_choice = name
        if name is None:
            return self.default, None
        bound = self._forced.get(name)
        if bound is None:
            try:
                bound = self._model.bind_tools(self._tools, tool_choice=name)
            except Exception as exc:
                where = "bind_tools(tool_choice=...)"
                self._failures.report(FORCED_BINDING_FAILED, exc, where=where, run_id=run.run_id)
                run.forced_tool_choice = None
                return self.default, None
            self._forced[name] = bound
        return bound, name
