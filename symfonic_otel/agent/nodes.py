"""Graph-node events of the loop: ``NodeStartEvent``, then ``NodeEndEvent`` or ``NodeErrorEvent``.

The loop's nodes are its model calls, named by call site (``react``, ``react_synthesize_fallback``,
``fabrication_revise``), and its tool rounds (``tools``): one NodeStart per node that
``AgentEnd.node_count`` counts. A node interrupted by cancellation ends with a NodeError too
(``error_type`` ``CancelledError``), so every start is closed.
"""

from __future__ import annotations

import time

from symfonic_otel.agent.dispatch import CallbackDispatcher
from symfonic_otel.events import NodeEndEvent, NodeErrorEvent, NodeStartEvent

__all__ = ["end_node", "fail_node", "start_node"]


async def start_node(dispatch: CallbackDispatcher, run_id: str, node: str) -> float:
    """Emit the node's start; returns its start time for ``end_node``."""
    await dispatch.send("on_node_start", lambda: NodeStartEvent(node_name=node, run_id=run_id))
    return time.perf_counter()


async def end_node(dispatch: CallbackDispatcher, run_id: str, node: str, started: float) -> None:
    await dispatch.send(
        "on_node_end",
        lambda: NodeEndEvent(
            node_name=node,
            run_id=run_id,
            duration_ms=(time.perf_counter() - started) * 1000.0,
        ),
    )


async def fail_node(
    dispatch: CallbackDispatcher, run_id: str, node: str, exc: BaseException
) -> None:
    await dispatch.send(
        "on_node_error",
        lambda: NodeErrorEvent(
            node_name=node, run_id=run_id, error=str(exc), error_type=type(exc).__name__
        ),
    )
