"""``opentelemetry-instrument python app.py`` exporting to a real OTLP receiver, as users run it.

The application (``instrumentor_app.py``) has no telemetry code. The SDK is configured the way
``opentelemetry-distro`` does it: through the ``opentelemetry_configurator`` entry point, whose
configurator is the SDK's own ``_OTelSDKConfigurator`` (the distro's is an empty subclass of it).
When no distribution registers one, the test registers the SDK's for the subprocess only, with a
dist-info directory on its ``PYTHONPATH``, rather than installing the distro into an environment
other test runs share; the ``OTEL_*`` variables the distro would default are set explicitly.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from symfonic_otel import semconv
from tests.support.instrumentor_app import ANSWER, QUESTION
from tests.support.otlp_receiver import (
    GrpcOtlpReceiver,
    HttpOtlpReceiver,
    OtlpReceiver,
    ReceivedSpan,
)
from tests.support.processes import run_text

OURS = "symfonic_otel"
OPENINFERENCE = "openinference.instrumentation.langchain"
APP = Path(__file__).resolve().parents[1] / "support" / "instrumentor_app.py"
ROOT = Path(__file__).resolve().parents[2]
# Longest the interpreter may take to exit once the app's own work is done: the SDK's exit
# hooks flush spans and metrics to a local receiver (about 0.5 s measured on gRPC and HTTP).
EXIT_BUDGET_S = 5.0


@pytest.fixture(scope="module")
def command() -> str:
    found = shutil.which("opentelemetry-instrument")
    registered = any(
        e.name == "symfonic_langchain" for e in entry_points(group="opentelemetry_instrumentor")
    )
    if found is None or not registered:
        pytest.skip("opentelemetry-instrument or the installed entry point is not available")
    return found


@pytest.fixture(scope="module")
def configurator(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A ``PYTHONPATH`` entry registering the SDK's configurator, unless a distro is installed."""
    if any(True for _ in entry_points(group="opentelemetry_configurator")):
        return ""
    site = tmp_path_factory.mktemp("configurator")
    info = site / "otel_sdk_configurator-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: otel-sdk-configurator\nVersion: 0\n"
    )
    (info / "entry_points.txt").write_text(
        "[opentelemetry_configurator]\n"
        "sdk = opentelemetry.sdk._configuration:_OTelSDKConfigurator\n"
    )
    return str(site)


@pytest.fixture(params=["grpc", "http/protobuf"])
def receiver(request: pytest.FixtureRequest) -> Iterator[OtlpReceiver]:
    server: OtlpReceiver = GrpcOtlpReceiver() if request.param == "grpc" else HttpOtlpReceiver()
    with server:
        yield server


