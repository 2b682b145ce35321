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
from audit.java_runtime import cache_root

log = logging.getLogger(__name__)

# The Apache Kafka releases the sandbox runs and the suite tests, one per supported line,
# the default (what a new user gets) first. Older brokers may work with the auditor but are
# not tested: 3.7 and 3.8 cannot format a KRaft controller the way the sandbox does.
DEFAULT_KAFKA_VERSION = "4.4.0"
TESTED_KAFKA_VERSIONS = ("4.4.0", "4.3.1", "4.1.2", "3.9.1")
OLDEST_SUPPORTED = (3, 9)
# Apache Kafka releases, newest first: where a release's connect-mirror is not on Maven
# Central, MirrorMaker 2 runs from the newest release below it on this list that resolves
# (a client against newer brokers, as users run mixed versions). Kept by hand: a new
# release is added at the top.
KAFKA_RELEASES = (
    "4.4.0",
    "4.3.1",
    "4.3.0",
    "4.2.0",
    "4.1.2",
    "4.1.1",
    "4.1.0",
    "4.0.2",
    "4.0.1",
    "4.0.0",
    "3.9.2",
    "3.9.1",
    "3.9.0",
)
# Kafka 3.x brokers log through reload4j (log4j 1) and ship its slf4j binding; 4.x carries
# no backend, so the poms add log4j2, which a 3.x broker copy leaves out (two slf4j bindings
# on one class path would pick one at random). 3.x connect-mirror has no binding of its
# own and keeps log4j2's.
_LOG4J2_ARTIFACTS = "log4j-slf4j-impl,log4j-api,log4j-core"
_COMPLETE = ".complete"


def kafka_version(explicit: str | None = None) -> str:
    """The broker release to run: ``explicit`` (``--kafka-version``), else
    ``$MIRROR_AUDIT_KAFKA_VERSION``, else the default; refused, naming the choice, when it is
    not a release number or older than the oldest supported line."""
    version = explicit or os.environ.get("MIRROR_AUDIT_KAFKA_VERSION") or DEFAULT_KAFKA_VERSION
    source = (
        "--kafka-version"
        if explicit
        else ("$MIRROR_AUDIT_KAFKA_VERSION" if os.environ.get("MIRROR_AUDIT_KAFKA_VERSION") else "default")
    )
    parsed = version_tuple(version)
    if parsed is None:
        raise SandboxError(
            f"Kafka version {version!r} ({source}) is not a release number like {DEFAULT_KAFKA_VERSION}"
        )
    if parsed[:2] < OLDEST_SUPPORTED:
        raise SandboxError(
            f"Kafka {version} ({source}) is older than the sandbox supports: it runs "
            f"{'.'.join(map(str, OLDEST_SUPPORTED))} or later in KRaft mode (tested: "
            f"{', '.join(TESTED_KAFKA_VERSIONS)})"
        )
    return version


def version_tuple(version: str) -> tuple[int, int, int] | None:
    """``"4.1.2"`` -> (4, 1, 2); None for anything that is not three numbers."""
    parts = version.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


def uses_reload4j(jars: str | os.PathLike[str]) -> bool:
    """Whether a jar directory's slf4j binding is reload4j's (Kafka 3.x brokers) rather than
    log4j2's. The binding decides, not the reload4j jar: 3.x connect-mirror brings reload4j
    without a binding, so MirrorMaker 2 keeps the poms' log4j2 one."""
    return any(Path(jars).glob("slf4j-reload4j-*.jar"))


def resource_path(name: str) -> Path:
    """A file shipped in ``audit/sandbox/resources`` (pom, logging config)."""
    return Path(str(resources.files("audit.sandbox").joinpath("resources", name)))


def ensure_kafka_jars(version: str | None = None, root: Path | None = None) -> Path:
    """The directory holding the broker's and tools' runtime jars of Kafka ``version``,
    fetching them if absent (MirrorMaker 2's are apart: ``ensure_mm2_jars``).

    Safe to call from several processes at once: a lock file serialises the download and the
    result only appears (by rename) once Maven has copied every jar.
    """
    version = version or kafka_version()
    root = root or cache_root()
    return _cached(
        root,
        f"kafka-{version}",
        lambda target: _maven_copy(
            f"Apache Kafka {version}",
            "pom.xml",
            {"kafka.version": version, **_logging_exclusions(version)},
            "kafka_2.13-*.jar",
            target,
        ),
    )


def ensure_mm2_jars(broker_version: str, root: Path | None = None) -> tuple[str, Path]:
    """MirrorMaker 2's jars (connect-mirror and its own tree, kafka-clients included) for
    brokers of ``broker_version``: the release itself, else the newest release below it on
    ``KAFKA_RELEASES`` whose connect-mirror Maven Central serves, with a warning naming both.
    Returns the release used and its jar directory; MM2 runs from it alone."""
    root = root or cache_root()
    version, target = _first_resolving(
        root,
        releases_at_or_below(broker_version),
        lambda v: f"mm2-{v}",
        lambda v, out: _maven_copy(
            f"MirrorMaker 2 (connect-mirror {v})",
            "mm2-pom.xml",
            {"kafka.version": v},
            "connect-mirror-*.jar",
            out,
        ),
        f"no connect-mirror release at or below {broker_version} resolves from Maven Central "
        "(MirrorMaker 2 cannot start)",
    )
    if version != broker_version:
        log.warning(
            "connect-mirror %s is not on Maven Central; MirrorMaker 2 runs from connect-mirror %s "
            "against the %s brokers",
            broker_version,
            version,
            broker_version,
        )
    return version, target


