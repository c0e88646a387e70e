"""The fabrication check of a run's answer: observe, revise (one call without tools) or refuse.

The detector itself lives in ``fabrication``; this module decides what the finding changes and
emits ``FabricationDetectedEvent``. A broken detector or a failing revision call keeps the
draft: a check must never cost the user the answer.
"""

from __future__ import annotations

import inspect
from typing import Any, Final

from langchain_core.runnables import Runnable

from symfonic_otel.agent.calls import ModelCalls, RunState
from symfonic_otel.agent.config import FrameworkConfig
from symfonic_otel.agent.dispatch import CallbackDispatcher
from symfonic_otel.agent.fabrication import (
    SAFE_ENVELOPE,
    FabricationDetector,
    FabricationFinding,
    preview,
)
from symfonic_otel.agent.prompts import REVISION_INSTRUCTION, transcript
from symfonic_otel.events import FabricationAction, FabricationDetectedEvent
from symfonic_otel.logs import FailureLog, get_logger
from symfonic_otel.semconv import NODE_FABRICATION_REVISE

__all__ = ["FabricationChecker"]

_logger = get_logger("symfonic_otel.agent")

REVISION_FAILED: Final = "agent.fabrication_revision_failed"


class FabricationChecker:
    """Runs ``config.fabrication_check`` on a draft answer."""

    def __init__(
        self,
        config: FrameworkConfig,
        detector: FabricationDetector,
        dispatch: CallbackDispatcher,
        calls: ModelCalls,
        model: Runnable[Any, Any],
        failures: FailureLog,
    ) -> None:
        self._config = config
        self._detector = detector
        self._dispatch = dispatch
        self._calls = calls
        self._model = model
        self._failures = failures

    async def check(self, run: RunState, draft: str) -> tuple[str, tuple[FabricationFinding, ...]]:
        """The answer to show (the draft, a revision or the refuse envelope) and the findings."""
        config = self._config
        try:
            found = self._detector(draft, list(run.messages))
            if inspect.isawaitable(found):
                found = await found
            findings = tuple(found)
        except Exception as exc:  # a broken detector must not break the answer
            # Type and run id only: a detector's message may quote the draft.
            _logger.warning(
                "fabrication detector raised; the draft is kept unchecked",
                run_id=run.run_id,
                error_type=type(exc).__name__,
            )
            return draft, ()
        if not findings:
            return draft, ()
        mode = config.fabrication_check
        threshold = config.fabrication_refuse_min_confidence
        strongest = max(float(f.confidence) for f in findings)
        action: FabricationAction = "observed"
        if mode == "revise" and not run.streaming:
            action = "revise_forced"
        elif mode == "refuse" and strongest >= threshold:
            action = "refuse_replaced"
        draft_preview, truncated = preview(draft)
        await self._dispatch.send(
            "on_fabrication_detected",
            lambda: FabricationDetectedEvent(
                run_id=run.run_id,
                mode=mode,
                action_taken=action,
                findings=[f.to_event_payload() for f in findings],
                refuse_threshold=threshold,
                max_finding_confidence=strongest,
                original_draft_preview=draft_preview,
                replacement_preview=(
                    preview(SAFE_ENVELOPE)[0] if action == "refuse_replaced" else None
                ),
                preview_truncated=truncated,
            ),
        )
        if action == "refuse_replaced":
            return SAFE_ENVELOPE, findings
        if action == "revise_forced":
            return await self._revise(run, draft, findings), findings
        return draft, findings

    async def _revise(
        self, run: RunState, draft: str, findings: tuple[FabricationFinding, ...]
    ) -> str:
        listed = "\n".join(f"- {f.kind}: {f.claim}" for f in findings)
        prompt = (
            f"{REVISION_INSTRUCTION}\n\nUnsupported claims:\n{listed}\n\n<conversation>\n"
            f"{transcript(run.messages)}\n</conversation>\n\n<draft>\n{draft}\n</draft>"
        )
        failure = (REVISION_FAILED, "fabrication_check=revise")
        text = await self._calls.ask(run, self._model, prompt, NODE_FABRICATION_REVISE, failure)
        return text if text and text.strip() else draft
