"""The CLI's flags and the dashboards export, in process (``cli.main`` called directly, the demo
itself replaced where only its options matter): every user error exits 2 with one line on
stderr, the defaults are the documented ones, and ``--noisy none`` means no noisy tenant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import symfonic_otel.demo
from symfonic_otel import cli
from symfonic_otel.demo import DemoError, DemoOptions


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        cli.build_parser().parse_args(argv)
    assert exited.value.code == cli.EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    return captured.err


def test_seed_0_is_a_seed_and_a_negative_one_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.build_parser().parse_args(["demo", "--seed", "0"]).seed == 0
    assert "0 or more" in _refused(["demo", "--seed", "-1"], capsys)


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1", "x"])
def test_a_duration_that_is_no_positive_finite_number_is_refused(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "--duration" in _refused(["demo", "--duration", value], capsys)


def test_a_blank_export_directory_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert "empty path" in _refused(["dashboards", "export", "  "], capsys)


@pytest.mark.parametrize("item", ["acme=", "=errors", "acme", " = "])
def test_a_noisy_item_without_its_tenant_or_its_kind_is_refused(
    item: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "TENANT=KIND" in _refused(["demo", "--noisy", item], capsys)


def test_noisy_none_reads_with_spaces_around_it() -> None:
    assert cli.build_parser().parse_args(["demo", "--noisy", " none "]).noisy == [[]]


@pytest.fixture
def demo_options(monkeypatch: pytest.MonkeyPatch) -> list[DemoOptions]:
    """The options ``main`` hands the demo, which then does not run."""
    seen: list[DemoOptions] = []

    def run_demo(options: DemoOptions, *args: Any, **kwargs: Any) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(symfonic_otel.demo, "run_demo", run_demo)
    return seen


def test_the_demo_runs_240_runs_at_20_per_second_by_default(
    demo_options: list[DemoOptions],
) -> None:
    assert cli.main(["demo"]) == 0
    [options] = demo_options
    assert (options.runs, options.rate, options.duration_s) == (240, 20.0, None)
    assert options.noisy is None  # the default noisy tenant
    assert cli.main(["demo", "--duration", "2"]) == 0
    assert (demo_options[1].duration_s, demo_options[1].rate) == (2.0, 20.0)


def test_noisy_none_hands_the_demo_no_noisy_tenant(demo_options: list[DemoOptions]) -> None:
    assert cli.main(["demo", "--noisy", "none"]) == 0
    assert cli.main(["demo", "--noisy", "acme=errors", "--tenants", "acme,globex"]) == 0
    assert [options.noisy for options in demo_options] == [(), (("acme", "errors"),)]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["demo", "--runs", "3", "--duration", "2"], "--runs and --duration exclude each other"),
        (["demo", "--rate", "5"], "--rate needs --duration"),
        (["demo", "--noisy-for", "5"], "--noisy-for needs --duration"),
    ],
)
def test_flags_that_make_no_sense_together_exit_2_before_the_demo_runs(
    argv: list[str],
    words: str,
    demo_options: list[DemoOptions],
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(argv) == cli.EXIT_USAGE
    assert demo_options == []
    err = capsys.readouterr().err
    assert err.startswith("symfonic-otel demo: error: ") and words in err
    assert err.count("\n") == 1


def test_a_demo_that_cannot_start_exits_2_with_its_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def run_demo(options: DemoOptions, *args: Any, **kwargs: Any) -> int:
        raise DemoError("port 9464 is already in use")

    monkeypatch.setattr(symfonic_otel.demo, "run_demo", run_demo)
    assert cli.main(["demo", "--runs", "1"]) == cli.EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.err == "symfonic-otel demo: error: port 9464 is already in use\n"
    assert captured.out == ""


def test_an_export_over_existing_files_without_force_exits_2_and_says_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out"
    assert cli.main(["dashboards", "export", str(target)]) == 0
    capsys.readouterr()
    assert cli.main(["dashboards", "export", str(target)]) == cli.EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("symfonic-otel dashboards export: error: ")
    assert captured.err.rstrip("\n").endswith("; pass --force to overwrite them")


def test_an_export_under_a_file_exits_2_naming_the_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "afile").write_text("")
    target = tmp_path / "afile" / "sub"
    assert cli.main(["dashboards", "export", str(target)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"symfonic-otel dashboards export: error: cannot write {target}")


def test_a_forced_export_counts_only_the_files_it_overwrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out"
    assert cli.main(["dashboards", "export", str(target)]) == 0
    first = capsys.readouterr()
    written = first.out.splitlines()
    assert "overwritten" not in first.err
    (target / "mine.txt").write_text("the user's own file")
    assert cli.main(["dashboards", "export", str(target), "--force"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == written
    assert f"Wrote {len(written)} files under {target} ({len(written)} overwritten)." in (
        captured.err
    )
