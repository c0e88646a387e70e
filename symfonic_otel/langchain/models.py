"""Model calls: chat and completion runs -> the core's ``llm_end`` (span and metrics).

The span's attributes are built once per call: request parameters, the conversation and (with
capture on) the input messages, system instructions and tool definitions at the start; response
id and model, reasoning tokens, streaming and (with capture on) the output messages at the end.
Time to first chunk is the delay to the first ``on_llm_new_token``. A call that reports no usage
has an unknown cost (``symfonic.llm.pricing_unknown``), never a cost of 0.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, Final

from opentelemetry.context import Context
from opentelemetry.util.types import AttributeValue

from symfonic_otel import semconv
from symfonic_otel.core.call_flow import Hints
from symfonic_otel.langchain import errors
from symfonic_otel.langchain.attributes import (
    conversation_id,
    request_attributes,
    response_attributes,
)
from symfonic_otel.langchain.base import Part, in_span
from symfonic_otel.langchain.extract import (
    EMPTY_LLM_OUTPUT,
    NO_CALL_FIELDS,
    LLMOutput,
    RunKey,
    call_fields,
    llm_output,
)
from symfonic_otel.langchain.state import ChatCall
from symfonic_otel.read import content_json as messages
from symfonic_otel.read import extract as ex
from symfonic_otel.read import sanitise

__all__ = ["ModelCalls"]

_EMPTY: Final[Mapping[str, Any]] = {}
# Tool lists bound to a model are the same object on every call: their JSON is built once.
_TOOL_CACHE_SIZE: Final = 64


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else _EMPTY


class _ToolDefinitions:
    """``gen_ai.tool.definitions`` per bound tool list, by identity (the list is kept alive, so
    its id cannot be reused while cached)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: OrderedDict[int, tuple[object, str | None, bool]] = OrderedDict()

    def __call__(self, tools: Sequence[Any]) -> tuple[str | None, bool]:
        with self._lock:
            hit = self._cache.get(id(tools))
        if hit is not None and hit[0] is tools:
            return hit[1], hit[2]
        text, truncated = messages.tool_definitions_json(tools)
        with self._lock:
            self._cache[id(tools)] = (tools, text, truncated)
            while len(self._cache) > _TOOL_CACHE_SIZE:
                self._cache.popitem(last=False)
        return text, truncated


