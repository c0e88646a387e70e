"""Captured content on LangChain spans: messages, instructions, tools, tool I/O, documents.

Real langchain-core / LangGraph runs over scripted models. With capture on, each attribute holds
GenAI-semconv JSON; with capture off (the default) none of the text reaches any span.
"""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import InMemoryVectorStore

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.read.content import MAX_CONTENT_CHARS
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import AGENT_SPAN, USAGE, add, react_agent, tool_turn

SYSTEM = "You add numbers for the finance team."
QUESTION = "what is 1+2 for invoice 4471?"
ANSWER = "The sum for invoice 4471 is 3."
DOCUMENT = "Invoice 4471 belongs to the Oslo office."


def cfg(handler: LangChainCallbackHandler) -> RunnableConfig:
    return cast(RunnableConfig, {"callbacks": [handler]})


def attrs(telemetry: InMemoryTelemetry, name: str) -> list[dict[str, Any]]:
    spans = sorted(
        (s for s in telemetry.spans() if s.name == name), key=lambda s: s.start_time or 0
    )
    return [dict(s.attributes or {}) for s in spans]


def loads(value: object) -> Any:
    assert isinstance(value, str), value
    return json.loads(value)


def run_react(lc: LangChainCallbackHandler) -> None:
    agent = react_agent(
        ScriptedChatModel([tool_turn(), AIMessage(ANSWER, usage_metadata=USAGE)]),
        [add],
        prompt=SYSTEM,
    )
    agent.invoke({"messages": [("user", QUESTION)]}, config=cfg(lc))


def retrieve(lc: LangChainCallbackHandler) -> list[Document]:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents([Document(DOCUMENT, id="inv-4471"), Document("Unrelated.", id="x")])
    return store.as_retriever(search_kwargs={"k": 2}).invoke(QUESTION, config=cfg(lc))


def test_chat_spans_carry_messages_instructions_tools_and_tool_calls(
    telemetry: InMemoryTelemetry,
) -> None:
    lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=True))
    run_react(lc)
    first, second = attrs(telemetry, "chat scripted-chat")

    assert loads(first[semconv.GEN_AI_SYSTEM_INSTRUCTIONS]) == [{"type": "text", "content": SYSTEM}]
    assert loads(first[semconv.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    ]
    (tool,) = loads(first[semconv.GEN_AI_TOOL_DEFINITIONS])
    assert tool["type"] == "function" and tool["name"] == "add"
    assert tool["description"] == "Add two integers."
    assert set(tool["parameters"]["properties"]) == {"a", "b"}
    (output,) = loads(first[semconv.GEN_AI_OUTPUT_MESSAGES])
    assert output["role"] == "assistant"
    assert output["parts"] == [
        {"type": "tool_call", "name": "add", "id": "c1", "arguments": {"a": 1, "b": 2}}
    ]

    history = loads(second[semconv.GEN_AI_INPUT_MESSAGES])
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    assert history[1]["parts"][-1]["type"] == "tool_call"
    assert history[2]["parts"] == [{"type": "tool_call_response", "id": "c1", "response": "3"}]
    (answer,) = loads(second[semconv.GEN_AI_OUTPUT_MESSAGES])
    assert answer["parts"] == [{"type": "text", "content": ANSWER}]
    assert answer["finish_reason"] == "stop"  # no provider value: semconv's, from the shape
    assert output["finish_reason"] == "tool_call"

    (tool_span,) = attrs(telemetry, "execute_tool add")
    assert loads(tool_span[semconv.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"a": 1, "b": 2}
    assert loads(tool_span[semconv.GEN_AI_TOOL_CALL_RESULT]) == "3"


def test_prompt_template_input_is_captured_whatever_its_variable_names(
    telemetry: InMemoryTelemetry,
) -> None:
    lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=True))
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Translate to {language}."), ("user", "{text}")]
    )
    chain = prompt | ScriptedChatModel(["bonjour"])
    chain.invoke({"language": "French", "text": "hello"}, config=cfg(lc))
    single = ChatPromptTemplate.from_messages([("user", "Tell me about {topic}")])
    (single | ScriptedChatModel(["cats purr"])).invoke({"topic": "cats"}, config=cfg(lc))

    runs = attrs(telemetry, AGENT_SPAN)
    (both,) = loads(runs[0][semconv.GEN_AI_INPUT_MESSAGES])
    assert json.loads(both["parts"][0]["content"]) == {"language": "French", "text": "hello"}
    (one,) = loads(runs[1][semconv.GEN_AI_INPUT_MESSAGES])
    assert one["parts"][0]["content"] == "cats"
    chat = attrs(telemetry, "chat scripted-chat")[0]
    assert loads(chat[semconv.GEN_AI_SYSTEM_INSTRUCTIONS])[0]["content"] == "Translate to French."
    assert loads(chat[semconv.GEN_AI_INPUT_MESSAGES])[0]["parts"][0]["content"] == "hello"


