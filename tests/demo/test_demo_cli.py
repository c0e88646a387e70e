"""`symfonic-otel demo` and `dashboards export`: the operator's first commands."""

from __future__ import annotations

import os
import re
import resource
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from symfonic_otel.cli import main
from symfonic_otel.dashboards import bundled_files
from symfonic_otel.demo.report import histogram_quantile

DEMO = [sys.executable, "-m", "symfonic_otel", "demo"]


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*DEMO, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def _row(output: str, first_cell: str) -> list[str]:
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip("│ ").split("│")]
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row {first_cell!r} in:\n{output}")


def _without_measured_latencies(output: str) -> str:
    """LLM latencies are measured wall-clock times: under heavy load a call can land in the next
    bucket. Everything else the demo prints is a function of the seed alone."""
    return "\n".join(line for line in output.splitlines() if " ms " not in line)


def test_demo_prints_the_summary_and_same_seed_gives_same_output() -> None:
    first = _run("--runs", "120", "--seed", "11")
    second = _run("--runs", "120", "--seed", "11")
    assert first.returncode == 0, first.stderr[-2000:]
    assert _without_measured_latencies(first.stdout) == _without_measured_latencies(second.stdout)
    assert first.stdout.count(" ms ") == second.stdout.count(" ms ") >= 6
    out = first.stdout
    for title in (
        "Runs by outcome",
        "Silent bails per tenant",
        "Synthesis fallbacks",
        "Fabrication detections",
        "LLM latency per node",
        "How to read these counts:",
        "One run's trace (a loop cut handed to the synthesis fallback, run demo-11-",
    ):
        assert title in out
    # 120 loop runs; no worker dies without --faults, so no run is closed as abandoned.
    total = int(_row(out, "all")[1])
    assert total == 120
    assert not any(line.strip("│ ").startswith("abandoned") for line in out.splitlines())
    # The noisy tenant tops the silent-bail table with a rate far above everyone else's.
    tenants = [line for line in out.splitlines() if "%" in line and "│" in line]
    table = out.split("Silent bails per tenant")[1].split("Synthesis fallbacks")[0]
    rates = {
        cells[0]: float(cells[3].rstrip(" %"))
        for cells in (
            [c.strip() for c in line.strip("│ ").split("│")]
            for line in table.splitlines()
            if "%" in line
        )
    }
    assert tenants
    assert max(rates, key=lambda name: rates[name]) == "globex"
    assert rates["globex"] > 3 * max(v for k, v in rates.items() if k != "globex")
    assert re.search(r"react\s+│\s+\d+\s+│\s+\d+ ms\s+│\s+\d+ ms", out)
    assert "invoke_agent support" in out and "react_synthesize_fallback" in out


def test_a_different_seed_gives_different_traffic() -> None:
    assert _run("--runs", "60", "--seed", "1").stdout != _run("--runs", "60", "--seed", "2").stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--runs", "0"], "--runs"),
        (["--runs", "many"], "--runs"),
        (["--tenants", "-3"], "--tenants"),
        (["--prometheus-port", "70000"], "--prometheus-port"),
        (["--duration", "-5"], "--duration"),
        (["--duration", "soon"], "--duration"),
        (["--rate", "0"], "--rate"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_bad_option_values_get_one_line_and_exit_code_2(args: list[str], message: str) -> None:
    result = _run(*args, timeout=30)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert message in lines[0]
    assert result.stdout == ""


def test_dashboards_export_writes_every_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dashboards", "export", str(tmp_path / "out")]) == 0
    written = {
        Path(line).relative_to(tmp_path / "out").as_posix()
        for line in capsys.readouterr().out.split()
    }
    for expected in (
        "symfonic-agent-overview.json",
        "symfonic-fabrication.json",
        "prometheus/symfonic-rules.yml",
        "prometheus/symfonic-rules.test.yml",
        "prometheus/prometheus.yml",
        "prometheus/prometheus-collector.yml",
        "collector/otel-collector.yaml",
        "victoriametrics/vmagent.yml",
        "victoriametrics/vmalert.env",
    ):
        assert expected in written
        assert (tmp_path / "out" / expected).stat().st_size > 0


def test_histogram_quantile_interpolates_like_prometheus() -> None:
    bounds = (0.1, 0.2, 0.4)
    counts = [10, 30, 60, 0]  # last: +Inf
    assert histogram_quantile(0.5, bounds, counts) == pytest.approx(0.2 + 0.2 * (50 - 40) / 60)
    assert histogram_quantile(0.05, bounds, counts) == pytest.approx(0.05)
    assert histogram_quantile(0.99, bounds, [0, 0, 0, 5]) == 0.4  # +Inf bucket: highest bound


# --- nothing surprises: each case as a user meets it, in a subprocess --------------------------

CLI = [sys.executable, "-m", "symfonic_otel"]


def _cli(
    *args: str, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd
    )


def _one_line_error(result: subprocess.CompletedProcess[str], *expected: str) -> str:
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for text in expected:
        assert text in lines[0]
    return lines[0]


def test_version_prints_the_package_version() -> None:
    from symfonic_otel import __version__

    result = _cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"symfonic-otel {__version__}"


@pytest.mark.parametrize(
    ("args", "usage", "lists"),
    [
        ((), "usage: symfonic-otel [-h] [--version] {demo,dashboards}", ("demo", "dashboards")),
        (("dashboards",), "usage: symfonic-otel dashboards [-h] {export}", ("export",)),
    ],
)
def test_no_command_prints_the_help_and_exits_2(
    args: tuple[str, ...], usage: str, lists: tuple[str, ...]
) -> None:
    result = _cli(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(usage)
    for command in lists:
        assert re.search(rf"^\s+{command}\s", result.stderr, flags=re.M), result.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--rate", "5"], "--rate needs --duration"),
        (["--runs", "10", "--rate", "5"], "--rate needs --duration"),
        (["--runs", "10", "--duration", "5"], "--runs and --duration exclude each other"),
    ],
)
def test_flags_that_would_be_ignored_are_errors(args: list[str], named: str) -> None:
    _one_line_error(_cli("demo", *args), "symfonic-otel demo: error:", named)