class ModelCalls(Part):
    """Model-call starts, streamed chunks and ends; see the module docstring."""

    _tool_definitions = _ToolDefinitions()

    def start_call(
        self,
        key: RunKey,
        parent: RunKey | None,
        metadata: Mapping[str, Any],
        kwargs: Mapping[str, Any],
        current: Context,
        inputs: object,
        operation: str,
    ) -> None:
        started_ns = time.time_ns()
        fields = self._read(
            "call_metadata", lambda meta: call_fields(meta, kwargs), metadata, NO_CALL_FIELDS
        )
        call = ChatCall(
            agent=None,
            started_ns=started_ns,
            model=fields.model,
            provider=fields.provider,
            node=fields.node,
            iteration=0,
            tenant=fields.tenant,
            parent=current,
            operation=operation,
            attributes=self._read(
                "call_request",
                lambda meta: self._request(meta, kwargs, inputs),
                metadata,
                dict[str, AttributeValue](),
            ),
        )
        self._tree.start_call(key, parent, call)

    def _request(
        self, metadata: Mapping[str, Any], kwargs: Mapping[str, Any], inputs: object
    ) -> dict[str, AttributeValue]:
        params = _mapping(kwargs.get("invocation_params"))
        attributes = request_attributes(metadata, params, _mapping(kwargs.get("options")))
        conversation = conversation_id(metadata)
        if conversation is not None:
            attributes[semconv.GEN_AI_CONVERSATION_ID] = conversation
        if self._core.capture_content:
            self._capture_input(attributes, params, inputs)
        return attributes

    def _capture_input(
        self, attributes: dict[str, AttributeValue], params: Mapping[str, Any], inputs: object
    ) -> None:
        truncated = False
        if isinstance(inputs, list) and inputs and isinstance(inputs[0], list):  # chat messages
            system, history, truncated = messages.input_messages_json(inputs[0])
            if system is not None:
                attributes[semconv.GEN_AI_SYSTEM_INSTRUCTIONS] = system
            if history is not None:
                attributes[semconv.GEN_AI_INPUT_MESSAGES] = history
        elif isinstance(inputs, list) and inputs:  # completion prompts
            attributes[semconv.GEN_AI_INPUT_MESSAGES], truncated = messages.prompts_json(inputs)
        tools = params.get("tools") or params.get("functions")
        if isinstance(tools, list | tuple) and tools:
            definitions, cut = self._tool_definitions(tools)
            if definitions is not None:
                attributes[semconv.GEN_AI_TOOL_DEFINITIONS] = definitions
            truncated = truncated or cut
        if truncated:
            attributes[semconv.CONTENT_TRUNCATED] = True

    def new_token(self, key: RunKey) -> None:
        self._tree.first_chunk(key, time.time_ns())

    def end_call(self, key: RunKey, response: object, error: BaseException | None) -> None:
        ended_ns = time.time_ns()
        kind = errors.classify(error)
        output: LLMOutput = EMPTY_LLM_OUTPUT
        if kind == "ok":
            output = self._read("llm_output", llm_output, response, EMPTY_LLM_OUTPUT)
        call = self._tree.end_call(key, output.shape)
        if call is None:
            return
        if kind == "ok":
            empty: dict[str, AttributeValue] = {}
            found = self._read("llm_response", self._response, (response, output), empty)
            call.attributes.update(found)
        elif kind == "cancelled":  # cancelled mid-call: it never finished
            call.attributes[semconv.STEP_UNFINISHED] = True
        self._record(call, output, error, kind, ended_ns)

    def unfinished(self, call: ChatCall) -> None:
        """A call still open when its run ended (cancelled mid-call, a stream left early, its
        end callback never sent): recorded as it stands, ``symfonic.step.unfinished``."""
        call.attributes[semconv.STEP_UNFINISHED] = True
        self._record(call, EMPTY_LLM_OUTPUT, None, "cancelled", time.time_ns())

    def _record(
        self,
        call: ChatCall,
        output: LLMOutput,
        error: BaseException | None,
        kind: errors.ErrorKind,
        ended_ns: int,
    ) -> None:
        agent = call.agent
        attributes = call.attributes
        first_chunk_s: float | None = None
        if call.first_chunk_ns is not None:
            attributes[semconv.GEN_AI_REQUEST_STREAM] = True
            first_chunk_s = max(call.first_chunk_ns - call.started_ns, 0) / 1e9
        parent: Context | None = in_span(call.parent_span)
        if agent is None and parent is None:  # standalone: under the caller's span
            parent = call.parent
        error_type = ex.error_type(errors.error_type(error, kind), None)
        failed = errors.outcome(kind) == "error"
        ended_ns = max(ended_ns, call.started_ns)
        self._core.record_model_call(
            ex.ModelCall(
                run_id=sanitise.run_key(agent.run_id) if agent is not None else "",
                model=sanitise.clean_text(call.model, sanitise.MAX_NAME_BYTES),
                node=sanitise.clean_text(call.node, sanitise.MAX_NAME_BYTES),
                iteration=call.iteration,
                error_type=(error_type or semconv.OTHER_VALUE) if failed else None,
                finish_reason=ex.clean_stop_reason(output.stop_reason),
                output=output.text,
                timing=ex.call_timing(None, call.started_ns, ended_ns),
                usage=output.usage,
                pricing_unknown=not output.usage_reported,  # no usage: the cost is unknown
                details=None,
            ),
            Hints(
                provider=call.provider,
                start_time_ns=call.started_ns,
                end_time_ns=ended_ns,
                error_type=error_type,
                parent=parent,
                tenant_id=call.tenant,
                attributes=attributes,
                time_to_first_chunk_s=first_chunk_s,
                operation_name=call.operation if call.operation != semconv.OP_CHAT else None,
            ),
        )

    def _response(self, pair: tuple[object, LLMOutput]) -> dict[str, AttributeValue]:
        response, output = pair
        attributes = response_attributes(response)
        if self._core.capture_content:
            generations = getattr(response, "generations", None)
            first = generations[0] if isinstance(generations, list) and generations else []
            finish = output.stop_reason  # the provider's own; else semconv's, from the shape
            if finish is None and output.shape is not None:
                finish = "tool_call" if output.shape.tool_call_count else "stop"
            text, truncated = messages.output_messages_json(first, finish)
            attributes[semconv.GEN_AI_OUTPUT_MESSAGES] = text
            if truncated:
                attributes[semconv.CONTENT_TRUNCATED] = True
        return attributes
