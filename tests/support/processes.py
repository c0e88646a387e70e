"""Running a command to its end with its output captured as text: the one way the tests start
a child process, so each test says only what it runs and what it expects of it."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def run_text(
    args: Sequence[str | Path],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """The finished run, whatever its exit code (the caller asserts on it)."""
    return subprocess.run(
        [str(arg) for arg in args],
        capture_output=True,
        text=True,
        env=None if env is None else dict(env),
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def run_ok(args: Sequence[str | Path], **options: Any) -> subprocess.CompletedProcess[str]:
    """The finished run (``run_text``'s options), asserted to exit 0 (its stderr is the failure
    message)."""
    done = run_text(args, **options)
    assert done.returncode == 0, done.stderr
    return done