def test_a_busy_prometheus_port_is_one_line_and_exit_2() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = _cli("demo", "--runs", "1", "--prometheus-port", str(port))
    _one_line_error(result, f"--prometheus-port {port}", "in use")


def test_export_refuses_to_overwrite_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("my notes\n")
    (tmp_path / "prometheus").mkdir()
    (tmp_path / "prometheus" / "symfonic-rules.yml").write_text("# tuned\n")
    line = _one_line_error(
        _cli("dashboards", "export", str(tmp_path)),
        "2 of the",
        "README.md, prometheus/symfonic-rules.yml",
        "--force",
    )
    assert "nothing was written" in line
    assert (tmp_path / "README.md").read_text() == "my notes\n"
    assert (tmp_path / "prometheus" / "symfonic-rules.yml").read_text() == "# tuned\n"
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [
        "README.md",
        "symfonic-rules.yml",
    ]


def test_export_with_force_overwrites_and_lists_what_it_wrote(tmp_path: Path) -> None:
    from symfonic_otel.dashboards import bundled_files

    (tmp_path / "README.md").write_text("my notes\n")
    result = _cli("dashboards", "export", str(tmp_path), "--force")
    assert result.returncode == 0, result.stderr
    listed = [Path(line).relative_to(tmp_path).as_posix() for line in result.stdout.splitlines()]
    assert listed == bundled_files()
    wrote, runbooks, prometheus, *warnings = result.stderr.strip().splitlines()
    assert wrote == f"Wrote {len(listed)} files under {tmp_path} (1 overwritten)."
    assert runbooks.startswith(f"Runbooks: {tmp_path / 'runbooks'}/<alert>/README.md")
    assert "runbook_base_url" in runbooks
    assert "--enable-feature=exemplar-storage" in prometheus
    assert len(warnings) == 2  # no base URLs given (tests/dashboards/test_export_links.py)
    assert (tmp_path / "README.md").read_text() != "my notes\n"


