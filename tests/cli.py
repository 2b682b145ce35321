"""Running ``mirror-audit`` as a user does: a fresh process, its exit code and output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_cli(
    *args: str, timeout: float = 600, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "audit.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd,
        check=False,
    )


def submit_cli(master: str, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``mirror-audit`` submitted with spark-submit to ``master`` in client mode, as the
    docs/operations.md's "Running on a Spark cluster" does; executors on this environment's Python."""
    from audit.sandbox import spark_cluster
    from audit.sandbox.demo_cluster import submit_command

    return subprocess.run(
        submit_command(master, sys.executable, ["--verbose", *args]),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=spark_cluster.spark_env(),
        check=False,
    )


def run_in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``mirror-audit`` called in this process, on the suite's Spark session (no JVM
    started per call): for tests of what a command computes rather than of how it is
    started. Output is captured as ``run_cli`` captures it."""
    import contextlib
    import io

    from audit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return subprocess.CompletedProcess(["mirror-audit", *args], code, out.getvalue(), err.getvalue())
