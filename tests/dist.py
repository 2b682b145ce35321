"""The project's distributions as the packaging tests build them once (the fixture is
tests/packaging/conftest.py's ``built``), and commands run as a user outside the checkout
runs them."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Built:
    sdist: Path
    wheel: Path


def run(cmd: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """A command as a user outside the checkout runs it: nothing of the checkout on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MIRROR_AUDIT_EXPECTATIONS")}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