def _small_disk() -> None:
    """In the child: files can grow to 8 KB only, as on a disk that fills up mid-export (a
    bigger write fails with EFBIG; Python ignores SIGXFSZ, so it is an OSError)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))


@pytest.mark.parametrize("existing", [False, True], ids=["new folder", "existing folder"])
def test_export_on_a_full_disk_names_the_file_and_leaves_nothing_so_the_next_run_works(
    tmp_path: Path, existing: bool
) -> None:
    out = tmp_path / "out"
    if existing:
        out.mkdir()
        (out / "notes.txt").write_text("mine\n")
    failed = subprocess.run(
        [*CLI, "dashboards", "export", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=_small_disk,
    )
    line = _one_line_error(failed, f"cannot write {out}/", "nothing was written")
    assert re.search(r"cannot write \S+\.(json|yml): ", line), line  # a file over 8 KB
    left = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert left == (["out", "out/notes.txt"] if existing else []), left
    again = _cli("dashboards", "export", str(out))
    assert again.returncode == 0, again.stderr
    assert len(again.stdout.splitlines()) == len(bundled_files())


def test_export_to_an_empty_path_is_an_error(tmp_path: Path) -> None:
    _one_line_error(_cli("dashboards", "export", "", cwd=tmp_path), "DIR", "empty")
    _one_line_error(_cli("dashboards", "export", "  ", cwd=tmp_path), "DIR", "empty")
    assert list(tmp_path.iterdir()) == []  # nothing landed in the current directory


def test_export_to_a_file_or_below_one_is_one_line_and_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("x")
    _one_line_error(_cli("dashboards", "export", str(blocker)), str(blocker), "not a directory")
    _one_line_error(
        _cli("dashboards", "export", str(blocker / "sub")), f"cannot write {blocker / 'sub'}"
    )
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "prometheus").write_text("a file where a folder goes")
    _one_line_error(
        _cli("dashboards", "export", str(tmp_path / "out")), "prometheus", "not a directory"
    )
    assert blocker.read_text() == "x"


def test_the_demo_explains_its_counts_with_the_tables_figures() -> None:
    result = _run("--runs", "240", "--faults")  # lost workers: the case that needs saying
    assert result.returncode == 0, result.stderr[-2000:]
    out = " ".join(result.stdout.split())  # notes are wrapped at the console width
    health = re.search(r"orphaned runs closed as abandoned: (\d+), dropped [a-z_]+: (\d+)", out)
    assert health and int(health.group(1)) > 0 and int(health.group(2)) > 0, out
    total = int(_row(result.stdout, "all")[1])
    abandoned = int(_row(result.stdout, "abandoned")[1])
    empty = int(re.findall(r"of these, (\d+) \(", out)[0])
    assert total > 240  # the case that needs saying
    assert f'"all" = 240 agent runs (--runs) + {abandoned} runs whose worker died mid-run' in out
    assert "The 40 warm-up runs before the traffic send no telemetry and are not counted." in out
    bails = out.split("Silent bails (")[1].split(")")[0]
    table_bails = sum(int(cells[2]) for cells in _tenant_rows(result.stdout))
    assert int(bails) == table_bails
    match = re.search(r"answer is blank: (\d+) completed runs?[^+.]*(?:\+ (\d+) errored)?", out)
    assert match, out
    assert int(match.group(1)) + int(match.group(2) or 0) == empty


def _tenant_rows(output: str) -> list[list[str]]:
    table = output.split("Silent bails per tenant")[1].split("Synthesis fallbacks")[0]
    return [
        [c.strip() for c in line.strip("│ ").split("│")]
        for line in table.splitlines()
        if "%" in line and "│" in line
    ]


def test_a_short_demo_still_shows_a_trace_and_says_which() -> None:
    result = _run("--runs", "3", "--seed", "7")
    assert result.returncode == 0, result.stderr[-2000:]
    assert re.search(
        r"One run's trace \((the first run|a silent bail), [a-z ]+, run demo-7-", result.stdout
    )
    assert "invoke_agent support" in result.stdout


def test_the_empty_count_is_a_note_under_the_outcomes_not_an_outcome_row() -> None:
    result = _run("--runs", "240")
    assert result.returncode == 0, result.stderr[-2000:]
    outcomes = result.stdout.split("Runs by outcome")[1].split("Silent bails per tenant")[0]
    with pytest.raises(AssertionError):
        _row(outcomes, "empty final response")
    out = " ".join(result.stdout.split())
    assert re.search(r"of these, \d+ \(\d+\.\d %\) ended with an empty answer", out)
    # The notes name only the outcomes that occurred, each by its own name.
    errored = int(_row(outcomes, "error")[1])
    cancelled = _row(outcomes, "cancelled")[1] if "cancelled" in outcomes else "0"
    note = out.split("How to read these counts:")[1]
    if errored == 0:
        assert "errored run" not in note.split("+")[0]
    if int(cancelled):
        assert f"the {cancelled} cancelled run" in note
    assert ") (" not in note  # one parenthesis of details, not two in a row


def test_a_negative_seed_is_refused_in_one_line() -> None:
    _one_line_error(_cli("demo", "--seed", "-1"), "--seed", "must be 0 or more")


def test_serving_prometheus_for_a_count_of_runs_says_how_to_keep_serving() -> None:
    result = _run("--runs", "3", "--prometheus-port", "0")
    assert result.returncode == 0, result.stderr[-2000:]
    err = " ".join(result.stderr.split())
    assert "Only while the runs last" in err and "--duration SECONDS" in err
    timed = _run("--duration", "0.5", "--prometheus-port", "0")
    assert "Only while the runs last" not in timed.stderr


def test_the_sample_trace_is_titled_by_how_its_run_ended() -> None:
    """After Ctrl-C the planned sample may have been cancelled: another finished candidate is
    shown, or the cancelled one under a title that says so, never the plan's title."""
    from opentelemetry.sdk.trace import TracerProvider

    from symfonic_otel import semconv
    from symfonic_otel.demo.report import RunSpanSampler

    sampler = RunSpanSampler()
    sampler.candidates = {
        "r1": "a loop cut handed to the synthesis fallback",
        "r2": "a silent bail",
    }
    provider = TracerProvider()
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider.add_span_processor(SimpleSpanProcessor(sampler))
    tracer = provider.get_tracer("t")

    def run(run_id: str, outcome: str) -> None:
        attributes = {semconv.RUN_ID: run_id, semconv.RUN_OUTCOME: outcome}
        with tracer.start_as_current_span("invoke_agent support", attributes=attributes):
            pass

    run("r1", "cancelled")
    best = sampler.best()
    assert best is not None and best[0] == "r1"
    assert best[1] == "a run that ended cancelled before it finished"
    run("r2", "completed")
    best = sampler.best()
    assert best is not None and best[:2] == ("r2", "a silent bail")
    provider.shutdown()


