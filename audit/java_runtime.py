"""The local Java runtime and the jar cache: what the collectors (the Java Admin client of
share groups), preflight and the sandbox all need, kept below them (the collectors never
import the sandbox).

The jar cache holds what ``mirror-audit sandbox`` and ``make jars`` fetch from Maven
Central; ``java.kafka_classpath: auto`` finds the Kafka client there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from audit.errors import JavaError


def cache_root() -> Path:
    """``$MIRROR_AUDIT_CACHE`` or ``$XDG_CACHE_HOME/kafka-mirror-audit`` (``~/.cache``)."""
    explicit = os.environ.get("MIRROR_AUDIT_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "kafka-mirror-audit"


def find_java() -> str:
    """The java binary (``$JAVA_HOME/bin/java`` first), checked to be Java 17 or later."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not candidate or not Path(candidate).exists():
        raise JavaError("Java is not installed: install a JDK 17 or later (or set JAVA_HOME)")
    try:
        out = subprocess.run([candidate, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except OSError as exc:
        raise JavaError(f"cannot run {candidate}: {exc.strerror}") from exc
    major = _java_major(out.stderr + out.stdout)
    if major is not None and major < 17:
        raise JavaError(f"{candidate} is Java {major}; Kafka 4 and Spark 4 need Java 17 or later")
    return candidate


def _java_major(version_text: str) -> int | None:
    for token in version_text.split('"')[1::2]:
        parts = token.split(".")
        try:
            first = int(parts[0])
            return int(parts[1]) if first == 1 and len(parts) > 1 else first
        except ValueError:
            continue
    return None