def test_retrieval_span_documents_and_query_with_capture(telemetry: InMemoryTelemetry) -> None:
    lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=True))
    found = retrieve(lc)
    (span,) = attrs(telemetry, "retrieval InMemoryVectorStore")
    assert span[semconv.GEN_AI_OPERATION_NAME] == "retrieval"
    assert span[semconv.GEN_AI_DATA_SOURCE_ID] == "InMemoryVectorStore"
    assert span[semconv.RETRIEVAL_DOCUMENT_COUNT] == len(found) == 2
    assert span[semconv.GEN_AI_RETRIEVAL_QUERY_TEXT] == QUESTION
    documents = loads(span[semconv.GEN_AI_RETRIEVAL_DOCUMENTS])
    assert {d["id"] for d in documents} == {"inv-4471", "x"}
    assert DOCUMENT in {d["content"] for d in documents}


def test_long_history_keeps_the_newest_messages_within_the_budget(
    telemetry: InMemoryTelemetry,
) -> None:
    lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=True))
    history = [("user", f"turn {i} " + "x" * 3000) for i in range(12)]
    ScriptedChatModel(["ok"]).invoke([*history, ("user", "the last question")], config=cfg(lc))
    (chat,) = attrs(telemetry, "chat scripted-chat")
    kept = loads(chat[semconv.GEN_AI_INPUT_MESSAGES])
    assert kept[-1]["parts"][0]["content"] == "the last question"
    assert 1 < len(kept) < 13
    assert sum(len(m["parts"][0]["content"]) for m in kept) <= 4 * MAX_CONTENT_CHARS
    assert chat[semconv.CONTENT_TRUNCATED] is True


SECRETS = (SYSTEM, QUESTION, ANSWER, DOCUMENT, "Add two integers", "French", "hello", "bonjour")


def every_value(telemetry: InMemoryTelemetry) -> list[str]:
    values: list[str] = []
    for span in telemetry.spans():
        values.append(span.name)
        sources = [span.attributes or {}, *((e.attributes or {}) for e in span.events)]
        for attributes in sources:
            for value in attributes.values():
                items = value if isinstance(value, tuple) else (value,)
                values.extend(str(item) for item in items)
    return values


@pytest.mark.parametrize("capture", [False, True])
def test_no_content_reaches_spans_unless_capture_is_on(
    telemetry: InMemoryTelemetry, capture: bool
) -> None:
    lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=capture))
    run_react(lc)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Translate to {language}"), ("user", "{text}")]
    )
    (prompt | ScriptedChatModel(["bonjour"])).invoke(
        {"language": "French", "text": "hello"}, config=cfg(lc)
    )
    retrieve(lc)

    names = {s.name for s in telemetry.spans()}
    assert {AGENT_SPAN, "chat scripted-chat", "execute_tool add"} <= names
    assert "retrieval InMemoryVectorStore" in names
    text = "\n".join(every_value(telemetry))
    leaked = [secret for secret in SECRETS if secret in text]
    if capture:  # the same search finds every secret once capture is on
        assert leaked == list(SECRETS)
    else:
        assert leaked == []
        for span in telemetry.spans():  # counts, ids and parameters are still there
            if span.name == "retrieval InMemoryVectorStore":
                assert (span.attributes or {})[semconv.RETRIEVAL_DOCUMENT_COUNT] == 2
