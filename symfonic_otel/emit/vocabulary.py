"""The metric emitter's closed vocabularies and caps: what a label may take, and what a tenant
starts with.

Kept apart from the emitter so the series budget (``budget``) and the tests read the same sets
the emitter folds into.
"""

from __future__ import annotations

from typing import Final

from symfonic_otel import semconv
from symfonic_otel.read.sanitise import clean_label

OTHER: Final = semconv.OTHER_VALUE
MAX_MODELS: Final = 200
MAX_NODES: Final = 32
MAX_PROVIDERS: Final = 32
MAX_TOOLS: Final = 200
# Framework agent names a handler labels its series with; more fold into ``_OTHER`` (see
# ``emit.agents``). The handler's own ``agent_name`` takes no slot.
MAX_AGENT_NAMES: Final = 16
TERMINATION_REASONS: Final = frozenset({"tool_calls_with_no_text", "no_content_no_tool_calls"})
FABRICATION_PAIRS: Final = frozenset(
    {
        ("off", "none"),
        ("observe", "observed"),
        ("observe", "none"),
        ("revise", "revise_forced"),
        ("revise", "observed"),
        ("revise", "none"),
        ("refuse", "refuse_replaced"),
        ("refuse", "observed"),
        ("refuse", "none"),
    }
)
KNOWN_STOP_REASONS: Final = frozenset(semconv.STOP_REASON_VALUES)
# Series created at zero when a tenant takes a slot: the numerators and denominators of the
# shipped alerts (silent-bail, empty-answer and error ratios; truncation and refusal ratios).
# Other series appear with their first count.
SEEDED_RUNS: Final[tuple[tuple[str, bool | None], ...]] = (
    ("completed", False),
    ("completed", True),
    ("error", None),
)
SEEDED_STOP_REASONS: Final = ("end_turn", "max_tokens", "refusal")


def label_or_other(raw: object) -> str:
    """An open label value, cleaned; one with nothing printable left is ``_OTHER``."""
    return clean_label(raw) or OTHER
