"""The demo's summary shows its looping tenant: the bailing tenant's loop cuts are looping runs."""

from __future__ import annotations

import subprocess
import sys


def test_the_summary_lists_looping_runs_per_tenant_with_globex_on_top() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "symfonic_otel.cli", "demo", "--runs", "120", "--seed", "11"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    table = result.stdout.split("Looping runs per tenant")[1].split("Fabrication detections")[0]
    rows = [
        [cell.strip() for cell in line.strip("│ ").split("│")]
        for line in table.splitlines()
        if line.startswith("│")
    ]
    looping = {row[0]: int(row[1]) for row in rows}
    assert looping["globex"] > 0
    assert max(looping, key=lambda name: looping[name]) == "globex"
    assert sum(v for k, v in looping.items() if k != "globex") < looping["globex"]