def _docs_default_rate() -> float:
    page = Path(__file__).resolve().parents[2] / "docs" / "guides" / "demo.md"
    text = " ".join(page.read_text().split())
    match = re.search(
        r"in the default run \(`symfonic-otel demo`[^)]*\) ([\d.]+) % of its runs", text
    )
    assert match, "the demo page gives no default-run figure"
    return float(match.group(1))


def test_the_default_run_explains_first_orders_its_trace_and_ends_with_the_next_step() -> None:
    result = _run()
    assert result.returncode == 0, result.stderr[-2000:]
    err = " ".join(result.stderr.split())
    # An explanation comes before anything else, then the noisy tenant and why it is there.
    assert err.startswith("symfonic-otel demo: 240 runs of the reference ReAct agent")
    assert err.index("recorded with OpenTelemetry") < err.index("Noisy tenants: globex")
    # The demo page's figure is this run's.
    rates = {cells[0]: float(cells[3].rstrip(" %")) for cells in _tenant_rows(result.stdout)}
    assert rates["globex"] == _docs_default_rate()
    # "empty" names one thing per place: the bail column and the answers are told apart.
    assert "empty completion" in result.stdout and "empty_answer=" in result.stdout
    assert not re.search(r"\bempty=", result.stdout)
    # The loop's end comes after the calls that led to it, before the fallback's call.
    tree = result.stdout.split("One run's trace (")[1].split("Next:")[0].splitlines()
    at = next(i for i, line in enumerate(tree) if "symfonic.react.loop_end" in line)
    assert any("node=react " in line for line in tree[:at])
    assert not any("node=react " in line for line in tree[at:])
    assert any("react_synthesize_fallback" in line for line in tree[at:])
    # It ends with the next step.
    tail = " ".join(result.stdout.split("Next:")[1].split())
    assert "--prometheus-port" in tail and "operator guide" in tail


def test_a_count_of_one_tenant_keeps_the_noisy_tenant() -> None:
    result = _run("--tenants", "1", "--runs", "5")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Noisy tenants: globex (silent_bail)" in " ".join(result.stderr.split())
    assert [cells[0] for cells in _tenant_rows(result.stdout)] == ["globex"]


def test_named_tenants_without_the_noisy_one_say_there_is_none() -> None:
    result = _run("--tenants", "acme,hooli", "--runs", "5")
    assert result.returncode == 0, result.stderr[-2000:]
    err = " ".join(result.stderr.split())
    assert "Noisy tenants: none: globex is not among --tenants" in err


def test_the_otlp_endpoints_named_are_the_sdks_without_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from symfonic_otel.demo.flush import otlp_endpoints

    for name in list(os.environ):
        if name.startswith("OTEL_EXPORTER_OTLP"):
            monkeypatch.delenv(name)
    assert otlp_endpoints() == (["http://localhost:4317"], False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    assert otlp_endpoints() == (
        ["http://localhost:4318/v1/traces", "http://localhost:4318/v1/metrics"],
        False,
    )
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://user:secret@otel.example:4318/")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://metrics.example/in")
    endpoints, configured = otlp_endpoints()
    assert endpoints == ["https://otel.example:4318/v1/traces", "https://metrics.example/in"]
    assert configured and "secret" not in repr(endpoints)


def test_a_signals_own_otlp_protocol_outranks_the_general_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As in the SDK, ``OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL`` wins over the general variable,
    so the endpoint the demo names is the one that signal's exporter really dials."""
    from symfonic_otel.demo.flush import otlp_endpoints

    for name in list(os.environ):
        if name.startswith("OTEL_EXPORTER_OTLP"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
    assert otlp_endpoints() == (
        ["http://localhost:4318/v1/traces", "http://localhost:4317"],
        False,
    )
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    assert otlp_endpoints() == (
        ["http://collector:4318", "http://collector:4318/v1/metrics"],
        True,
    )
