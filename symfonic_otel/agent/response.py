"""``AgentResponse``: what one run of the loop produced and why it ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from symfonic_otel.agent.fabrication import FabricationFinding
    from symfonic_otel.agent.termination import RouteReason
    from symfonic_otel.events import TerminationReason

__all__ = ["AgentResponse"]


@dataclass(frozen=True, slots=True)
class AgentResponse:
    """The result of a run.

    ``final_response`` is always a string (``""`` when empty). ``stop_reason`` is the normalised
    stop reason of the loop's last model turn; ``termination_reason`` is set only on a silent
    bail (and kept when synthesis then recovers). ``salvaged``: the text came from a turn that
    also requested tools. ``synthesized``: the text came from the recovery completion.
    ``iterations`` counts the loop's model calls. ``messages`` is the loop's conversation, every
    model message exactly as returned, always a valid history to send back, whose last AI
    message is what the user was shown (a synthesized answer, a revision or the refuse envelope
    is appended as one, and so is the stop note). ``ended_by`` says which rule finished the
    loop; ``fabrication_findings`` what the fabrication check found. ``run_stop_reason`` is the
    run's exit as telemetry reports it (``stop_reason``, or ``loop_detected`` /
    ``recursion_limit`` when the loop cut the run); ``stop_note`` the marker appended to
    ``final_response`` with ``FrameworkConfig(stop_reason_notes=True)``, else ``None``.
    """

    final_response: str
    stop_reason: str
    termination_reason: TerminationReason | None
    salvaged: bool
    synthesized: bool
    iterations: int
    messages: list[BaseMessage]
    run_id: str
    ended_by: RouteReason = "no_tool_calls"
    fabrication_findings: tuple[FabricationFinding, ...] = field(default=())
    run_stop_reason: str = "end_turn"
    stop_note: str | None = None
