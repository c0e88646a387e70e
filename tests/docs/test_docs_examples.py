"""Every code example of the docs runs as it is and does what its page says.

Each file under ``docs/examples/`` is run here, exactly as a reader would run it (a fresh
interpreter, from the repository root), against real parts: the SDK's console exporters, the
Prometheus endpoint, a real OTLP receiver, ``opentelemetry-instrument``. The pages include the
files verbatim (``pymdownx.snippets``), so an example that stops working fails here, not in a
reader's terminal.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.langchain.test_langchain_instrumentor_cli import configurator  # noqa: F401  (a fixture)
from tests.support.otlp_receiver import GrpcOtlpReceiver

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
DOCS = ROOT / "docs"
SNIPPET = re.compile(r'^--8<-- "docs/examples/([^"]+)"$', re.M)
PROMETHEUS_PORT = 9464  # the port the Prometheus example documents


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), extra.get("PYTHONPATH", ""), os.environ.get("PYTHONPATH", "")) if p
    )
    # A reader's shell has none of these: the examples must not depend on them.
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_SERVICE_NAME"):
        if name not in extra:
            env.pop(name, None)
    env.pop("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None)
    return env


def run_example(name: str, **extra: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        env=_env(**extra),
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def json_documents(text: str) -> Iterator[dict[str, Any]]:
    """The JSON objects the console exporters print, one after the other."""
    decoder = json.JSONDecoder()
    at = 0
    while (start := text.find("{", at)) != -1:
        try:
            document, at = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            at = start + 1
            continue
        if isinstance(document, dict):
            yield document


def console_spans(stdout: str) -> list[dict[str, Any]]:
    return [doc for doc in json_documents(stdout) if "context" in doc and "name" in doc]


def console_points(stdout: str, metric: str) -> list[dict[str, Any]]:
    points: list[dict[str, Any]] = []
    for doc in json_documents(stdout):
        for resource in doc.get("resource_metrics", []):
            for scope in resource["scope_metrics"]:
                for found in scope["metrics"]:
                    if found["name"] == metric:
                        points.extend(found["data"]["data_points"])
    return points


def commented_output(name: str) -> list[str]:
    """What each ``print(...)  # comment`` line of an example says it prints."""
    return [
        line.split("# ", 1)[1].split("   (", 1)[0].split(": ", 1)[0].strip()
        for line in (EXAMPLES / name).read_text().splitlines()
        if line.startswith("print(")
    ]


# --- every example is run, and shown ------------------------------------------------------------


def test_every_example_is_run_by_a_test() -> None:
    """Each example is run here, or by the test module of the page that shows it (the framework
    and step-cap pages test their own examples), which names the file."""
    examples = {p.name for p in EXAMPLES.iterdir() if p.is_file()}
    elsewhere = {
        name
        for module in Path(__file__).resolve().parents[1].rglob("test_*.py")
        if module.name != Path(__file__).name
        for name in examples
        if name in module.read_text(encoding="utf-8")
    }
    assert set(RUNS) <= examples
    assert examples - set(RUNS) - elsewhere == set()


def test_every_example_is_on_a_docs_page_and_every_include_exists() -> None:
    included = {name for page in DOCS.rglob("*.md") for name in SNIPPET.findall(page.read_text())}
    assert included == set(RUNS)
    for name in included:
        assert (EXAMPLES / name).is_file(), name


# --- the examples -------------------------------------------------------------------------------


def check_symfonic_events() -> None:
    out = run_example("symfonic_events.py").stdout
    (run,) = [s for s in console_spans(out) if s["name"] == "invoke_agent support"]
    assert run["attributes"]["symfonic.react.termination_reason"] == "tool_calls_with_no_text"
    assert run["attributes"]["tenant.id"] == "acme"
    assert [e["name"] for e in run["events"]] == ["symfonic.react.loop_end"]
    (chat,) = [s for s in console_spans(out) if s["name"] == "chat gpt-4o-mini"]
    assert chat["parent_id"] == run["context"]["span_id"]
    bails = console_points(out, "symfonic.react.silent_bails")
    counted = {
        p["attributes"]["symfonic.react.termination_reason"]: p["value"]
        for p in bails
        if p["attributes"]["tenant.id"] == "acme" and p["value"]
    }
    assert counted == {"tool_calls_with_no_text": 1}


def check_react_agent() -> None:
    done = run_example("react_agent.py")
    # Unconfigured, the package prints nothing: only the example's own print() lines appear.
    assert [line.strip() for line in done.stdout.splitlines()] == commented_output("react_agent.py")
    assert done.stderr == ""


def check_langchain_agent() -> None:
    out = run_example("langchain_agent.py").stdout
    # The answer is where it is seen: the last line, after the console telemetry.
    assert out.splitlines()[-1] == "It is sunny in Paris."
    spans = {s["name"]: s for s in console_spans(out)}
    run = spans["invoke_agent support"]
    assert run["attributes"]["tenant.id"] == "acme"
    assert spans["execute_tool weather"]["context"]["trace_id"] == run["context"]["trace_id"]
    assert spans["chat scripted-chat"]["context"]["trace_id"] == run["context"]["trace_id"]
    runs = console_points(out, "symfonic.agent.runs")
    assert any(p["value"] == 1 and p["attributes"]["tenant.id"] == "acme" for p in runs)


def check_instrumentor_in_code() -> None:
    out = run_example("instrumentor_in_code.py").stdout
    assert "Hello!" in out.splitlines()
    # No callbacks were passed: the instrumentor recorded the run.
    assert [s["name"] for s in console_spans(out) if s["name"].startswith("invoke_agent")] == [
        "invoke_agent support"
    ]


