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
