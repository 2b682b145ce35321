"""The Apache Kafka jars from Maven Central, fetched once with Maven into a cache.

Maven (not a hand-written HTTP client) resolves the broker's runtime dependency tree from
the small pom kept in ``resources/``; the cache lives outside the repo, so a clone stays
small and a second run starts from the cache.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from audit.errors import SandboxError

log = logging.getLogger(__name__)

DEFAULT_KAFKA_VERSION = "4.1.2"
_COMPLETE = ".complete"


def cache_root() -> Path:
    """``$MIRROR_AUDIT_CACHE`` or ``$XDG_CACHE_HOME/kafka-mirror-audit`` (``~/.cache``)."""
    explicit = os.environ.get("MIRROR_AUDIT_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "kafka-mirror-audit"


def kafka_version() -> str:
    return os.environ.get("MIRROR_AUDIT_KAFKA_VERSION", DEFAULT_KAFKA_VERSION)


def resource_path(name: str) -> Path:
    """A file shipped in ``audit/sandbox/resources`` (pom, logging config)."""
    return Path(str(resources.files("audit.sandbox").joinpath("resources", name)))


def find_java() -> str:
    """The java binary (``$JAVA_HOME/bin/java`` first), checked to be Java 17 or later."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not candidate or not Path(candidate).exists():
        raise SandboxError("Java is not installed: install a JDK 17 or later (or set JAVA_HOME)")
    try:
        out = subprocess.run([candidate, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except OSError as exc:
        raise SandboxError(f"cannot run {candidate}: {exc.strerror}") from exc
    major = _java_major(out.stderr + out.stdout)
    if major is not None and major < 17:
        raise SandboxError(f"{candidate} is Java {major}; the Kafka 4 sandbox needs Java 17 or later")
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


def ensure_kafka_jars(version: str | None = None, root: Path | None = None) -> Path:
    """The directory holding every runtime jar of Kafka ``version``, fetching it if absent.

    Safe to call from several processes at once: a lock file serialises the download and the
    result only appears (by rename) once Maven has copied every jar.
    """
    version = version or kafka_version()
    root = root or cache_root()
    target = root / f"kafka-{version}" / "libs"
    if (target / _COMPLETE).exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".kafka-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / _COMPLETE).exists():
            return target
        _download(version, target)
    return target


def _download(version: str, target: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SandboxError(
            "Maven is not installed: install it (apt-get install maven) to fetch the Kafka jars"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".libs.", dir=target.parent))
    cmd = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(resource_path("pom.xml")),
        "dependency:copy-dependencies",
        f"-Dkafka.version={version}",
        f"-DoutputDirectory={tmp}",
        "-DincludeScope=runtime",
    ]
    log.info("fetching Apache Kafka %s jars from Maven Central into %s", version, target)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SandboxError("Maven did not finish fetching the Kafka jars within 30 minutes") from exc
    if proc.returncode != 0 or not any(tmp.glob("kafka_2.13-*.jar")):
        shutil.rmtree(tmp, ignore_errors=True)
        errors = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "ERROR" in ln]
        cause = errors[0].replace("[ERROR]", "").strip() if errors else f"mvn exited with {proc.returncode}"
        raise SandboxError(f"fetching Kafka {version} jars with Maven failed: {cause[:300]}")
    (tmp / _COMPLETE).write_text(version + "\n")
    if target.exists():
        shutil.rmtree(target)
    os.replace(tmp, target)
    log.info("fetched %d jars", len(list(target.glob("*.jar"))))
