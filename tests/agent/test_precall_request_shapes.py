"""What an ``LLMPreCallEvent`` says of a runnable: its bound tools and invocation parameters.

Read from real langchain-core bindings of a scripted chat model: the OpenAI ``function`` and the
Anthropic ``input_schema`` tool shapes, the binding's keywords over the model's parameters, the
model itself (no binding), and a model whose parameters cannot be read. Each runnable is read
once while it is cached (by identity, at most 32), and reading never raises.
"""

from __future__ import annotations

from typing import Any

from symfonic_otel.agent.precall import RequestShapes
from symfonic_otel.testing.scripted import ScriptedChatModel

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}}
OPENAI_TOOL = {
    "type": "function",
    "function": {"name": "add", "description": "Add.", "parameters": SCHEMA},
}
ANTHROPIC_TOOL = {"name": "look", "description": "Look up.", "input_schema": SCHEMA}


class _CountingModel(ScriptedChatModel):
    """A scripted model that counts how often its invocation parameters are read."""

    reads: int = 0

    def _get_invocation_params(
        self, stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        self.reads += 1
        return super()._get_invocation_params(stop=stop, **kwargs)


class _UnreadableModel(ScriptedChatModel):
    """A model whose invocation parameters raise when read."""

    def _get_invocation_params(
        self, stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        raise RuntimeError("no parameters")


class _OddParamsModel(ScriptedChatModel):
    """A model whose invocation parameters are not a mapping."""

    def _get_invocation_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        return ["not", "a", "mapping"]


def _model() -> ScriptedChatModel:
    return ScriptedChatModel(script=[])


def test_an_openai_function_tool_is_read_from_its_function() -> None:
    tools, _ = RequestShapes()(_model().bind(tools=[OPENAI_TOOL]))
    assert tools == ({"name": "add", "description": "Add.", "schema": SCHEMA},)


def test_an_anthropic_tool_is_read_with_its_input_schema() -> None:
    tools, _ = RequestShapes()(_model().bind(tools=[ANTHROPIC_TOOL]))
    assert tools == ({"name": "look", "description": "Look up.", "schema": SCHEMA},)


def test_a_tool_with_both_schemas_is_read_with_its_parameters() -> None:
    both = {"name": "t", "parameters": SCHEMA, "input_schema": {"type": "null"}}
    tools, _ = RequestShapes()(_model().bind(tools=[both]))
    assert tools[0]["schema"] == SCHEMA


def test_a_tool_without_description_or_schema_gets_empty_ones() -> None:
    tools, _ = RequestShapes()(_model().bind(tools=[{"name": "bare", "description": None}]))
    assert tools == ({"name": "bare", "description": "", "schema": {}},)


def test_tools_without_a_usable_name_are_left_out_the_others_kept_in_order() -> None:
    bound = [
        "not a mapping",
        {"name": ""},
        {"function": {"name": 7}},
        ANTHROPIC_TOOL,
        OPENAI_TOOL,
    ]
    tools, _ = RequestShapes()(_model().bind(tools=bound))
    assert [tool["name"] for tool in tools] == ["look", "add"]


def test_the_binding_s_keywords_join_the_model_s_parameters_without_its_tools() -> None:
    _, params = RequestShapes()(_model().bind(tools=[OPENAI_TOOL], tool_choice="add"))
    assert params["tool_choice"] == "add" and params["model_name"] == "scripted-chat"
    assert "tools" not in params


def test_the_model_itself_has_no_tools_and_its_own_parameters() -> None:
    tools, params = RequestShapes()(_model())
    assert tools == () and params["model_name"] == "scripted-chat"
    assert "tool_choice" not in params


def test_tools_bound_as_a_tuple_are_read() -> None:
    tools, _ = RequestShapes()(_model().bind(tools=(OPENAI_TOOL, ANTHROPIC_TOOL)))
    assert [tool["name"] for tool in tools] == ["add", "look"]


def test_a_binding_whose_keywords_are_not_a_mapping_is_read_as_the_model_itself() -> None:
    class Model:
        bound = "something"
        kwargs = None

        def _get_invocation_params(self) -> dict[str, Any]:
            return {"model_name": "own"}

    assert RequestShapes()(Model()) == ((), {"model_name": "own"})


def test_tools_that_are_not_a_list_give_no_tools() -> None:
    tools, _ = RequestShapes()(_model().bind(tools={"name": "add"}))
    assert tools == ()


def test_a_model_whose_parameters_raise_gives_the_binding_s_keywords() -> None:
    runnable = _UnreadableModel(script=[]).bind(tools=[OPENAI_TOOL], temperature=0.2)
    tools, params = RequestShapes()(runnable)
    assert params == {"temperature": 0.2}
    assert [tool["name"] for tool in tools] == ["add"]


def test_parameters_that_are_not_a_mapping_give_the_binding_s_keywords() -> None:
    runnable = _OddParamsModel(script=[]).bind(temperature=0.2)
    assert RequestShapes()(runnable)[1] == {"temperature": 0.2}


def test_a_runnable_with_no_parameters_to_read_gives_none() -> None:
    assert RequestShapes()(object()) == ((), {})


def test_a_runnable_of_an_unexpected_shape_gives_nothing_and_never_raises() -> None:
    class Hostile:
        @property
        def bound(self) -> object:
            raise RuntimeError("unreadable")

    assert RequestShapes()(Hostile()) == ((), {})


def test_a_runnable_is_read_once_while_it_is_cached() -> None:
    model = _CountingModel(script=[])
    runnable = model.bind(tools=[OPENAI_TOOL])
    shapes = RequestShapes()
    first = shapes(runnable)
    assert shapes(runnable) is first
    assert model.reads == 1


def test_past_32_runnables_the_oldest_is_read_again_the_newest_is_not() -> None:
    model = _CountingModel(script=[])
    shapes = RequestShapes()
    runnables = [model.bind(temperature=index / 100) for index in range(33)]
    for runnable in runnables:
        shapes(runnable)
    assert model.reads == 33
    shapes(runnables[-1])
    shapes(runnables[1])  # the oldest of the 32 kept
    assert model.reads == 33
    shapes(runnables[0])
    assert model.reads == 34


def test_each_runnable_gets_its_own_request() -> None:
    shapes = RequestShapes()
    one = _model().bind(tool_choice="add")
    two = _model().bind(tool_choice="look")
    assert shapes(one)[1]["tool_choice"] == "add"
    assert shapes(two)[1]["tool_choice"] == "look"
