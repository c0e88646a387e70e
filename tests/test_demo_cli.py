"""`symfonic-otel demo` and `dashboards export`: the operator's first commands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from symfonic_otel.cli import main
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
        "One run's trace:",
    ):
        assert title in out
    # 120 loop runs plus the runs of "crashed workers", closed as abandoned at shutdown.
    total = int(_row(out, "all")[1])
    abandoned = int(_row(out, "abandoned")[1]) if "abandoned" in out else 0
    assert total == 120 + abandoned
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
        "collector/otel-collector.yaml",
    ):
        assert expected in written
        assert (tmp_path / "out" / expected).stat().st_size > 0


def test_histogram_quantile_interpolates_like_prometheus() -> None:
    bounds = (0.1, 0.2, 0.4)
    counts = [10, 30, 60, 0]  # last: +Inf
    assert histogram_quantile(0.5, bounds, counts) == pytest.approx(0.2 + 0.2 * (50 - 40) / 60)
    assert histogram_quantile(0.05, bounds, counts) == pytest.approx(0.05)
    assert histogram_quantile(0.99, bounds, [0, 0, 0, 5]) == 0.4  # +Inf bucket: highest bound
