"""``symfonic-otel``: ``demo`` (the main job) and ``dashboards export DIR``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_USAGE = 2


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


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


class _Parser(argparse.ArgumentParser):
    """Bad options: one clear line on stderr and exit code 2 (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="symfonic-otel",
        description="OpenTelemetry for LLM agents: demo and dashboards.",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    demo = commands.add_parser(
        "demo",
        help="run the reference loop with scripted models and print the telemetry summary",
        description="Run the reference ReAct loop with scripted models over several tenants "
        "and print what the telemetry shows. Needs no server.",
    )
    demo.add_argument("--runs", type=_positive_int, default=240, help="runs (default 240)")
    demo.add_argument("--tenants", type=_positive_int, default=5, help="tenants (default 5)")
    demo.add_argument("--seed", type=int, default=7, help="same seed, same output (default 7)")
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
        "--rate", type=_positive_float, default=20.0, help="runs per second with --duration"
    )
    demo.add_argument(
        "--otlp",
        action="store_true",
        help="also export over OTLP, configured by the standard OTEL_EXPORTER_OTLP_* variables",
    )

    dashboards = commands.add_parser("dashboards", help="Grafana dashboards and Prometheus rules")
    actions = dashboards.add_subparsers(dest="action", required=True, parser_class=_Parser)
    export = actions.add_parser("export", help="write the dashboards and rule files to DIR")
    export.add_argument("directory", type=Path, metavar="DIR")
    return parser


def _quiet_logs() -> None:
    """The demo's silent bails are the point, but not as one INFO line each on the terminal."""
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        try:
            from symfonic_otel.demo import DemoOptions, run_demo
        except KeyboardInterrupt:  # Ctrl-C while the demo's modules load: nothing to flush yet
            print("symfonic-otel: interrupted", file=sys.stderr)
            return 130

        _quiet_logs()
        if args.tenants > 1000:
            print("symfonic-otel: error: --tenants must be at most 1000", file=sys.stderr)
            return EXIT_USAGE
        options = DemoOptions(
            runs=args.runs,
            tenants=args.tenants,
            seed=args.seed,
            prometheus_port=args.prometheus_port,
            duration_s=args.duration,
            rate=args.rate,
            otlp=args.otlp,
        )
        return run_demo(options)
    from symfonic_otel.dashboards import export as export_dashboards

    written = export_dashboards(args.directory)
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
