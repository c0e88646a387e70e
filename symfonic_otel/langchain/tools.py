"""Tool and retriever runs -> ``execute_tool`` and ``retrieval`` spans.

Both are spans the core keeps open between the run's start and end (so spans made inside the
run can nest under them). A tool that caught its own error and reported it in its result
(``ToolMessage(status="error")``) ends its span in error, with ``error.type`` ``tool_error``.
With capture on, tool spans carry their arguments and result, retrieval spans their query and
documents; the document count is always set.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.context import Context
from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.langchain import errors
from symfonic_otel.langchain.attributes import agent_name, conversation_id, tool_failed
from symfonic_otel.langchain.base import Part, in_span
from symfonic_otel.langchain.errors import ErrorKind
from symfonic_otel.langchain.extract import RunKey, bounded, tenant
from symfonic_otel.langchain.state import SpanClaim
from symfonic_otel.read import content_json as messages
from symfonic_otel.read.content import truncate

__all__ = ["ToolCalls", "tool_call_id", "tool_name"]

_DEFAULT_RETRIEVER = "VectorStoreRetriever"


def tool_name(serialized: object, kwargs: Mapping[str, Any]) -> str:
    name = bounded(kwargs.get("name"))
    if name is None and isinstance(serialized, Mapping):
        name = bounded(serialized.get("name"))
    return name or ""


def tool_call_id(kwargs: Mapping[str, Any]) -> str | None:
    return bounded(kwargs.get("tool_call_id"))


def data_source(name: object, metadata: Mapping[str, Any]) -> str | None:
    """The retriever's own name when somebody set it, else its vector store's."""
    own = agent_name(name, None)
    if own is not None and own != _DEFAULT_RETRIEVER:
        return own
    return bounded(metadata.get("ls_vector_store_provider")) or own


def _arguments(inputs: object, input_str: object) -> tuple[str, bool]:
    """A tool's arguments as JSON: its inputs dict, else its input string (decoded if JSON)."""
    if isinstance(inputs, Mapping):
        return messages.value_json(inputs)
    text = input_str if isinstance(input_str, str) else str(input_str)
    try:
        decoded: object = json.loads(text)
    except ValueError:
        decoded = text
    return messages.value_json(decoded)


def _result(output: object) -> tuple[str, bool]:
    if getattr(output, "type", None) == "tool":  # a ToolMessage: its content is the result
        output = getattr(output, "content", None)
    else:  # a LangGraph ``Command``: its tool messages are the result, else its state update
        update = getattr(output, "update", None)
        if isinstance(update, Mapping):
            found = update.get("messages")
            replies = [
                getattr(m, "content", None)
                for m in (found[:64] if isinstance(found, list | tuple) else ())
                if getattr(m, "type", None) == "tool"
            ]
            output = replies[0] if len(replies) == 1 else replies or dict(update)
    return messages.value_json(output)


def _captured(key: str, payload: tuple[str, bool]) -> dict[str, AttributeValue]:
    text, truncated = payload
    attributes: dict[str, AttributeValue] = {key: text}
    if truncated:
        attributes[semconv.CONTENT_TRUNCATED] = True
    return attributes


