"""``symfonic-otel``: ``demo`` (the main job) and ``dashboards export DIR``.

Every user error is one line on stderr and exit status 2; bare ``symfonic-otel`` (or
``symfonic-otel dashboards``) prints its help on stderr and exits 2, since no command ran.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from symfonic_otel._version import __version__

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # SIGINT (Ctrl-C): 128 + 2
EXIT_TERMINATED = 143  # SIGTERM (docker stop, Kubernetes): 128 + 15
DEFAULT_RUNS = 240
DEFAULT_RATE = 20.0


def _whole_number(text: str, minimum: int, rule: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be {rule}, got {value}")
    return value


def _positive_int(text: str) -> int:
    return _whole_number(text, 1, "at least 1")


def _seed(text: str) -> int:
    """0 or more: the seed names the runs (``demo-7-000001``), which a sign would garble."""
    return _whole_number(text, 0, "0 or more")


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port in 0..65535, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _directory(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a directory, got an empty path")
    return text


def _url_option(parser: argparse.ArgumentParser, flag: str, help_text: str) -> None:
    """An optional ``URL`` flag whose value ``_url`` checks (an error names the flag)."""
    parser.add_argument(flag, type=_url(flag), default=None, metavar="URL", help=help_text)


def _url(option: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        from symfonic_otel.dashboards import base_url

        try:
            return base_url(text, option)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an absolute http(s) URL without query or fragment "
                f"(e.g. https://grafana.example.com), got {text!r}"
            ) from None

    return parse


def _tenants(text: str) -> int | tuple[str, ...]:
    """A count (``5``) or comma-separated names (``acme,globex``)."""
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError:
        if text.strip().lstrip("+-").isdigit():
            raise
    names = tuple(name.strip() for name in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected a count or comma-separated names, got {text!r}")
    return names


def _noisy(text: str) -> list[tuple[str, str]]:
    """``TENANT=KIND[,TENANT=KIND...]``, or ``none``: checked against the tenants later."""
    if text.strip() == "none":
        return []
    pairs = []
    for item in text.split(","):
        tenant, sep, kind = (part.strip() for part in item.partition("="))
        if not sep or not tenant or not kind:
            raise argparse.ArgumentTypeError(f"expected TENANT=KIND or none, got {item.strip()!r}")
        pairs.append((tenant, kind))
    return pairs


class _Parser(argparse.ArgumentParser):
    """Bad options: one clear line on stderr and exit code 2 (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="symfonic-otel",
        description="OpenTelemetry for LLM agents: demo and dashboards.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)

    demo = commands.add_parser(
        "demo",
        help="run the reference loop with scripted models and print the telemetry summary",
        description="Run the reference ReAct loop with scripted models over several tenants "
        "and print what the telemetry shows. Needs no server.",
    )
    demo.add_argument(
        "--runs",
        type=_positive_int,
        default=None,
        help=f"how many runs (default {DEFAULT_RUNS}); not with --duration",
    )
    demo.add_argument(
        "--tenants",
        type=_tenants,
        default=5,
        metavar="N|NAME,...",
        help="how many tenants, or their names (default 5)",
    )
    demo.add_argument(
        "--seed", type=_seed, default=7, help="same seed, same output (0 or more; default 7)"
    )
    demo.add_argument(
        "--prometheus-port",
        type=_port,
        default=None,
        metavar="PORT",
        help="serve /metrics on 127.0.0.1:PORT (0 picks a free port)",
    )
    demo.add_argument(
        "--duration",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="keep producing traffic at a steady rate for this long (instead of --runs)",
    )
    demo.add_argument(
        "--rate",
        type=_positive_float,
        default=None,
        help=f"runs per second, with --duration only (default {DEFAULT_RATE:g})",
    )
    demo.add_argument(
        "--noisy",
        type=_noisy,
        action="append",
        default=None,
        metavar="TENANT=KIND",
        help="make a tenant misbehave: KIND is silent_bail, errors or truncation (repeatable; "
        "'none': no noisy tenant; default: globex=silent_bail)",
    )
    demo.add_argument(
        "--noisy-for",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="with --duration: noisy tenants turn ordinary after this long",
    )
    demo.add_argument(
        "--faults",
        action="store_true",
        help="also simulate workers that die mid-run (orphaned runs) and retried end events "
        "(dropped events), which fire the telemetry-health alerts",
    )
    demo.add_argument(
        "--otlp",
        action="store_true",
        help="also export over OTLP, configured by the standard OTEL_EXPORTER_OTLP_* variables",
    )

    dashboards = commands.add_parser("dashboards", help="Grafana dashboards and Prometheus rules")
    actions = dashboards.add_subparsers(dest="action", parser_class=_Parser)
    export = actions.add_parser(
        "export",
        help="write the dashboards and rule files to DIR",
        description="Write the Grafana dashboards, Prometheus rules and examples to DIR "
        "(created if needed) and list the files written. Existing files are never "
        "overwritten without --force.",
    )
    export.add_argument("directory", type=_directory, metavar="DIR")
    export.add_argument("--force", action="store_true", help="overwrite files that exist")
    _url_option(
        export,
        "--runbook-base-url",
        "where the runbooks are served (the exported folder on your git host, or the docs "
        "site): every alert's runbook_url becomes URL/runbooks/<alert>/",
    )
    _url_option(
        export,
        "--grafana-url",
        "your Grafana: every alert's dashboard_url becomes the overview dashboard there, "
        "with the alert's tenant selected",
    )
    export.add_argument(
        "--traces",
        choices=("tempo", "jaeger"),
        default="tempo",
        help="the trace store Grafana is provisioned with, which exemplars open (default tempo)",
    )
    parser.set_defaults(help_of=parser)
    dashboards.set_defaults(help_of=dashboards)
    return parser


def _demo_flags_error(args: argparse.Namespace) -> str | None:
    """Flags that argparse accepts one by one but that make no sense together."""
    if args.duration is not None and args.runs is not None:
        return "--runs and --duration exclude each other: --runs counts runs, --duration times them"
    if args.rate is not None and args.duration is None:
        return "--rate needs --duration (it paces the timed traffic; --runs runs flat out)"
    if args.runs is None:
        args.runs = DEFAULT_RUNS
    if args.rate is None:
        args.rate = DEFAULT_RATE
    return None


def _usage_error(prog: str, message: str) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command is None or (args.command == "dashboards" and args.action is None):
        args.help_of.print_help(sys.stderr)  # no command ran: usage, and the exit status says so
        return EXIT_USAGE
    if args.command == "demo":
        problem = _demo_flags_error(args)
        if problem is not None:
            return _usage_error("symfonic-otel demo", problem)
        try:
            from symfonic_otel.demo import DemoError, DemoOptions, run_demo
        except KeyboardInterrupt:  # Ctrl-C while the demo's modules load: nothing to flush yet
            print("symfonic-otel: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED

        noisy = None if args.noisy is None else tuple(p for pairs in args.noisy for p in pairs)
        if args.noisy is not None and [] in args.noisy and noisy:
            return _usage_error("symfonic-otel demo", "--noisy none cannot be combined")
        try:
            options = DemoOptions(
                runs=args.runs,
                tenants=args.tenants,
                seed=args.seed,
                prometheus_port=args.prometheus_port,
                duration_s=args.duration,
                rate=args.rate,
                otlp=args.otlp,
                noisy=noisy,
                noisy_for_s=args.noisy_for,
                faults=args.faults,
            )
        except ValueError as exc:  # a flag's value that only makes sense with the others
            return _usage_error("symfonic-otel demo", str(exc))
        terminated = False

        def on_sigterm(signum: int, frame: FrameType | None) -> None:
            # SIGTERM takes Ctrl-C's path: partial summary, bounded flush; then 143, not 130.
            # Through SIGINT's own handler: inside asyncio.run that cancels the main task, where
            # a KeyboardInterrupt raised here would land in whichever task runs and be logged
            # with its traceback at the loop's close. A shell starts background jobs with SIGINT
            # ignored (`demo &` in an entrypoint, nohup): SIGTERM must still stop the demo then.
            nonlocal terminated
            terminated = True
            interrupt = signal.getsignal(signal.SIGINT)
            if not callable(interrupt):
                raise KeyboardInterrupt
            interrupt(signal.SIGINT, frame)

        previous = signal.signal(signal.SIGTERM, on_sigterm)
        try:
            code = run_demo(options)
        except DemoError as exc:
            return _usage_error("symfonic-otel demo", str(exc))
        finally:
            signal.signal(signal.SIGTERM, previous)
        return EXIT_TERMINATED if terminated and code == EXIT_INTERRUPTED else code
    return _export(
        args.directory,
        force=args.force,
        runbook_base_url=args.runbook_base_url,
        grafana_url=args.grafana_url,
        traces=args.traces,
    )


def _export(
    directory: str,
    *,
    force: bool,
    runbook_base_url: str | None,
    grafana_url: str | None,
    traces: str,
) -> int:
    from symfonic_otel.dashboards import export as export_dashboards

    prog = "symfonic-otel dashboards export"
    target = Path(directory)
    existed = {p for p in target.rglob("*") if p.is_file()} if target.is_dir() else set()
    try:
        written = export_dashboards(
            target,
            force=force,
            runbook_base_url=runbook_base_url,
            grafana_url=grafana_url,
            traces=traces,
        )
    except FileExistsError as exc:
        return _usage_error(prog, f"{exc}; pass --force to overwrite them")
    except OSError as exc:
        if exc.filename is None:
            return _usage_error(prog, str(exc))
        return _usage_error(prog, f"cannot write {exc.filename}: {exc.strerror or exc}")
    for path in written:
        print(path)
    overwritten = sum(1 for path in written if path in existed)
    note = f" ({overwritten} overwritten)" if overwritten else ""
    print(f"Wrote {len(written)} files under {target}{note}.", file=sys.stderr)
    if (target / "runbooks").is_dir():
        print(
            f"Runbooks: {target / 'runbooks'}/<alert>/README.md, where each alert's runbook_url "
            "points; runbook_base_url in prometheus/prometheus.yml says where you serve "
            "this folder (README.md says how).",
            file=sys.stderr,
        )
    config = target / "prometheus" / "prometheus.yml"
    print(
        f"Prometheus: prometheus --config.file={config} --enable-feature=exemplar-storage "
        "(exemplars, the way from a panel to a run's trace, are kept only with that flag).",
        file=sys.stderr,
    )
    for problem in _relative_links(runbook_base_url, grafana_url):
        print(f"{prog}: WARNING: {problem}", file=sys.stderr)
    return 0


def _relative_links(runbook_base_url: str | None, grafana_url: str | None) -> list[str]:
    """What an on-call cannot open when the export was given no base URL."""
    problems = []
    if runbook_base_url is None:
        problems.append(
            "no --runbook-base-url: every alert's runbook_url is the relative path "
            "runbooks/<alert>/, which a pager or chat message cannot open. Export again with "
            "--runbook-base-url URL (where you serve this folder or the docs site)."
        )
    if grafana_url is None:
        problems.append(
            "no --grafana-url: every alert's dashboard_url is the relative path "
            "d/symfonic-agent-overview/...?var-tenant=<tenant>, which a pager or chat message "
            "cannot open. Export again with --grafana-url URL (your Grafana's address)."
        )
    return problems


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
