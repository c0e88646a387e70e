"""``FrameworkConfig``: the knobs of the reference loop, validated when built."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    from symfonic_otel.agent.fabrication import FabricationDetector

__all__ = ["FabricationCheck", "FrameworkConfig"]

FabricationCheck = Literal["off", "observe", "revise", "refuse"]
_MODES = frozenset(get_args(FabricationCheck))


def _require_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"FrameworkConfig.{name} must be an int >= {minimum}, got {value!r}")


@dataclass(frozen=True, slots=True)
class FrameworkConfig:
    """How the loop ends and what it does about empty or unsupported answers.

    Defaults keep the plain ReAct behaviour: no synthesis, no fabrication check, no length
    recovery. A bad value fails here, at construction, not in the middle of a run.
    """

    synthesize_on_empty_final: bool = False
    recursion_limit: int = 25
    loop_detection_threshold: int = 3
    loop_detection_window: int = 10
    fabrication_check: FabricationCheck = "off"
    fabrication_refuse_min_confidence: float = 0.8
    fabrication_detector: FabricationDetector | None = None
    max_length_recoveries: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.synthesize_on_empty_final, bool):
            raise ValueError(
                "FrameworkConfig.synthesize_on_empty_final must be a bool, "
                f"got {self.synthesize_on_empty_final!r}"
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
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, int | float)
            or not math.isfinite(threshold)
            or not 0.0 <= threshold <= 1.0
        ):
            raise ValueError(
                "FrameworkConfig.fabrication_refuse_min_confidence must be a number in [0, 1], "
                f"got {threshold!r}"
            )
        if self.fabrication_detector is not None and not callable(self.fabrication_detector):
            raise ValueError(
                "FrameworkConfig.fabrication_detector must be callable(draft, messages) or None, "
                f"got {self.fabrication_detector!r}"
            )