def check_own_meter_provider() -> None:
    from symfonic_otel.emit.budget import required_cardinality_limit

    done = run_example("own_meter_provider.py")
    assert done.stdout.split() == commented_output("own_meter_provider.py")
    assert int(done.stdout) == required_cardinality_limit(max_tenants=500, handlers=2)
    assert done.stderr == ""  # sized right: no budget warning from either handler


def check_stdlib_logging() -> None:
    done = run_example("stdlib_logging.py")
    assert done.stdout.strip() == "'' no_content_no_tool_calls"
    (line,) = done.stderr.splitlines()
    assert line.startswith("INFO:symfonic_otel.agent:react: empty final_response on terminator ")
    assert "termination_reason=no_content_no_tool_calls" in line
    assert "Is sku-42" not in done.stderr  # no content in logs


def check_structlog_trace_context() -> None:
    (line,) = run_example("structlog_trace_context.py").stdout.splitlines()
    record = json.loads(line)
    assert record["event"] == "request handled"
    assert re.fullmatch(r"[0-9a-f]{32}", record["trace_id"]), record
    assert re.fullmatch(r"[0-9a-f]{16}", record["span_id"]), record


def check_prometheus_export() -> None:
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", PROMETHEUS_PORT)) == 0:
            pytest.skip(f"port {PROMETHEUS_PORT}, which the example documents, is in use")
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "prometheus_export.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=ROOT,
    )
    try:
        assert process.stdout is not None and process.stdin is not None
        assert process.stdout.readline().startswith("Serving http://127.0.0.1:9464/metrics")
        url = f"http://127.0.0.1:{PROMETHEUS_PORT}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            exposition = response.read().decode()
        assert re.search(
            r'^symfonic_agent_runs_total\{[^}]*symfonic_run_outcome="completed"[^}]*\} 1\.0$',
            exposition,
            flags=re.M,
        ), exposition
        process.stdin.write("\n")
        process.stdin.flush()
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.stderr is not None and process.stderr.read() == ""


def check_otlp_export() -> None:
    with GrpcOtlpReceiver() as receiver:
        started = time.monotonic()
        done = run_example(
            "otlp_export.py",
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
        )
        took = time.monotonic() - started
        assert receiver.wait_for(lambda r: bool(r.points()))
        (run,) = [s for s in receiver.spans() if s.name == "invoke_agent support"]
        assert run.resource["service.name"] == "support-agent"
        runs = [p for p in receiver.points() if p.name == "symfonic.agent.runs" and p.value]
        assert [p.attributes["symfonic.run.outcome"] for p in runs] == ["completed"]
    assert done.stderr == ""
    assert took < 30, took  # flushed at shutdown, not after the 60 s export interval


def check_trace_retention_own_provider() -> None:
    with GrpcOtlpReceiver() as receiver:
        done = run_example(
            "trace_retention_own_provider.py",
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
        )
        spans = receiver.spans()
    assert done.stdout.strip().splitlines() == commented_output("trace_retention_own_provider.py")
    runs = {s.trace_id: s.attributes["symfonic.run.id"] for s in spans if s.name.startswith("inv")}
    bailing = {f"run-{i}" for i in range(0, 200, 10)}
    assert bailing <= set(runs.values()) and len(runs) < 40  # every bail, a few healthy runs
    for trace_id in runs:  # each whole: the run span and its model call
        assert sorted(s.name for s in spans if s.trace_id == trace_id) == [
            "chat gpt-4o",
            "invoke_agent symfonic",
        ]
    assert done.stderr == ""


def check_instrumentor_command(configurator_path: str) -> None:
    if shutil.which("opentelemetry-instrument") is None:
        pytest.skip("opentelemetry-instrument is not installed")
    done = subprocess.run(
        ["bash", str(EXAMPLES / "instrumentor.sh")],
        capture_output=True,
        text=True,
        # The test extra also installs the peer LangChain instrumentations, which a reader
        # following the docs does not have; they register as ``langchain``.
        env=_env(PYTHONPATH=configurator_path, OTEL_PYTHON_DISABLED_INSTRUMENTATIONS="langchain"),
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "It is sunny in Paris." in done.stdout.splitlines()
    spans = console_spans(done.stdout)
    (run,) = [s for s in spans if s["name"].startswith("invoke_agent ")]
    assert "symfonic.run.id" in run["attributes"]  # ours
    assert run["resource"]["attributes"]["service.name"] == "support-agent"
    assert run["attributes"]["tenant.id"] == "acme"
    assert "execute_tool weather" in {s["name"] for s in spans}


RUNS: dict[str, Callable[..., None]] = {
    "symfonic_events.py": check_symfonic_events,
    "react_agent.py": check_react_agent,
    "langchain_agent.py": check_langchain_agent,
    "instrumentor_in_code.py": check_instrumentor_in_code,
    "own_meter_provider.py": check_own_meter_provider,
    "stdlib_logging.py": check_stdlib_logging,
    "structlog_trace_context.py": check_structlog_trace_context,
    "prometheus_export.py": check_prometheus_export,
    "otlp_export.py": check_otlp_export,
    "trace_retention_own_provider.py": check_trace_retention_own_provider,
    "instrumentor.sh": check_instrumentor_command,
    "instrumented_app.py": check_instrumentor_command,
}


@pytest.mark.parametrize("name", sorted(set(RUNS) - {"instrumented_app.py"}))
def test_example_runs_and_does_what_its_page_says(name: str, configurator: str) -> None:  # noqa: F811
    check = RUNS[name]
    if check is check_instrumentor_command:
        check(configurator)
    else:
        check()
