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
from collections.abc import Callable
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
    return _cached(
        root,
        f"kafka-{version}",
        lambda target: _maven_copy(
            f"Apache Kafka {version}", "pom.xml", {"kafka.version": version}, "kafka_2.13-*.jar", target
        ),
    )


# The Spark Kafka source's own jars: everything else it needs (Scala, Hadoop client,
# compression codecs) already ships with PySpark, and a second copy on the class path
# would only invite conflicts.
SPARK_KAFKA_JARS = (
    "spark-sql-kafka-0-10_2.13-*.jar",
    "spark-token-provider-kafka-0-10_2.13-*.jar",
    "kafka-clients-*.jar",
    "commons-pool2-*.jar",
)


def ensure_spark_kafka_jars(spark_version: str, root: Path | None = None) -> tuple[str, list[Path]]:
    """The Spark Kafka source (spark-sql-kafka-0-10) for ``spark_version``: the version
    fetched and its jars, for ``spark.jars``.

    The exact version is tried first. Maven Central has been seen without a patch release's
    connector (4.1.4) or its token-provider dependency (4.1.2, 4.1.3); then the newest
    earlier patch of the same minor line that resolves is used, with a warning, since a
    data source jar is built against the minor line's API."""
    root = root or cache_root()
    errors = []
    for version in patch_candidates(spark_version):
        try:
            target = _cached(
                root,
                f"spark-kafka-{version}",
                lambda target, v=version: _maven_copy(  # type: ignore[misc]
                    f"spark-sql-kafka-0-10 {v}",
                    "spark-kafka-pom.xml",
                    {"spark.version": v},
                    "spark-sql-kafka-0-10_2.13-*.jar",
                    target,
                    settings="maven-central-only.xml",
                ),
            )
        except SandboxError as exc:
            errors.append(str(exc))
            continue
        if version != spark_version:
            log.warning(
                "spark-sql-kafka-0-10 %s is not on Maven Central; using %s of the same line",
                spark_version,
                version,
            )
        jars = sorted(j for pattern in SPARK_KAFKA_JARS for j in target.glob(pattern))
        return version, jars
    raise SandboxError(
        f"no spark-sql-kafka-0-10 for Spark {spark_version} or an earlier patch resolves: {errors[0]}"
    )


def patch_candidates(version: str) -> list[str]:
    """``version`` itself, then the earlier patch releases of its minor line, newest first
    (``4.1.4`` -> 4.1.4, 4.1.3, 4.1.2, 4.1.1, 4.1.0); a version that is not x.y.z is only
    itself."""
    parts = version.split(".")
    if len(parts) < 3:
        return [version]
    digits = parts[2].split("-")[0].split("+")[0]
    if not digits.isdigit():
        return [version]
    prefix = ".".join(parts[:2])
    return [version, *(f"{prefix}.{p}" for p in range(int(digits) - 1, -1, -1))]


def _cached(root: Path, name: str, fetch: Callable[[Path], None]) -> Path:
    """``root/name/libs``, made by ``fetch(tmp)`` once (under a lock, renamed into place)."""
    target = root / name / "libs"
    if (target / _COMPLETE).exists():
        return target
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / _COMPLETE).exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".libs.", dir=target.parent))
        try:
            fetch(tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        (tmp / _COMPLETE).write_text(name + "\n")
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    return target


def _maven_copy(
    what: str, pom: str, properties: dict[str, str], expect: str, out: Path, settings: str | None = None
) -> None:
    """``mvn dependency:copy-dependencies`` of a pom in ``resources/`` into ``out``."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SandboxError(f"Maven is not installed: install it (apt-get install maven) to fetch {what}")
    cmd = [mvn, "-B", "-q", "-f", str(resource_path(pom))]
    if settings:
        cmd += ["-s", str(resource_path(settings))]
    cmd += [
        "dependency:copy-dependencies",
        *(f"-D{k}={v}" for k, v in properties.items()),
        f"-DoutputDirectory={out}",
        "-DincludeScope=runtime",
    ]
    log.info("fetching %s jars from Maven Central into %s", what, out)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    except subprocess.TimeoutExpired as exc:
        raise SandboxError(f"Maven did not finish fetching {what} within 30 minutes") from exc
    if proc.returncode != 0 or not any(out.glob(expect)):
        errors = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "ERROR" in ln]
        cause = errors[0].replace("[ERROR]", "").strip() if errors else f"mvn exited with {proc.returncode}"
        raise SandboxError(f"fetching {what} jars with Maven failed: {cause[:300]}")
