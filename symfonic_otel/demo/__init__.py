"""``symfonic-otel demo``: the reference loop over a realistic scenario mix, with a summary."""

from symfonic_otel.demo.runner import DemoError, DemoOptions, run_demo

__all__ = ["DemoError", "DemoOptions", "run_demo"]
