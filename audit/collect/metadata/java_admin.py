"""Kafka's own Java Admin client, for what neither Python client reads: share groups.

KIP-932 share groups keep per partition a share-partition start offset (SPSO) in the share
coordinator. confluent-kafka has no share-group admin call and kafka-python only lists the
groups, so their descriptions and start offsets are read with the Java Admin
(``describeShareGroups``, ``listShareGroupOffsets``) of the Kafka client jar, in a JVM
started for the purpose and driven through py4j (PySpark's own bridge to the JVM, already
installed with it). The JVM starts in about a tenth of a second and is started only when
the cluster lists a share group; it is stopped once the groups are read.

Where the jar comes from (``java.kafka_classpath``): a Kafka installation's ``libs/``
directory or jar paths; ``auto`` looks in ``$KAFKA_HOME/libs``, then in this tool's jar
cache (what ``mirror-audit sandbox`` and ``make jars`` fetch from Maven Central); ``off``
never starts a JVM. Without a JVM or the jar, share groups are listed but their offsets
are not read: the snapshot's manifest says so and the group checks count the groups as
unchecked, never as passed.

The login is the cluster's, translated from its librdkafka properties (java_login.py); the
secrets go to the JVM over py4j's authenticated loopback socket, never on a command line
or in a file. Only reads are called here: the sandbox's writes (its share groups' cleanup
and the mirror emulator's sync) live in audit/sandbox/share_groups.py.
"""

from __future__ import annotations

import glob
import logging
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.collect.metadata.group_reads import _state_word
from audit.collect.metadata.java_login import java_properties, java_system_properties
from audit.config import ClusterConfig
from audit.java_runtime import cache_root, find_java
from audit.snapshot import ShareGroupOffsetRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShareGroup:
    group_id: str
    state: str
    member_count: int
    # Its start offsets, as the share coordinator keeps them: the snapshot's rows as they are.
    offsets: tuple[ShareGroupOffsetRecord, ...]


def classpath(setting: str) -> list[str] | str:
    """The jars of the Kafka Java client for ``java.kafka_classpath``, or why there are none.

    A directory gives its ``kafka-clients-*.jar`` and the few jars beside it the client
    needs (``_COMPANIONS``); a ``:``-separated list of jars is taken as is. The client
    needs slf4j's API on the class path; where the setting gives none, PySpark's copy is
    added."""
    if setting == "off":
        return "java.kafka_classpath is off"
    if setting == "auto":
        candidates = []
        home = os.environ.get("KAFKA_HOME")
        if home:
            candidates.append(Path(home) / "libs")
        candidates += sorted(cache_root().glob("kafka-*/libs"), reverse=True)
        for directory in candidates:
            found = _jars_in(directory)
            if found:
                return _with_slf4j(found)
        return (
            "no Kafka Java client found (java.kafka_classpath auto: neither $KAFKA_HOME/libs nor the jar "
            "cache holds kafka-clients-*.jar); set java.kafka_classpath to a Kafka installation's libs/"
        )
    jars: list[str] = []
    for entry in setting.split(":"):
        path = Path(entry).expanduser()
        if path.is_dir():
            jars += _jars_in(path)
        elif path.is_file():
            jars.append(str(path))
        else:
            return f"java.kafka_classpath: {entry} is neither a directory nor a jar"
    if not any(Path(j).name.startswith("kafka-clients-") for j in jars):
        return f"java.kafka_classpath ({setting}) holds no kafka-clients-*.jar"
    return _with_slf4j(jars)


# Beside the client: slf4j's API (always); jose4j and Jackson (an OAUTHBEARER login with
# OIDC parses its tokens with them).
_COMPANIONS = (
    "slf4j-api-*.jar",
    "jose4j-*.jar",
    "jackson-databind-*.jar",
    "jackson-core-*.jar",
    "jackson-annotations-*.jar",
)


def _jars_in(directory: Path) -> list[str]:
    clients = sorted(glob.glob(str(directory / "kafka-clients-*.jar")))
    if not clients:
        return []
    return [*clients, *(j for pattern in _COMPANIONS for j in sorted(glob.glob(str(directory / pattern))))]


def _with_slf4j(jars: list[str]) -> list[str]:
    if any(Path(j).name.startswith("slf4j-api-") for j in jars):
        return jars
    import pyspark

    return jars + sorted(glob.glob(str(Path(pyspark.__file__).parent / "jars" / "slf4j-api-*.jar")))[:1]