def ensure_streams_jars(version: str | None = None, root: Path | None = None) -> Path:
    """Kafka Streams ``version``'s jars (kafka-streams and its tree, kafka-clients
    included), for a Streams application of the sandbox's own; fetched once, like the
    brokers' (``ensure_kafka_jars``)."""
    version = version or kafka_version()
    return _cached(
        root or cache_root(),
        f"streams-{version}",
        lambda target: _maven_copy(
            f"Kafka Streams {version}",
            "streams-pom.xml",
            {"kafka.version": version},
            "kafka-streams-*.jar",
            target,
        ),
    )


# LocalTieredStorage, Apache Kafka's own remote storage manager for tests (KIP-405): it keeps
# "remote" segments in a local directory. It ships only in kafka-storage's test jar.
LOCAL_TIERED_STORAGE_CLASS = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"


def ensure_tiered_storage_jar(broker_version: str, root: Path | None = None) -> tuple[str, Path]:
    """kafka-storage's test jar (``org.apache.kafka:kafka-storage:<v>:jar:test``, holding
    ``LOCAL_TIERED_STORAGE_CLASS``) for brokers of ``broker_version``: the release itself, else
    the newest release below it on ``KAFKA_RELEASES`` whose test jar Maven Central serves, with
    a warning naming both. Returns the release used and the jar.

    A test jar is built against its own release's internals: 4.3.1's LocalTieredStorage does
    not load in 4.4.0 brokers (it calls ``org.apache.kafka.common.utils.LogContext``, which 4.4
    moved to ``common.utils.internals``), so the sandbox runs tiered brokers at the release
    returned here (``cluster.up``)."""
    root = root or cache_root()
    version, target = _first_resolving(
        root,
        releases_at_or_below(broker_version),
        lambda v: f"tiered-storage-{v}",
        lambda v, out: _maven_artifact(
            f"LocalTieredStorage (kafka-storage {v} test jar)",
            f"org.apache.kafka:kafka-storage:{v}:jar:test",
            out,
        ),
        f"no kafka-storage test jar (LocalTieredStorage) at or below {broker_version} resolves from "
        "Maven Central (tiered storage cannot start)",
    )
    if version != broker_version:
        log.warning(
            "the kafka-storage %s test jar is not on Maven Central; LocalTieredStorage comes from "
            "kafka-storage %s",
            broker_version,
            version,
        )
    return version, next(target.glob("kafka-storage-*-test.jar"))


def releases_at_or_below(broker_version: str) -> list[str]:
    """``broker_version`` itself, then every release of ``KAFKA_RELEASES`` below it, newest
    first, down to the oldest supported line."""
    own = version_tuple(broker_version)
    below = [
        r
        for r in KAFKA_RELEASES
        if own is not None and (t := version_tuple(r)) is not None and t < own and t[:2] >= OLDEST_SUPPORTED
    ]
    return [broker_version, *below]


def _logging_exclusions(version: str) -> dict[str, str]:
    """Maven properties leaving log4j2 out of a 3.x copy (see ``_LOG4J2_ARTIFACTS``)."""
    parsed = version_tuple(version)
    if parsed is not None and parsed[0] < 4:
        return {"excludeArtifactIds": _LOG4J2_ARTIFACTS}
    return {}


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
    version, target = _first_resolving(
        root,
        patch_candidates(spark_version),
        lambda v: f"spark-kafka-{v}",
        lambda v, out: _maven_copy(
            f"spark-sql-kafka-0-10 {v}",
            "spark-kafka-pom.xml",
            {"spark.version": v},
            "spark-sql-kafka-0-10_2.13-*.jar",
            out,
            settings="maven-central-only.xml",
        ),
        f"no spark-sql-kafka-0-10 for Spark {spark_version} or an earlier patch resolves",
    )
    if version != spark_version:
        log.warning(
            "spark-sql-kafka-0-10 %s is not on Maven Central; using %s of the same line",
            spark_version,
            version,
        )
    return version, sorted(j for pattern in SPARK_KAFKA_JARS for j in target.glob(pattern))


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


def _first_resolving(
    root: Path,
    candidates: list[str],
    cache_name: Callable[[str], str],
    fetch: Callable[[str, Path], None],
    none_resolves: str,
) -> tuple[str, Path]:
    """The first of ``candidates`` whose jars Maven resolves (cached as ``cache_name(v)``) and
    their directory; none: a SandboxError, ``none_resolves`` and the first failure."""
    errors = []
    for version in candidates:
        try:
            return version, _cached(root, cache_name(version), lambda out, v=version: fetch(v, out))  # type: ignore[misc]
        except SandboxError as exc:
            errors.append(str(exc))
    raise SandboxError(f"{none_resolves}: {errors[0]}")


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


def _maven_artifact(what: str, artifact: str, out: Path) -> None:
    """``mvn dependency:copy`` of one artifact (``group:name:version:type:classifier``), without
    its dependencies, into ``out``."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SandboxError(f"Maven is not installed: install it (apt-get install maven) to fetch {what}")
    cmd = [mvn, "-B", "-q", "dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={out}"]
    log.info("fetching %s from Maven Central into %s", what, out)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, cwd=out)
    except subprocess.TimeoutExpired as exc:
        raise SandboxError(f"Maven did not finish fetching {what} within 10 minutes") from exc
    if proc.returncode != 0 or not any(out.glob("*.jar")):
        errors = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "ERROR" in ln]
        cause = errors[0].replace("[ERROR]", "").strip() if errors else f"mvn exited with {proc.returncode}"
        raise SandboxError(f"fetching {what} with Maven failed: {cause[:300]}")
