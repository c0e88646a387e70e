"""Which of two sources a model call's attributes come from when both say something.

The model's ``ls_*`` metadata wins over its invocation params (``ls_temperature``,
``ls_max_tokens``, ``ls_model_name``); among the params the first spelling of a parameter wins;
stop sequences come from the call's options, then the params, then ``ls_stop``; a choice count
is recorded only when it is not 1. A conversation is the LangGraph thread before a session; the
response id is the provider's, never the one LangChain made up; the response model is the
response metadata's ``model_name`` before its ``model`` and the result's ``llm_output``.
Driven through the handler's own callbacks with the payloads langchain-core sends.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry


def _call(
    lc: LangChainCallbackHandler,
    telemetry: InMemoryTelemetry,
    *,
    metadata: dict[str, Any],
    params: dict[str, Any],
    options: dict[str, Any] | None = None,
    message: AIMessage | None = None,
    llm_output: dict[str, Any] | None = None,
) -> tuple[str, dict[str, Any]]:
    """One standalone model call; returns its span's name and attributes."""
    run = uuid4()
    lc.on_chat_model_start(
        {},
        [[HumanMessage("hi")]],
        run_id=run,
        metadata=metadata,
        invocation_params=params,
        options=options or {},
    )
    reply = message if message is not None else AIMessage("ok")
    result = LLMResult(generations=[[ChatGeneration(message=reply)]], llm_output=llm_output)
    lc.on_llm_end(result, run_id=run)
    span = [s for s in telemetry.spans() if s.name.startswith("chat")][-1]
    return span.name, dict(span.attributes or {})


def test_the_models_metadata_wins_over_its_invocation_params(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    name, attributes = _call(
        lc,
        telemetry,
        metadata={"ls_model_name": "meta-model", "ls_temperature": 0.5, "ls_max_tokens": 64},
        params={"model": "param-model", "temperature": 0.9, "max_tokens": 10},
    )
    assert name == "chat meta-model"
    assert attributes[semconv.GEN_AI_REQUEST_TEMPERATURE] == 0.5
    assert attributes[semconv.GEN_AI_REQUEST_MAX_TOKENS] == 64


def test_without_metadata_the_invocation_params_are_used(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    name, attributes = _call(
        lc,
        telemetry,
        metadata={},
        params={"model": "param-model", "temperature": 0.9, "max_tokens": 10, "top_p": 0.1},
    )
    assert name == "chat param-model"
    assert attributes[semconv.GEN_AI_REQUEST_TEMPERATURE] == 0.9
    assert attributes[semconv.GEN_AI_REQUEST_MAX_TOKENS] == 10
    assert attributes[semconv.GEN_AI_REQUEST_TOP_P] == 0.1


def test_the_first_spelling_of_a_parameter_wins(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    _, attributes = _call(
        lc, telemetry, metadata={}, params={"max_tokens": 10, "max_completion_tokens": 99}
    )
    assert attributes[semconv.GEN_AI_REQUEST_MAX_TOKENS] == 10


def test_stop_sequences_come_from_the_options_then_the_params_then_the_metadata(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    stops = semconv.GEN_AI_REQUEST_STOP_SEQUENCES
    meta = {"ls_stop": ["C"]}
    _, options = _call(lc, telemetry, metadata=meta, params={"stop": ["B"]}, options={"stop": "A"})
    _, params = _call(lc, telemetry, metadata=meta, params={"stop_sequences": ["B"]})
    _, metadata = _call(lc, telemetry, metadata=meta, params={})
    assert (options[stops], params[stops], metadata[stops]) == (("A",), ("B",), ("C",))


def test_a_choice_count_is_recorded_only_when_it_is_not_one(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    _, one = _call(lc, telemetry, metadata={}, params={"n": 1})
    _, three = _call(lc, telemetry, metadata={}, params={"n": 3})
    assert semconv.GEN_AI_REQUEST_CHOICE_COUNT not in one
    assert three[semconv.GEN_AI_REQUEST_CHOICE_COUNT] == 3


def test_the_thread_is_the_conversation_before_a_session(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    both = {"thread_id": "thread-1", "session_id": "sess-1", "conversation_id": "conv-1"}
    _, threaded = _call(lc, telemetry, metadata=both, params={})
    _, session = _call(
        lc, telemetry, metadata={"session_id": "sess-1", "conversation_id": "conv-1"}, params={}
    )
    assert threaded[semconv.GEN_AI_CONVERSATION_ID] == "thread-1"
    assert session[semconv.GEN_AI_CONVERSATION_ID] == "sess-1"


def test_the_response_id_is_the_providers_and_never_a_made_up_one(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    made_up = AIMessage("ok", id=f"lc_run--{uuid4()}")
    _, local = _call(lc, telemetry, metadata={}, params={}, message=made_up)
    both = AIMessage("ok", id="msg-own", response_metadata={"id": "resp-provider"})
    _, provider = _call(lc, telemetry, metadata={}, params={}, message=both)
    own = AIMessage("ok", id="msg-own")
    _, message = _call(lc, telemetry, metadata={}, params={}, message=own)
    assert semconv.GEN_AI_RESPONSE_ID not in local
    assert provider[semconv.GEN_AI_RESPONSE_ID] == "resp-provider"
    assert message[semconv.GEN_AI_RESPONSE_ID] == "msg-own"


def test_the_response_model_is_the_response_metadatas_before_the_results(
    telemetry: InMemoryTelemetry, lc: LangChainCallbackHandler
) -> None:
    model = semconv.GEN_AI_RESPONSE_MODEL
    both = AIMessage("ok", response_metadata={"model_name": "m-name", "model": "m-model"})
    _, named = _call(
        lc, telemetry, metadata={}, params={}, message=both, llm_output={"model_name": "out"}
    )
    plain = AIMessage("ok", response_metadata={"model": "m-model"})
    _, plain_attributes = _call(
        lc, telemetry, metadata={}, params={}, message=plain, llm_output={"model_name": "out"}
    )
    _, result = _call(lc, telemetry, metadata={}, params={}, llm_output={"model_name": "out"})
    assert (named[model], plain_attributes[model], result[model]) == ("m-name", "m-model", "out")