class JavaAdmin:
    """The Java Admin client of one cluster, in a JVM of its own (``java_admin``)."""

    retry_seconds = 1.0  # between two tries of a read that failed retriably

    def __init__(self, gateway: Any, admin: Any, timeout_seconds: float) -> None:
        self._gateway = gateway
        self._jvm = gateway.jvm
        self._admin = admin
        self._timeout_ms = int(timeout_seconds * 1000)

    @property
    def gateway(self) -> Any:
        """The py4j gateway of this client's JVM (the sandbox drives its own writes there)."""
        return self._gateway

    @property
    def client(self) -> Any:
        """The Java ``Admin`` itself: the sandbox's writes call it (audit/sandbox/), never
        this module, which only reads."""
        return self._admin

    def result(self, future: Any) -> Any:
        """A Java future's value, its failure as a :class:`JavaCallError`."""
        return self._get(future)

    def _get(self, future: Any) -> Any:
        """A future's value; its failure as a :class:`JavaCallError` read while the JVM is
        still there (a py4j error outliving its gateway cannot even say its own name)."""
        from py4j.protocol import Py4JJavaError

        try:
            return future.get(self._timeout_ms, self._jvm.java.util.concurrent.TimeUnit.MILLISECONDS)
        except Py4JJavaError as exc:
            raise self._call_error(exc) from None

    def _call_error(self, exc: Any) -> JavaCallError:
        """The failure read from its innermost cause: its class, the one line
        :func:`java_error` makes of it, and whether Kafka calls it retriable (a coordinator
        loading or moving, a request timed out: the same call may succeed a moment later)."""
        try:
            cause = _innermost(exc)
            name = str(cause.getClass().getSimpleName())
            retriable = self._jvm.java.lang.Class.forName("org.apache.kafka.common.errors.RetriableException")
            return JavaCallError(name, java_error(exc), bool(retriable.isInstance(cause)))
        except Exception:  # the JVM cannot say: unnamed, not retried
            log.debug("reading a Java exception failed", exc_info=True)
            return JavaCallError(None, java_error(exc))

    def share_groups(self, group_ids: Sequence[str]) -> list[ShareGroup]:
        """Each share group's state, member count and start offsets (every partition it has
        state for; a partition without a start offset yet is left out). A group the cluster
        does not know (deleted since it was listed, or never there) is left out.

        A retriable failure (the share coordinator still loading the group's state, which
        the Admin client's own retries do not all cover) is tried again, for up to the
        client's timeout in all: a transient answer is not a share group left unread."""
        deadline = time.monotonic() + self._timeout_ms / 1000
        while True:
            try:
                return self._share_groups(group_ids)
            except JavaCallError as exc:
                if not exc.retriable or time.monotonic() >= deadline:
                    raise
                log.info("reading share groups: %s; trying again", exc)
                time.sleep(self.retry_seconds)

    def _share_groups(self, group_ids: Sequence[str]) -> list[ShareGroup]:
        if not group_ids:
            return []
        futures = self._admin.describeShareGroups(list(group_ids)).describedGroups()
        described = {}
        for gid in group_ids:
            try:
                described[gid] = self._get(futures.get(gid))
            except JavaCallError as exc:
                if exc.cause != "GroupIdNotFoundException":
                    raise
        if not described:
            return []
        spec = self._jvm.org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec
        listed = self._admin.listShareGroupOffsets({g: spec() for g in described})
        out = []
        for gid, desc in described.items():
            per_partition = self._get(listed.partitionsToOffsetInfo(gid))
            rows = []
            for tp in per_partition.keySet():
                info = per_partition.get(tp)
                if info is None:  # a partition the group has no state for yet
                    continue
                epoch = info.leaderEpoch()
                lag = info.lag()
                rows.append(
                    ShareGroupOffsetRecord(
                        gid,
                        str(tp.topic()),
                        int(tp.partition()),
                        int(info.startOffset()),
                        int(epoch.get()) if epoch.isPresent() and int(epoch.get()) >= 0 else None,
                        int(lag.get()) if lag.isPresent() else None,
                    )
                )
            out.append(
                ShareGroup(
                    gid,
                    _state(str(desc.groupState().toString())),
                    int(desc.members().size()),
                    tuple(sorted(rows, key=lambda r: (r.topic, r.partition))),
                )
            )
        return out

    def finalized_feature(self, name: str) -> int:
        """A cluster feature's finalized version level (0: not finalized, or unknown)."""
        features = self._get(self._admin.describeFeatures().featureMetadata()).finalizedFeatures()
        level = features.get(name)
        return int(level.maxVersionLevel()) if level is not None else 0


