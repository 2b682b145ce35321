"""The suites: the Great Expectations suite files in ``expectations/`` (what operators read
and edit), found and read without importing Great Expectations, so that the invariant
catalogue, which lives in the shipped suites' ``meta.invariants``, can be read by any
command at the cost of reading a few JSON files."""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from audit.errors import ConfigError
from audit.fsutil import json_loads
from audit.paths import local_path


def shipped_expectations_dir() -> Path:
    """The suites that come with the package: the repository's top-level ``expectations/``
    (where operators read and edit them), which ``audit/expectations`` links to in a
    checkout and the wheel carries as package data under the same name."""
    return Path(str(resources.files("audit").joinpath("expectations")))


def expectations_dir(configured: str | None = None) -> tuple[Path, str]:
    """Where the suites are read from, and what named it (for error messages):
    ``validation.expectations_dir``, else ``$MIRROR_AUDIT_EXPECTATIONS``, else the
    shipped suites."""
    if configured:
        return Path(configured), "validation.expectations_dir"
    explicit = os.environ.get("MIRROR_AUDIT_EXPECTATIONS")
    if explicit:
        return local_path(explicit), "$MIRROR_AUDIT_EXPECTATIONS"
    return shipped_expectations_dir(), "the suites shipped with the package"


@dataclass(frozen=True)
class SuiteFile:
    name: str
    table: str
    path: Path
    raw: dict[str, Any]

    @property
    def invariants(self) -> frozenset[str]:
        """The invariant IDs its expectations name (each names one: ``load_suite_file``)."""
        return frozenset(e["meta"]["invariant"] for e in self.raw.get("expectations") or [])


def load_suite_file(path: Path) -> SuiteFile:
    try:
        raw = json_loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"expectation suite {path} cannot be read: {exc}") from exc
    table = (raw.get("meta") or {}).get("comparison_table")
    if not table:
        raise ConfigError(f"expectation suite {path}: meta.comparison_table is missing")
    for i, e in enumerate(raw.get("expectations", [])):
        meta = e.get("meta") or {}
        if not meta.get("invariant") or meta.get("severity") not in ("fail", "warn"):
            raise ConfigError(
                f"expectation suite {path}: expectations[{i}] needs meta.invariant "
                "and meta.severity (fail|warn)"
            )
    return SuiteFile(str(raw.get("name") or path.stem), str(table), path, raw)


def load_suites(
    directory: Path, patterns: tuple[str, ...], origin: str = "expectations directory"
) -> list[SuiteFile]:
    """The suites of ``directory`` whose file names match ``patterns`` (globs such as
    ``cm_*.json``), each once; ``origin`` says who named the directory, so a wrong one is
    fixed where it was set."""
    if not directory.is_dir():
        what = "does not exist" if not directory.exists() else "is not a directory"
        raise ConfigError(f"expectations directory {directory} ({origin}) {what}")
    paths = sorted({p for pattern in patterns for p in directory.glob(pattern)})
    return [load_suite_file(p) for p in paths]
