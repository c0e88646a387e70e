"""The LangChain handler never raises, and what it tolerates it still records.

Every guard in the adapter and the core swallows exceptions, so "did not raise" alone proves
nothing. Each test here also checks that the input produced its spans, that the core counted no
``internal_error`` drop, and that the adapter's own guards caught nothing (or, for payloads whose
reads raise, only the reads, with the run still recorded and ended).
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from symfonic_otel import LangChainCallbackHandler, semconv
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import internal_errors

LONG = "m" * 65_536  # past every cap; multi-MB values have a test of their own (shrinking is slow)
NASTY_TEXT = (
    "",
    " ",
    "\ud800",
    "model\udfff",
    "\x00\x01",
    "\u202e",
    LONG,
    LONG + "\ud800",
    "gpt-4o",
    "acme",
    "agent",
)

_text = st.one_of(
    st.integers(0, len(NASTY_TEXT) - 1).map(NASTY_TEXT.__getitem__),
    st.text(st.characters(codec=None), max_size=30),
)
_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    _text,
    st.binary(max_size=8),
    st.builds(object),
    st.builds(lambda text: AIMessage(content=text), _text),
    st.builds(
        lambda text, stop: AIMessage(
            content=[{"type": "text", "text": text}], response_metadata={"finish_reason": stop}
        ),
        _text,
        _text,
    ),
)
junk = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(
            st.sampled_from(
                [
                    "messages",
                    "output",
                    "structured_response",
                    "tenant_id",
                    "ls_model_name",
                    "ls_provider",
                    "langgraph_node",
                    "role",
                    "content",
                    "type",
                    "tool_calls",
                    "input",
                ]
            ),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=12,
)
metadata = st.one_of(
    junk,
    st.fixed_dictionaries(
        {},
        optional={
            "tenant_id": _text,
            "ls_model_name": _text,
            "ls_provider": _text,
            "langgraph_node": _text,
        },
    ),
)
responses = st.one_of(
    junk,
    st.builds(
        lambda message: LLMResult(generations=[[ChatGeneration(message=message)]]),
        _leaf.filter(lambda value: isinstance(value, AIMessage)),
    ),
)
tool_kwargs = st.dictionaries(
    st.sampled_from(["name", "tool_call_id", "inputs", "invocation_params", "color"]),
    junk,
    max_size=3,
)


def operations(telemetry: InMemoryTelemetry) -> list[str]:
    return sorted(
        str((span.attributes or {}).get(semconv.GEN_AI_OPERATION_NAME))
        for span in telemetry.spans()
    )


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    inputs=junk,
    meta=metadata,
    serialized=junk,
    response=responses,
    outputs=junk,
    tool_output=junk,
    kwargs=tool_kwargs,
    error=junk,
    capture=st.booleans(),
)
def test_public_methods_record_whatever_they_are_given(
    inputs: Any,
    meta: Any,
    serialized: Any,
    response: Any,
    outputs: Any,
    tool_output: Any,
    kwargs: dict[str, Any],
    error: Any,
    capture: bool,
) -> None:
    telemetry = InMemoryTelemetry()
    try:
        lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=capture))
        root, chat, failed_chat, tool, loose_chat, loose_tool = (uuid4() for _ in range(6))
        lc.on_chain_start(serialized, inputs, run_id=root, metadata=meta)
        lc.on_chain_start(serialized, inputs, run_id=uuid4(), parent_run_id=root, metadata=meta)
        lc.on_chat_model_start(
            serialized, inputs, run_id=chat, parent_run_id=root, metadata=meta, **kwargs
        )
        lc.on_llm_end(response, run_id=chat, parent_run_id=root)
        lc.on_llm_start(serialized, inputs, run_id=failed_chat, parent_run_id=root, metadata=meta)
        lc.on_llm_error(error, run_id=failed_chat, parent_run_id=root)
        lc.on_tool_start(
            serialized, inputs, run_id=tool, parent_run_id=root, metadata=meta, **kwargs
        )
        lc.on_tool_end(tool_output, run_id=tool, parent_run_id=root)
        lc.on_chain_end(outputs, run_id=root)
        # Standalone: a model call and a tool run whose parents the adapter never saw.
        lc.on_chat_model_start(serialized, inputs, run_id=loose_chat, parent_run_id=uuid4())
        lc.on_llm_end(response, run_id=loose_chat)
        lc.on_tool_start(serialized, inputs, run_id=loose_tool, metadata=meta, **kwargs)
        lc.on_tool_error(error, run_id=loose_tool)
        assert lc.tool_context(loose_tool) is None

        assert operations(telemetry) == [
            "chat",
            "chat",
            "execute_tool",
            "execute_tool",
            "invoke_agent",
            "text_completion",  # on_llm_start: a completion model
        ]
        assert telemetry.value(semconv.AGENT_RUNS.name) == 1
        assert internal_errors(telemetry) == 0
        assert lc.internal_failures == {}
        assert lc.tracked_runs == 0 and lc.tracked_calls == 0
        assert telemetry.unended_spans == [] and telemetry.open_runs == 0
    finally:
        telemetry.shutdown()


class Hostile:
    """Every read raises: attributes, iteration, length, truthiness, text."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # protocol lookups (pytest, copy) see an ordinary object
            raise AttributeError(name)
        raise RuntimeError(f"no {name}")

    def __iter__(self) -> Any:
        raise RuntimeError("no iteration")

    def __len__(self) -> int:
        raise RuntimeError("no length")

    def __bool__(self) -> bool:
        raise RuntimeError("no truth")

    def __str__(self) -> str:
        raise RuntimeError("no text")