def _state(word: str) -> str:
    """A Java GroupState (``Stable``, ``Empty``) in the snapshot's words (``STABLE``)."""
    return _state_word(word)


class JavaCallError(Exception):
    """A Java Admin call that failed: its innermost cause's simple class name (None: the
    JVM could not say) and the one line :func:`java_error` makes of it."""

    def __init__(self, cause: str | None, message: str, retriable: bool = False) -> None:
        super().__init__(message)
        self.cause = cause
        self.retriable = retriable


def _innermost(exc: Any) -> Any:
    """A failed Java call's innermost cause (a future's ExecutionException wraps the
    broker's answer); raises where the JVM is gone."""
    cause = exc.java_exception
    while cause.getCause() is not None:
        cause = cause.getCause()
    return cause


def java_error(exc: BaseException) -> str:
    """A failed Java call in one line: the innermost cause's class and message (a future's
    ExecutionException wraps the broker's answer), never the Java stack trace."""
    from py4j.protocol import Py4JJavaError

    if isinstance(exc, JavaCallError):
        return str(exc)
    if isinstance(exc, Py4JJavaError):
        try:
            cause = _innermost(exc)
            return f"{cause.getClass().getSimpleName()}: {cause.getMessage()}"
        except Exception:  # the JVM is gone: only the Python side is left to say it
            log.debug("reading a Java exception failed", exc_info=True)
    first = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {first[0] if first else ''}"


@contextmanager
def java_gateway(jars: list[str]) -> Iterator[Any]:
    """A JVM holding ``jars``, driven through py4j, stopped on the way out: the gateway
    closed, then the process ended (py4j's shutdown stops only its server, and the JVM would
    otherwise live as long as this process). Its output goes nowhere: the Kafka client logs
    through slf4j, which here has no backend."""
    import subprocess

    from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

    port, token, process = launch_gateway(
        classpath=os.pathsep.join(jars),
        die_on_exit=True,
        enable_auth=True,
        java_path=find_java(),
        return_proc=True,
    )
    try:
        parameters = GatewayParameters(port=port, auth_token=token, auto_convert=True)
        gateway = JavaGateway(gateway_parameters=parameters)
        try:
            yield gateway
        finally:
            try:
                gateway.shutdown()
            except Exception:  # a JVM already gone: nothing left to stop
                log.debug("stopping the py4j gateway failed", exc_info=True)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def open_admin(
    gateway: Any, props: Mapping[str, str], timeout_seconds: float, system: Mapping[str, str] | None = None
) -> Iterator[JavaAdmin]:
    """A Java Admin client in ``gateway``'s JVM (``system``: JVM system properties its login
    needs, set first), closed on the way out."""
    for key, value in (system or {}).items():
        gateway.jvm.java.lang.System.setProperty(key, value)
    jprops = gateway.jvm.java.util.Properties()
    for key, value in props.items():
        jprops.setProperty(key, value)
    admin = gateway.jvm.org.apache.kafka.clients.admin.Admin.create(jprops)
    try:
        yield JavaAdmin(gateway, admin, timeout_seconds)
    finally:
        try:
            admin.close(gateway.jvm.java.time.Duration.ofSeconds(5))
        except Exception:  # closing must not mask the reads' own result
            log.debug("closing the Java admin client failed", exc_info=True)


@contextmanager
def java_admin(cfg: ClusterConfig, setting: str) -> Iterator[JavaAdmin | str]:
    """The cluster's Java Admin client, or why there is none (no jar, no JVM, a login the
    Java client cannot be given here)."""
    jars = classpath(setting)
    if isinstance(jars, str):
        yield jars
        return
    props = java_properties(cfg.client_settings(), cfg.timeout_seconds)
    if isinstance(props, str):
        yield props
        return
    try:
        gateway_cm = java_gateway(jars)
        gateway = gateway_cm.__enter__()
    except Exception as exc:  # no java, a JVM that does not start
        yield f"no JVM for the Kafka Java client: {java_error(exc)}"
        return
    try:
        system = java_system_properties(cfg.client_settings())
        admin_cm = open_admin(gateway, props, cfg.timeout_seconds, system)
        try:
            admin = admin_cm.__enter__()
        except Exception as exc:  # a refused configuration: said while the JVM can still say it
            yield f"the Java client did not start: {java_error(exc)}"
            return
        try:
            yield admin
        finally:
            admin_cm.__exit__(None, None, None)
    finally:
        gateway_cm.__exit__(None, None, None)