def run_app(
    command: str,
    configurator: str,
    receiver: OtlpReceiver,
    tmp_path: Path,
    *args: str,
    **extra: str,
) -> dict[str, Any]:
    """Run the app under ``opentelemetry-instrument``; its result and how long exit took."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), configurator) if p),
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": receiver.protocol,
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_SERVICE_NAME": "returns-agent",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=staging",
        **extra,
    }
    for name in ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "OTEL_PYTHON_DISTRO"):
        if name not in extra:
            env.pop(name, None)
    done = run_text(
        [command, sys.executable, str(APP), *args],
        env=env,
        cwd=tmp_path,
    )
    exited = time.time()
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["exit_s"] = exited - result["end"]
    return result


def of_scope(spans: list[ReceivedSpan], scope: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.scope == scope]


def the(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    (span,) = [s for s in spans if s.name == name]
    return span


def check_turn_tree(spans: list[ReceivedSpan], root_parent: str = "") -> ReceivedSpan:
    """Our spans of the turn: the agent run (under ``root_parent``: none, or a peer
    instrumentation's span), its calls and tools, the retrieval with its embeddings call, the
    sub-graph's run under the tool that invoked it. Returns the root."""
    root = the(spans, "invoke_agent symfonic")
    turn = [s for s in spans if s.trace_id == root.trace_id]
    # The vector store's setup call, outside any run, is a trace of its own.
    assert [s.name for s in spans if s.trace_id != root.trace_id] == ["embeddings"]
    tools = {s.name: s for s in turn if s.name.startswith("execute_tool")}
    retrieval = the(turn, "retrieval InMemoryVectorStore")
    sub_run = the(turn, "invoke_agent expert")
    expected_parent = {
        root.span_id: root_parent,
        tools["execute_tool search_policy"].span_id: root.span_id,
        tools["execute_tool ask_expert"].span_id: root.span_id,
        retrieval.span_id: tools["execute_tool search_policy"].span_id,
        the(turn, "embeddings").span_id: retrieval.span_id,
        sub_run.span_id: tools["execute_tool ask_expert"].span_id,
    }
    chats = [s for s in turn if s.name == "chat scripted-chat"]
    assert sorted(s.parent_span_id for s in chats) == sorted(
        [root.span_id, root.span_id, sub_run.span_id]
    )
    assert len(turn) == len(expected_parent) + len(chats)
    assert {s.span_id: s.parent_span_id for s in turn if s not in chats} == expected_parent
    for span in turn:
        if span.name != "embeddings":  # embeddings have no callbacks, so no run to take it from
            assert span.attributes[semconv.TENANT_ID] == "acme", span.name
    return root


@pytest.mark.parametrize("capture", [False, True], ids=["capture-off", "capture-on"])
def test_turn_reaches_the_collector_with_no_code_change(
    command: str, configurator: str, receiver: OtlpReceiver, tmp_path: Path, capture: bool
) -> None:
    """The README's migration advice too: ``langchain`` disables OpenInference (and OpenLLMetry,
    whose entry point has the same name), so only our spans arrive."""
    extra = {"OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "langchain"}
    if capture:
        extra["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    result = run_app(command, configurator, receiver, tmp_path, **extra)
    assert result["answer"] == ANSWER
    assert result["current"] is False  # nothing left current in the app after the turn
    assert result["exit_s"] < EXIT_BUDGET_S, result

    spans = receiver.spans()
    assert {s.scope for s in spans} == {OURS}
    root = check_turn_tree(spans)
    for item in [*spans, *receiver.points()]:
        assert item.resource["service.name"] == "returns-agent"
        assert item.resource["deployment.environment.name"] == "staging"
    assert (QUESTION in str(root.attributes.get(semconv.GEN_AI_INPUT_MESSAGES))) is capture
    assert (QUESTION.encode() in receiver.raw_bytes()) is capture

    points = receiver.points()  # one export, at exit: cumulative totals of the turn
    durations = {
        operation: sum(
            p.count or 0
            for p in points
            if p.name == semconv.CLIENT_OPERATION_DURATION.name
            and p.attributes[semconv.GEN_AI_OPERATION_NAME] == operation
        )
        for operation in ("chat", "embeddings")
    }
    # Two model calls of the agent, one of the expert; the store's setup and the search.
    assert durations == {"chat": 3, "embeddings": 2}
    runs = {
        (p.attributes[semconv.GEN_AI_AGENT_NAME], p.attributes[semconv.RUN_OUTCOME]): p.value
        for p in points
        if p.name == semconv.AGENT_RUNS.name and p.value
    }
    # The agent under the handler's agent name, its expert sub-agent under the graph's name.
    assert runs == {("symfonic", "completed"): 1.0, ("expert", "completed"): 1.0}
    assert {
        p.attributes[semconv.TENANT_ID]
        for p in points
        if p.name == semconv.AGENT_RUNS.name and p.value
    } == {"acme"}


def test_an_environment_variable_names_the_agent(
    command: str, configurator: str, tmp_path: Path
) -> None:
    """No code change and no ``instrument()`` call: the environment is the only way in."""
    with HttpOtlpReceiver() as receiver:
        extra = {
            "OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "langchain",
            semconv.AGENT_NAME_ENV: "returns-desk",
        }
        run_app(command, configurator, receiver, tmp_path, **extra)
        spans = receiver.spans()
        assert the(spans, "invoke_agent returns-desk")
        assert not [s for s in spans if s.name == "invoke_agent symfonic"]
        runs = {
            p.attributes[semconv.GEN_AI_AGENT_NAME]
            for p in receiver.points()
            if p.name == semconv.AGENT_RUNS.name and p.value
        }
        assert runs == {"returns-desk", "expert"}  # the sub-agent keeps its graph's name


def test_disabled_by_name_records_nothing_of_ours(
    command: str, configurator: str, tmp_path: Path
) -> None:
    """``OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=symfonic_langchain``: OpenInference still
    exports (so the pipeline works), nothing of ours arrives."""
    with GrpcOtlpReceiver() as receiver:
        extra = {"OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "symfonic_langchain"}
        result = run_app(command, configurator, receiver, tmp_path, **extra)
        assert result["answer"] == ANSWER
        spans = receiver.spans()
        assert of_scope(spans, OPENINFERENCE)
        assert of_scope(spans, OURS) == []
        assert not [p for p in receiver.points() if p.name.startswith("symfonic.")]


def test_alongside_openinference_both_record(
    command: str, configurator: str, tmp_path: Path
) -> None:
    """Nothing disabled: OpenInference's spans arrive and ours keep their tree."""
    with GrpcOtlpReceiver() as receiver:
        extra = {"OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": ""}
        result = run_app(command, configurator, receiver, tmp_path, **extra)
        assert result["answer"] == ANSWER
        assert result["exit_s"] < EXIT_BUDGET_S, result
        spans = receiver.spans()
        # A peer instrumentation may run the graph under a span of its own (OpenTelemetry's
        # LangChain instrumentations do once the `langchain` package is installed): our run
        # then nests under it, and the rest of our tree is unchanged.
        root = the(spans, "invoke_agent symfonic")
        peers = {s.span_id for s in spans if s.scope != OURS and s.trace_id == root.trace_id}
        assert root.parent_span_id == "" or root.parent_span_id in peers, root.parent_span_id
        check_turn_tree(of_scope(spans, OURS), root.parent_span_id)
        theirs = {s.name for s in of_scope(spans, OPENINFERENCE)}
        assert {"ScriptedChatModel", "search_policy", "ask_expert", "expert"} <= theirs


def test_run_open_at_exit_is_flushed_as_abandoned(
    command: str, configurator: str, tmp_path: Path
) -> None:
    """The app exits mid-turn: our exit hook ends the run before the SDK's flush, so its span
    and its ``abandoned`` count still arrive, and the interpreter does not wait for the turn."""
    with HttpOtlpReceiver() as receiver:
        extra = {"OTEL_PYTHON_DISABLED_INSTRUMENTATIONS": "langchain"}
        result = run_app(command, configurator, receiver, tmp_path, "abandon", **extra)
        assert result["exit_s"] < EXIT_BUDGET_S, result
        spans = receiver.spans()
        root = the(spans, "invoke_agent symfonic")
        assert root.attributes[semconv.RUN_OUTCOME] == "abandoned"
        abandoned = {
            p.attributes[semconv.TENANT_ID]: p.value
            for p in receiver.points()
            if p.name == semconv.AGENT_RUNS.name
            and p.attributes[semconv.RUN_OUTCOME] == "abandoned"
            and p.value
        }
        assert abandoned == {"acme": 1.0}
