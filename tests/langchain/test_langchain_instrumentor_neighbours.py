"""SymfonicLangChainInstrumentor in the same process as OpenLLMetry's and OpenInference's.

Both wrap ``BaseCallbackManager.__init__`` too. Enabled together, each must keep recording its
own spans, and uninstrumenting ours, whatever the order they were instrumented in, must take
out our wrapper only (``opentelemetry.instrumentation.utils.unwrap`` drops the outermost wrapper,
whoever's it is; OpenInference puts back the method it saw, which may be ours).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.callbacks import CallbackManager
from openinference.instrumentation.langchain import LangChainInstrumentor as OpenInference
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)
from opentelemetry.instrumentation.langchain import LangchainInstrumentor as OpenLLMetry

from symfonic_otel import LangChainCallbackHandler
from symfonic_otel.instrumentation import SymfonicLangChainInstrumentor
from symfonic_otel.testing.telemetry import InMemoryTelemetry
from tests.support.langchain_support import (
    assert_one_tree_per_run,
    detach_errors_absent,
    internal_errors,
    restore_unwrapped,
    scripted_agent,
    tool_turn,
    wrapt_snapshot,
)

OPENINFERENCE = "openinference.instrumentation.langchain"
OPENLLMETRY = "opentelemetry.instrumentation.langchain"
ORDERS = {
    "ours-first": ("ours", "openllmetry", "openinference"),
    "ours-between": ("openinference", "ours", "openllmetry"),  # the entry points' order here
    "ours-last": ("openllmetry", "openinference", "ours"),
}


@pytest.fixture(autouse=True)
def no_detach_errors() -> Iterator[None]:
    with detach_errors_absent():
        yield


@pytest.fixture
def theirs() -> Iterator[InMemoryTelemetry]:
    """Where the other instrumentations export."""
    memory = InMemoryTelemetry()
    yield memory
    memory.shutdown()


class Neighbours:
    """The three instrumentors, instrumented in a given order, all undone at the end."""

    def __init__(self, ours: InMemoryTelemetry, theirs: InMemoryTelemetry) -> None:
        self.ours = SymfonicLangChainInstrumentor()
        self.all: dict[str, BaseInstrumentor] = {
            "ours": self.ours,
            "openllmetry": OpenLLMetry(),
            "openinference": OpenInference(),
        }
        self._telemetry = {"ours": ours, "openllmetry": theirs, "openinference": theirs}
        self._order: tuple[str, ...] = ()
        self._before = wrapt_snapshot()

    def instrument(self, order: tuple[str, ...]) -> LangChainCallbackHandler:
        self._order = order
        for name in order:
            telemetry = self._telemetry[name]
            self.all[name].instrument(
                tracer_provider=telemetry.tracer_provider,
                meter_provider=telemetry.meter_provider,
            )
        handler = self.ours.callback_handler
        assert handler is not None
        self._telemetry["ours"].track(handler.handler)
        return handler

    def uninstrument(self, name: str) -> None:
        self.all[name].uninstrument()

    def close(self) -> None:
        for name in reversed(self._order):
            if self.all[name].is_instrumented_by_opentelemetry:
                self.uninstrument(name)
        restore_unwrapped(self._before)


@pytest.fixture
def neighbours(telemetry: InMemoryTelemetry, theirs: InMemoryTelemetry) -> Iterator[Neighbours]:
    three = Neighbours(telemetry, theirs)
    yield three
    three.close()


def turn() -> None:
    answer = scripted_agent(tool_turn(), "The sum is 3.").invoke({"messages": [("user", "1+2")]})
    assert answer["messages"][-1].content == "The sum is 3."


async def aturn() -> None:
    answer = await scripted_agent(tool_turn(), "3").ainvoke({"messages": [("user", "1+2")]})
    assert answer["messages"][-1].content == "3"


def scopes(memory: InMemoryTelemetry) -> dict[str, list[str]]:
    by_scope: dict[str, list[str]] = {}
    for span in memory.spans():
        assert span.instrumentation_scope is not None
        by_scope.setdefault(span.instrumentation_scope.name, []).append(span.name)
    return by_scope


def their_llm_and_tool_spans(theirs: InMemoryTelemetry) -> tuple[int, int]:
    """(OpenInference, OpenLLMetry) spans of the model call and the tool call."""
    names = scopes(theirs)
    openinference = names.get(OPENINFERENCE, [])
    openllmetry = names.get(OPENLLMETRY, [])
    return (
        openinference.count("ScriptedChatModel") + openinference.count("add"),
        openllmetry.count("ScriptedChatModel.chat") + openllmetry.count("execute_tool add"),
    )


@pytest.mark.parametrize("order", ORDERS.values(), ids=ORDERS.keys())
@pytest.mark.parametrize("use_async", [False, True])
async def test_all_three_enabled_each_records_its_own(
    telemetry: InMemoryTelemetry,
    theirs: InMemoryTelemetry,
    neighbours: Neighbours,
    order: tuple[str, ...],
    use_async: bool,
) -> None:
    handler = neighbours.instrument(order)
    if use_async:
        await aturn()
    else:
        turn()

    assert_one_tree_per_run(telemetry.spans(), runs=1, chats=2, tools=1)
    assert internal_errors(telemetry) == 0
    assert handler.tracked_runs == handler.tracked_calls == 0
    assert their_llm_and_tool_spans(theirs) == (3, 3)  # two model calls, one tool call each
    assert theirs.unended_spans == []


@pytest.mark.parametrize("order", ORDERS.values(), ids=ORDERS.keys())
def test_uninstrument_ours_leaves_theirs_working(
    telemetry: InMemoryTelemetry,
    theirs: InMemoryTelemetry,
    neighbours: Neighbours,
    order: tuple[str, ...],
) -> None:
    handler = neighbours.instrument(order)
    neighbours.uninstrument("ours")
    turn()
    assert telemetry.spans() == []  # ours records nothing more...
    assert their_llm_and_tool_spans(theirs) == (3, 3)  # ...and theirs still record
    manager = CallbackManager(handlers=[])
    assert handler not in manager.handlers and len(manager.handlers) == 2
    assert handler.tracked_runs == handler.tracked_calls == 0


def test_uninstrument_before_openinference_leaves_our_wrapper_inert(
    telemetry: InMemoryTelemetry, neighbours: Neighbours
) -> None:
    """OpenInference saved the method as it found it (ours) and puts that back when it is
    uninstrumented after us: our wrapper is then back in LangChain, and must do nothing."""
    handler = neighbours.instrument(("ours", "openinference"))
    neighbours.uninstrument("ours")
    neighbours.uninstrument("openinference")
    turn()
    assert telemetry.spans() == []
    assert CallbackManager(handlers=[]).handlers == []
    assert handler.tracked_runs == handler.tracked_calls == 0
