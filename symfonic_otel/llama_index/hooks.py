"""The handler classes LlamaIndex's dispatcher calls: each forwards to its adapter, guarded.

``BaseSpanHandler`` keeps lists of open and completed spans of its own; these keep none (every
``prepare_*`` returns None), so nothing grows with the runs they see.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from pydantic import PrivateAttr

__all__ = ["Events", "Spans"]


class Spans(BaseSpanHandler[Any]):
    """Forwards the dispatcher's span calls; keeps none of LlamaIndex's own span lists."""

    _owner: Any = PrivateAttr(default=None)

    def new_span(self, *args: Any, **kwargs: Any) -> None:
        return None

    def prepare_to_exit_span(self, *args: Any, **kwargs: Any) -> None:
        return None

    def prepare_to_drop_span(self, *args: Any, **kwargs: Any) -> None:
        return None

    def span_enter(
        self,
        id_: str,
        bound_args: Any,
        instance: Any = None,
        parent_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._owner.guard(
            "span_enter", self._owner.enter, id_, bound_args, instance, parent_id, tags
        )

    def span_exit(
        self, id_: str, bound_args: Any, instance: Any = None, result: Any = None, **kwargs: Any
    ) -> None:
        self._owner.guard("span_exit", self._owner.exit, id_, result, None)

    def span_drop(
        self,
        id_: str,
        bound_args: Any,
        instance: Any = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> None:
        self._owner.guard("span_drop", self._owner.exit, id_, None, err)


class Events(BaseEventHandler):
    _owner: Any = PrivateAttr(default=None)

    def handle(self, event: Any, **kwargs: Any) -> None:
        self._owner.guard("event", self._owner.event, event)
