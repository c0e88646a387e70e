"""Token counts of a LlamaIndex model call, read from the provider's raw response: the
Anthropic-style names come before the OpenAI-style ones when a provider sends both (a proxy
that adds the other spelling), and a name whose value is unusable gives way to the next."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, ChatResponse

from symfonic_otel.llama_index.reading import usage_of

BOTH = {"input_tokens": 7, "prompt_tokens": 100, "output_tokens": 3, "completion_tokens": 40}


def _response(usage: Any) -> ChatResponse:
    return ChatResponse(message=ChatMessage(role="assistant", content="ok"), raw={"usage": usage})


@pytest.mark.parametrize("shape", [dict, lambda fields: SimpleNamespace(**fields)])
def test_the_first_spelling_wins_when_a_provider_sends_both(shape: Any) -> None:
    assert usage_of(_response(shape(BOTH))) == {"input_tokens": 7, "output_tokens": 3}


def test_an_unusable_first_spelling_gives_way_to_the_second() -> None:
    usage = {
        "input_tokens": -1,
        "prompt_tokens": 100,
        "output_tokens": True,
        "completion_tokens": 4,
    }
    assert usage_of(_response(usage)) == {"input_tokens": 100, "output_tokens": 4}


def test_the_openai_spelling_alone_is_read() -> None:
    usage = {"prompt_tokens": 100, "completion_tokens": 10}
    assert usage_of(_response(usage)) == {"input_tokens": 100, "output_tokens": 10}
