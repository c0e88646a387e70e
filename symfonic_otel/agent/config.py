"""``FrameworkConfig``: the knobs of the reference loop, validated when built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from symfonic_otel.read.sanitise import is_real

if TYPE_CHECKING:
    from symfonic_otel.agent.fabrication import FabricationDetector

__all__ = ["FabricationCheck", "FrameworkConfig", "TextWithToolCalls"]

FabricationCheck = Literal["off", "observe", "revise", "refuse"]
TextWithToolCalls = Literal["auto", "always", "never"]
_MODES = frozenset(get_args(FabricationCheck))
_TEXT_WITH_TOOL_CALLS = frozenset(get_args(TextWithToolCalls))


def _require_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"FrameworkConfig.{name} must be an int >= {minimum}, got {value!r}")


@dataclass(frozen=True, slots=True)
class FrameworkConfig:
    """How the loop ends and what it does about empty or unsupported answers.

    Defaults keep the plain ReAct behaviour: no synthesis, no fabrication check, no length
    recovery, no stop-reason notes (``final_response`` is the model's text). A bad value fails
    here, at construction, not in the middle of a run.

    ``max_length_recoveries`` caps *consecutive* continuations of an answer cut at the output
    limit. ``finish_on_text_with_tool_calls``: whether a turn with text, tool calls and a
    turn-complete stop value ends the run with that text (``auto``: only for providers
    documented to answer that way, qwen / DashScope; ``always``; ``never``: run the tools).
    ``stop_reason_notes`` appends a short marker to ``final_response`` and to the history when
    the run did not end on a clean ``end_turn`` (cut at the output limit, refused, call cap...).
    """

    synthesize_on_empty_final: bool = False
    recursion_limit: int = 25
    loop_detection_threshold: int = 3
    loop_detection_window: int = 10
    fabrication_check: FabricationCheck = "off"
    fabrication_refuse_min_confidence: float = 0.8
    fabrication_detector: FabricationDetector | None = None
    max_length_recoveries: int = 0
    finish_on_text_with_tool_calls: TextWithToolCalls = "auto"
    stop_reason_notes: bool = False

    def __post_init__(self) -> None:
        for flag in ("synthesize_on_empty_final", "stop_reason_notes"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(
                    f"FrameworkConfig.{flag} must be a bool, got {getattr(self, flag)!r}"
                )
        if self.finish_on_text_with_tool_calls not in _TEXT_WITH_TOOL_CALLS:
            raise ValueError(
                "FrameworkConfig.finish_on_text_with_tool_calls must be one of "
                f"{sorted(_TEXT_WITH_TOOL_CALLS)}, got {self.finish_on_text_with_tool_calls!r}"
            )
        _require_int("recursion_limit", self.recursion_limit, 1)
        _require_int("loop_detection_threshold", self.loop_detection_threshold, 2)
        _require_int("loop_detection_window", self.loop_detection_window, 1)
        _require_int("max_length_recoveries", self.max_length_recoveries, 0)
        if self.fabrication_check not in _MODES:
            raise ValueError(
                "FrameworkConfig.fabrication_check must be one of "
                f"{sorted(_MODES)}, got {self.fabrication_check!r}"
            )
        threshold = self.fabrication_refuse_min_confidence
        if not is_real(threshold) or not 0.0 <= threshold <= 1.0:
            raise ValueError(
                "FrameworkConfig.fabrication_refuse_min_confidence must be a number in [0, 1], "
                f"got {threshold!r}"
            )
        if self.fabrication_detector is not None and not callable(self.fabrication_detector):
            raise ValueError(
                "FrameworkConfig.fabrication_detector must be callable(draft, messages) or None, "
                f"got {self.fabrication_detector!r}"
            )