class ToolCalls(Part):
    """Tool and retriever starts and ends; see the module docstring."""

    def _start_span(
        self,
        key: RunKey,
        parent: RunKey | None,
        current: Context,
        start: Any,
    ) -> SpanClaim | None:
        """Claim the run, start its span with ``start(claim, parent_context)``, keep it."""
        claim = self._tree.claim_span(key, parent)
        if claim is None:  # a duplicate start, or a run at its child cap
            return None
        where = in_span(claim.parent_span)
        if claim.agent is None and where is None:
            where = current
        span: Span | None = start(claim, where)
        if not self._tree.attach_span(key, claim, span) and span is not None:
            self._core.end_call(span)  # the run ended (or was evicted) meanwhile
        if claim.agent is None:
            self._end_spans(self._tree.evict_loose_spans())
        return claim

    def _loose_tenant(self, claim: SpanClaim, what: str, metadata: Mapping[str, Any]) -> str | None:
        """The tenant a span outside any run names in its metadata; a run's span is its run's."""
        return None if claim.agent is not None else self._read(what, tenant, metadata, None)

    # --- tools --------------------------------------------------------------------------------

    def start_tool(
        self,
        key: RunKey,
        parent: RunKey | None,
        serialized: object,
        kwargs: Mapping[str, Any],
        metadata: Mapping[str, Any],
        current: Context,
        inputs: object,
        input_str: object,
    ) -> None:
        name = self._read("tool_name", lambda ser: tool_name(ser, kwargs), serialized, "")
        call_id = self._read("tool_call_id", tool_call_id, kwargs, None)
        attributes: dict[str, AttributeValue] | None = None
        if self._core.capture_content:
            attributes = self._read(
                "tool_input",
                lambda i: _captured(semconv.GEN_AI_TOOL_CALL_ARGUMENTS, _arguments(i, input_str)),
                inputs,
                None,
            )

        def start(claim: SpanClaim, where: Context | None) -> Span | None:
            return self._core.start_tool(
                claim.agent.run_id if claim.agent is not None else "",
                name,
                call_id=call_id,
                tenant_id=self._loose_tenant(claim, "tool_metadata", metadata),
                parent=where,
                attributes=attributes,
                arguments=inputs if isinstance(inputs, Mapping) else input_str,
            )

        self._start_span(key, parent, current, start)

    def _end_span(
        self, key: RunKey, error: BaseException | None, finish: Callable[[Span, ErrorKind], None]
    ) -> None:
        """End the run's span, if it has one, with ``finish(span, kind)`` (how the run ended)."""
        kind = errors.classify(error)
        span = self._tree.end_span(key, interrupted=kind == "interrupt")
        if span is not None:
            finish(span, kind)

    def end_tool(self, key: RunKey, output: object, error: BaseException | None) -> None:
        def finish(span: Span, kind: ErrorKind) -> None:
            error_type = errors.error_type(error, kind)
            attributes: dict[str, AttributeValue] | None = None
            if kind == "ok":
                if self._read("tool_status", tool_failed, output, False):
                    error_type = semconv.TOOL_ERROR_TYPE
                if self._core.capture_content:
                    attributes = self._read(
                        "tool_output",
                        lambda out: _captured(semconv.GEN_AI_TOOL_CALL_RESULT, _result(out)),
                        output,
                        None,
                    )
            if kind == "cancelled":  # cancelled mid-call: it never finished
                attributes = {**(attributes or {}), semconv.STEP_UNFINISHED: True}
            self._core.end_tool(span, error_type=error_type, attributes=attributes)

        self._end_span(key, error, finish)

    # --- retrievers ---------------------------------------------------------------------------

    def start_retriever(
        self,
        key: RunKey,
        parent: RunKey | None,
        query: object,
        metadata: Mapping[str, Any],
        name: object,
        current: Context,
    ) -> None:
        def attributes_of(meta: Mapping[str, Any]) -> dict[str, AttributeValue]:
            attributes: dict[str, AttributeValue] = {}
            source = data_source(name, meta)
            if source is not None:
                attributes[semconv.GEN_AI_DATA_SOURCE_ID] = source
            conversation = conversation_id(meta)
            if conversation is not None:
                attributes[semconv.GEN_AI_CONVERSATION_ID] = conversation
            if self._core.capture_content and isinstance(query, str):
                text, cut = truncate(query)
                attributes[semconv.GEN_AI_RETRIEVAL_QUERY_TEXT] = text
                if cut:
                    attributes[semconv.CONTENT_TRUNCATED] = True
            return attributes

        empty: dict[str, AttributeValue] = {}
        attributes = self._read("retriever_metadata", attributes_of, metadata, empty)
        source = attributes.get(semconv.GEN_AI_DATA_SOURCE_ID)
        span_name = f"{semconv.OP_RETRIEVAL} {source}" if source else semconv.OP_RETRIEVAL

        def start(claim: SpanClaim, where: Context | None) -> Span | None:
            return self._core.start_call(
                semconv.OP_RETRIEVAL,
                span_name,
                run_id=claim.agent.run_id if claim.agent is not None else None,
                parent=where,
                tenant_id=self._loose_tenant(claim, "retriever_tenant", metadata),
                attributes=attributes,
            )

        self._start_span(key, parent, current, start)

    def end_retriever(self, key: RunKey, documents: object, error: BaseException | None) -> None:
        def finish(span: Span, kind: ErrorKind) -> None:
            attributes: dict[str, AttributeValue] = {}
            if kind == "ok" and isinstance(documents, Sequence) and not isinstance(documents, str):
                attributes[semconv.RETRIEVAL_DOCUMENT_COUNT] = len(documents)
                if self._core.capture_content:
                    attributes.update(
                        self._read(
                            "retriever_output",
                            lambda docs: _captured(
                                semconv.GEN_AI_RETRIEVAL_DOCUMENTS, messages.documents_json(docs)
                            ),
                            documents,
                            attributes,
                        )
                    )
            if kind == "cancelled":
                attributes[semconv.STEP_UNFINISHED] = True
            self._core.end_call(
                span, error_type=errors.error_type(error, kind), attributes=attributes
            )

        self._end_span(key, error, finish)