class HostileDict(dict[str, Any]):
    """A mapping whose reads raise (passes every ``isinstance(x, Mapping)`` check)."""

    def get(self, key: Any, default: Any = None) -> Any:
        raise RuntimeError("no get")

    def __getitem__(self, key: Any) -> Any:
        raise RuntimeError("no item")

    def items(self) -> Any:
        raise RuntimeError("no items")

    def values(self) -> Any:
        raise RuntimeError("no values")


@pytest.mark.parametrize("hostile", [Hostile(), HostileDict(messages=[1])], ids=["object", "dict"])
def test_unreadable_payloads_still_end_every_run(
    telemetry: InMemoryTelemetry, hostile: Any
) -> None:
    lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=True))
    root, chat, tool = uuid4(), uuid4(), uuid4()
    lc.on_chain_start(hostile, hostile, run_id=root, metadata=hostile)
    lc.on_chat_model_start(
        hostile,
        hostile,
        run_id=chat,
        parent_run_id=root,
        metadata=hostile,
        invocation_params=hostile,
    )
    lc.on_llm_end(hostile, run_id=chat, parent_run_id=root)
    lc.on_tool_start(hostile, hostile, run_id=tool, parent_run_id=root, name=hostile)
    lc.on_tool_end(hostile, run_id=tool, parent_run_id=root)
    lc.on_chain_end(hostile, run_id=root)

    assert operations(telemetry) == ["chat", "execute_tool", "invoke_agent"]
    assert internal_errors(telemetry) == 0
    failures = lc.internal_failures
    assert failures and all(kind.startswith("langchain.read_") for kind in failures), failures
    assert lc.tracked_runs == 0 and lc.tracked_calls == 0


def test_multi_megabyte_names_with_surrogates(telemetry: InMemoryTelemetry) -> None:
    big = "\ud800" + "n" * 5_000_000 + "\udfff"
    meta = {"tenant_id": big, "ls_model_name": big, "ls_provider": big, "langgraph_node": big}
    lc = LangChainCallbackHandler(handler=telemetry.handler(capture_content=True))
    root, chat, tool = uuid4(), uuid4(), uuid4()
    lc.on_chain_start({"name": big}, {"messages": [("user", big)]}, run_id=root, metadata=meta)
    lc.on_chat_model_start({}, [[]], run_id=chat, parent_run_id=root, metadata=meta)
    message = AIMessage(content=big, response_metadata={"finish_reason": big})
    lc.on_llm_end(LLMResult(generations=[[ChatGeneration(message=message)]]), run_id=chat)
    lc.on_tool_start({"name": big}, big, run_id=tool, parent_run_id=root, tool_call_id=big)
    lc.on_tool_end(big, run_id=tool, parent_run_id=root)
    lc.on_chain_end({"messages": [message]}, run_id=root)
    assert operations(telemetry) == ["chat", "execute_tool", "invoke_agent"]
    assert internal_errors(telemetry) == 0 and lc.internal_failures == {}
    for span in telemetry.spans():
        assert len(span.name) <= 300, len(span.name)


def test_state_is_bounded_in_bytes_whatever_the_names() -> None:
    """Open calls with 64 KB names, tenants, nodes and run ids keep a few hundred bytes each."""
    telemetry = InMemoryTelemetry()
    try:
        lc = LangChainCallbackHandler(handler=telemetry.handler())
        calls = 500
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for i in range(calls):
                big = f"{i:06d}" + "x" * 65_536
                meta = {"ls_model_name": big, "ls_provider": big, "langgraph_node": big}
                lc.on_chat_model_start(
                    {}, [[]], run_id=big + "c", metadata={**meta, "tenant_id": big}
                )
                lc.on_tool_start({"name": big}, big, run_id=big + "t", tool_call_id=big)
                del big, meta
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert lc.tracked_calls == 2 * calls
        # 500 x 2 x ~400 KB of input; what stays is the capped copies and the span objects.
        assert held < 6 * 1024 * 1024, held
        for i in range(calls):
            big = f"{i:06d}" + "x" * 65_536
            lc.on_llm_end(None, run_id=big + "c")
            lc.on_tool_end(None, run_id=big + "t")
        assert lc.tracked_calls == 0
        assert internal_errors(telemetry) == 0 and lc.internal_failures == {}
        assert telemetry.unended_spans == []
        names = {(s.attributes or {}).get(semconv.GEN_AI_TOOL_NAME) for s in telemetry.spans()}
        assert max(len(str(name)) for name in names) <= 256
    finally:
        telemetry.shutdown()


@pytest.mark.parametrize("bad", [3, "handler", object()])
def test_handler_must_be_a_core_handler(bad: Any) -> None:
    with pytest.raises(TypeError, match="OTelCallbackHandler"):
        LangChainCallbackHandler(handler=bad)
