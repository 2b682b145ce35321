"""Start, inspect and stop the sandbox's real Kafka clusters (KRaft, loopback only).

Each cluster has one combined broker+controller node (node 1) and, on request, more
broker-only nodes; more than one broker is what lets a test move leadership and so raise a
partition's leader epoch by exactly one. Processes are started in their own session (they
outlive ``sandbox up``) and stopped by recorded pid and start time, never by name.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from audit.errors import SandboxError
from audit.java_runtime import find_java
from audit.sandbox.broker_config import (
    check_sasl_users,
    free_ports,
    make_keystore,
    new_cluster_id,
    port_free,
    port_open,
    server_properties,
    tiered_storage_properties,
)
from audit.sandbox.jars import ensure_kafka_jars, ensure_tiered_storage_jar, kafka_version
from audit.sandbox.processes import java_cmd, start_java, stop_process
from audit.sandbox.state import (
    ClusterState,
    NodeState,
    SandboxState,
    is_running,
    load_state,
    save_state,
)

log = logging.getLogger(__name__)

CLUSTER_NAMES: tuple[str, ...] = ("source", "destination")


def default_workdir() -> Path:
    """``$MIRROR_AUDIT_SANDBOX_DIR`` or ``$XDG_STATE_HOME/kafka-mirror-audit/sandbox``."""
    explicit = os.environ.get("MIRROR_AUDIT_SANDBOX_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "kafka-mirror-audit" / "sandbox"


@dataclass(frozen=True)
class SandboxOptions:
    workdir: Path
    brokers_per_cluster: int = 1
    # Fixed client port of node 1 per cluster name; others get free loopback ports.
    ports: dict[str, int] = field(default_factory=dict)
    heap_mb: int = 512
    start_timeout_seconds: float = 120.0
    # Extra broker settings for every node (e.g. small segments for segment tests).
    broker_properties: dict[str, str] = field(default_factory=dict)
    # SASL/PLAIN users (name -> password): every broker then also listens with SASL_PLAINTEXT
    # on a port of its own, so credentials are checked by a real broker. Brokers talk to each
    # other and to the controller over PLAINTEXT either way.
    sasl_users: dict[str, str] = field(default_factory=dict)
    # Kafka's StandardAuthorizer on every node: PLAINTEXT clients (ANONYMOUS: the sandbox's
    # own traffic, brokers, controller) stay super users; a SASL user may do only what an
    # ACL grants it, as an auditor's principal on a secured cluster.
    authorizer: bool = False
    # The SASL listeners speak TLS (SASL_SSL) with a self-signed certificate for 127.0.0.1
    # made at start; clients trust it with ssl.ca.location = tls_ca(state).
    tls: bool = False
    # The Apache Kafka release to run; None: $MIRROR_AUDIT_KAFKA_VERSION, else the default.
    kafka_version: str | None = None
    # Tiered storage (KIP-405) on every broker: Kafka's LocalTieredStorage keeps each
    # cluster's remote segments under the work dir (``remote_storage_dir``), the topic-based
    # metadata manager tracks them; a topic tiers with remote.storage.enable=true. The
    # storage manager ships only in kafka-storage's test jar, built against its own release's
    # internals: where Maven Central lacks the requested release's, the brokers run the
    # newest release below it that has one (``ensure_tiered_storage_jar``), with a warning.
    tiered_storage: bool = False


# --------------------------------------------------------------------------- nodes


def _format_storage(
    java: str, jars: str, jobs: list[tuple[str, Path, str]], extra_jars: tuple[str, ...] = ()
) -> None:
    """Format every node's KRaft storage, in parallel (each is a JVM start)."""
    procs = []
    for cluster_id, props_path, label in jobs:
        cmd = java_cmd(
            java,
            jars,
            256,
            "kafka.tools.StorageTool",
            ["format", "-t", cluster_id, "-c", str(props_path)],
            extra_jars,
        )
        procs.append(
            (label, props_path, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        )
    failures = []
    for label, props_path, proc in procs:
        out, _ = proc.communicate(timeout=180)
        if proc.returncode != 0:
            text = out.decode(errors="replace").strip().splitlines()
            failures.append(f"{label}: {text[-1] if text else 'exit ' + str(proc.returncode)} ({props_path})")
    if failures:
        raise SandboxError("formatting KRaft storage failed: " + "; ".join(failures))


def _start_node(
    java: str, jars: str, heap_mb: int, props_path: Path, log_path: Path, extra_jars: tuple[str, ...] = ()
) -> tuple[int, int]:
    return start_java(java, jars, heap_mb, "kafka.Kafka", [str(props_path)], log_path, extra_jars)


def _exit_cause(node: NodeState) -> str:
    """The most telling line of a node's log after it died."""
    try:
        lines = Path(node.log_path).read_text(errors="replace").splitlines()
    except OSError:
        return "no log"
    for line in reversed(lines):
        if "Address already in use" in line or "BindException" in line:
            return f"a port it needs is taken (port {node.port} or {node.controller_port})"
    for line in reversed(lines):
        if " ERROR " in line or "Exception" in line:
            return line.strip()[:300]
    return "it exited without logging an error"


# --------------------------------------------------------------------------- readiness


def _broker_count(bootstrap: str, timeout: float) -> tuple[int, str | None]:
    """(brokers in the metadata, cluster id) as a client sees them."""
    from confluent_kafka.admin import AdminClient

    quiet = logging.getLogger("audit.sandbox.rdkafka")
    quiet.setLevel(logging.CRITICAL)
    settings: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": quiet, "socket.timeout.ms": 2000}
    admin = AdminClient(settings)
    try:
        md = admin.list_topics(timeout=timeout)
    except Exception:
        return 0, None
    return len(md.brokers), md.cluster_id


def _wait_ready(cluster: ClusterState, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        for node in cluster.nodes:
            if not is_running(node):
                raise SandboxError(
                    f"{cluster.name} broker (node {node.node_id}) exited during start: {_exit_cause(node)}; "
                    f"see {node.log_path}"
                )
        ports = [p for n in cluster.nodes for p in (n.port, n.sasl_port) if p is not None]
        if all(port_open(p) for p in ports):
            count, cid = _broker_count(cluster.nodes[0].bootstrap, timeout=3)
            if count == len(cluster.nodes) and cid == cluster.cluster_id:
                return
        if time.monotonic() > deadline:
            node = cluster.nodes[0]
            raise SandboxError(
                f"{cluster.name} cluster did not answer metadata requests within {timeout:.0f}s; "
                f"see {node.log_path}"
            )
        time.sleep(0.3)


# --------------------------------------------------------------------------- public API


_NodePlan = tuple[int, str, int, int, int | None, Path]  # id, roles, port, controller port, SASL port, dir


def up(opts: SandboxOptions) -> SandboxState:
    """Start both clusters and return once each answers metadata with all its brokers.

    A second call while the sandbox runs returns the running state. On any failure every
    process this call started is stopped and the error names the log to read.
    """
    workdir = opts.workdir
    version = kafka_version(opts.kafka_version)
    tiered_jar = None
    if opts.tiered_storage:
        version, tiered_jar = _tiered_release(version)
    existing = running_sandbox(workdir)
    if existing is not None:
        if existing.kafka_version != version:
            raise SandboxError(
                f"a Kafka {existing.kafka_version} sandbox is running in {workdir}, not {version}: "
                "stop it first (mirror-audit sandbox down)"
            )
        if existing.tiered_storage != opts.tiered_storage:
            raise SandboxError(
                f"a sandbox {'with' if existing.tiered_storage else 'without'} tiered storage is running "
                f"in {workdir}: stop it first (mirror-audit sandbox down)"
            )
        return existing
    _check_options(opts)
    java = find_java()
    jars = str(ensure_kafka_jars(version))
    extra = (str(tiered_jar),) if tiered_jar is not None else ()
    workdir.mkdir(parents=True, exist_ok=True)
    plans, format_jobs = _write_node_configs(java, opts)
    started = time.monotonic()
    _format_storage(java, jars, format_jobs, extra)
    clusters = [
        ClusterState(name, cluster_id, tuple(_start_nodes(java, jars, opts.heap_mb, nodes, extra)))
        for name, cluster_id, nodes in plans
    ]
    state = SandboxState(str(workdir), version, jars, tuple(clusters), extra[0] if extra else None)
    save_state(state)
    try:
        for cluster in clusters:
            _wait_ready(cluster, opts.start_timeout_seconds)
    except BaseException:
        _stop_all(state)
        (workdir / "state.json").unlink(missing_ok=True)
        raise
    log.info(
        "sandbox up in %.1fs: %s",
        time.monotonic() - started,
        ", ".join(f"{c.name}={c.bootstrap}" for c in clusters),
    )
    return state


def _tiered_release(version: str) -> tuple[str, Path]:
    """The release tiered brokers run and their LocalTieredStorage jar: ``version`` where
    Maven Central has its kafka-storage test jar, else the release of the newest one below
    it (a test jar does not load in another release's brokers)."""
    jar_version, jar = ensure_tiered_storage_jar(version)
    if jar_version != version:
        log.warning(
            "tiered storage: the brokers run Kafka %s, not %s, the release of the LocalTieredStorage "
            "jar Maven Central has (%s's does not load in %s brokers)",
            jar_version,
            version,
            jar_version,
            version,
        )
    return jar_version, jar


REMOTE_STORAGE_DIR = "remote-storage"


def remote_storage_dir(state: SandboxState, cluster: str) -> Path:
    """Where ``cluster``'s LocalTieredStorage keeps its remote segments, shared by all the
    cluster's brokers as an object store would be:
    ``WORKDIR/<cluster>/remote-storage/kafka-tiered-storage`` (LocalTieredStorage appends
    ``kafka-tiered-storage`` to the ``rsm.config.dir`` it is given). It appears at the first
    broker start and goes with ``down``'s data; a SandboxError when the sandbox runs without
    tiered storage.

    Layout, as Kafka 4.3.1's LocalTieredStorage writes it (seen on a running sandbox)::

        kafka-tiered-storage/
          my.topic-x-0-t-5vIW8ZRTWEfDhtAvDfLA/      <topic>-<partition>-<topic id>
            00000000000000000000-uZfMABMPT4SgIJgHfx1SMA.log
            00000000000000000000-uZfMABMPT4SgIJgHfx1SMA.index
            00000000000000000000-uZfMABMPT4SgIJgHfx1SMA.timeindex
            00000000000000000000-uZfMABMPT4SgIJgHfx1SMA.snapshot
            00000000000000000000-uZfMABMPT4SgIJgHfx1SMA.leader_epoch_checkpoint
            00000000000000000401-kGvDkfOlQtyRrcQJxOrZXg.log
            00000000000000000401-kGvDkfOlQtyRrcQJxOrZXg.txnindex      (only where one exists locally)
            ...

    One directory per topic partition the brokers copied from: topic name, partition number
    and topic id (a Kafka Uuid, base64url: 22 characters that may hold ``-`` and ``_``, so
    split the name from the right: the id is the last 22 characters, the partition the
    digits before them; a topic deleted and created again gets a directory of its own).

    One file set per copied segment, ``<base offset>-<remote log segment id><suffix>``: the
    base offset zero-padded to 20 digits as in the local log's names (the LocalTieredStorage
    of some earlier releases wrote it unpadded, ``401-<id>.log``), the segment id a Uuid
    (base64url, 22 characters) new with every copy, so a segment copied twice (a new leader
    after a failed copy) appears twice with the same offset. ``.log``, ``.index``,
    ``.timeindex`` and ``.txnindex`` are byte copies of the local segment's files of the same
    base offset (``.index`` may be empty: an entry per ``index.interval.bytes`` of batches);
    ``.snapshot`` is the producer state at the segment's end (the local log's snapshot named by
    the next segment's base offset); ``.leader_epoch_checkpoint`` the leader epochs up to the
    segment's end in Kafka's checkpoint text (``0``, the entry count, ``<epoch> <start
    offset>`` lines). The base offset is the only offset a name gives: the segment's last
    offset is its ``.log``'s last batch's (or the ``__remote_log_metadata`` topic's record of
    the segment), and the next file set's base offset minus one only while the copies are
    contiguous."""
    if not state.tiered_storage:
        raise SandboxError(f"the sandbox in {state.workdir} runs without tiered storage")
    state.cluster(cluster)  # KeyError for a cluster it does not have
    return Path(state.workdir) / cluster / REMOTE_STORAGE_DIR / "kafka-tiered-storage"


def running_sandbox(workdir: Path) -> SandboxState | None:
    """The sandbox already running in ``workdir``, or None once a stale one (no broker of
    it alive) is cleared away; a partly running one is an error."""
    existing = load_state(workdir)
    if existing is None:
        return None
    nodes = [n for c in existing.clusters for n in c.nodes]
    alive = [n for n in nodes if is_running(n)]
    if len(alive) == len(nodes):
        log.info("sandbox already running (state %s)", workdir / "state.json")
        return existing
    if alive:
        raise SandboxError(
            f"sandbox in {workdir} is partly running ({len(alive)} of {len(nodes)} brokers): "
            "run 'mirror-audit sandbox down' first"
        )
    log.warning("removing stale sandbox state in %s (no broker of it is running)", workdir)
    _remove_data(existing)
    return None


def _check_options(opts: SandboxOptions) -> None:
    if opts.brokers_per_cluster < 1:
        raise SandboxError("brokers per cluster must be at least 1")
    check_sasl_users(opts.sasl_users)
    if opts.tls and not opts.sasl_users:
        raise SandboxError("TLS is for the SASL listeners: give SASL users too")
    for name, port in opts.ports.items():
        if not port_free(port):
            raise SandboxError(
                f"port 127.0.0.1:{port} for the {name} cluster is taken: free it or choose another port"
            )


def _write_node_configs(
    java: str, opts: SandboxOptions
) -> tuple[list[tuple[str, str, list[_NodePlan]]], list[tuple[str, Path, str]]]:
    """Every node's directory and server.properties, on fresh ports; returns the plan per
    cluster (name, cluster id, nodes) and the storage format jobs."""
    workdir, n = opts.workdir, opts.brokers_per_cluster
    sasl = bool(opts.sasl_users)
    keystore = make_keystore(java, workdir / "tls") if opts.tls else None
    if keystore is None:
        shutil.rmtree(workdir / "tls", ignore_errors=True)  # an earlier TLS sandbox's, now stale
    free = iter(free_ports(len(CLUSTER_NAMES) * ((2 * n if sasl else n) + 1)))
    plans: list[tuple[str, str, list[_NodePlan]]] = []
    format_jobs: list[tuple[str, Path, str]] = []
    for name in CLUSTER_NAMES:
        cluster_id = new_cluster_id()
        controller_port = next(free)
        remote = workdir / name / REMOTE_STORAGE_DIR
        shutil.rmtree(remote, ignore_errors=True)  # an earlier sandbox's, now stale
        extra = opts.broker_properties
        if opts.tiered_storage:
            remote.mkdir(parents=True)
            extra = {**tiered_storage_properties(remote, n), **extra}
        node_plans: list[_NodePlan] = []
        for node_id in range(1, n + 1):
            port = opts.ports[name] if node_id == 1 and name in opts.ports else next(free)
            sasl_port = next(free) if sasl else None
            roles = "broker,controller" if node_id == 1 else "broker"
            node_dir = workdir / name / f"node-{node_id}"
            if node_dir.exists():
                shutil.rmtree(node_dir)
            (node_dir / "data").mkdir(parents=True)
            props_path = node_dir / "server.properties"
            props_path.write_text(
                server_properties(
                    node_id,
                    roles,
                    port,
                    controller_port,
                    node_dir / "data",
                    extra,
                    sasl_port,
                    opts.sasl_users,
                    opts.authorizer,
                    keystore,
                )
            )
            node_plans.append((node_id, roles, port, controller_port, sasl_port, node_dir))
            format_jobs.append((cluster_id, props_path, f"{name} node {node_id}"))
        plans.append((name, cluster_id, node_plans))
    return plans, format_jobs


def _start_nodes(
    java: str, jars: str, heap_mb: int, nodes: list[_NodePlan], extra_jars: tuple[str, ...] = ()
) -> list[NodeState]:
    states = []
    for node_id, roles, port, controller_port, sasl_port, node_dir in nodes:
        log_path = node_dir / "broker.log"
        pid, ticks = _start_node(java, jars, heap_mb, node_dir / "server.properties", log_path, extra_jars)
        states.append(
            NodeState(
                node_id,
                roles,
                port,
                controller_port if "controller" in roles else None,
                pid,
                ticks,
                str(node_dir),
                str(log_path),
                sasl_port,
            )
        )
    return states


def status(workdir: Path) -> SandboxState | None:
    return load_state(workdir)


def _stop_all(state: SandboxState, timeout: float = 30.0) -> None:
    # Broker-only nodes first: they need the controller for a clean shutdown.
    for cluster in state.clusters:
        for node in sorted(cluster.nodes, key=lambda n: "controller" in n.roles):
            stop_process(node.pid, node.start_ticks, timeout)


def _remove_data(state: SandboxState) -> None:
    for cluster in state.clusters:
        for node in cluster.nodes:
            shutil.rmtree(Path(node.node_dir) / "data", ignore_errors=True)
        shutil.rmtree(Path(state.workdir) / cluster.name / REMOTE_STORAGE_DIR, ignore_errors=True)
    (Path(state.workdir) / "state.json").unlink(missing_ok=True)


def down(workdir: Path, keep_data: bool = False) -> SandboxState | None:
    """Stop exactly the processes ``up`` started and (unless ``keep_data``) remove their data.

    Logs stay for a post-mortem. Returns the state that was stopped, or None if none ran.
    """
    state = load_state(workdir)
    if state is None:
        return None
    # The mirrors first: they are clients of both clusters.
    from audit.sandbox import mirror_control, mm2

    mm2.stop(state)
    mirror_control.stop(state)
    _stop_all(state)
    if keep_data:
        (Path(state.workdir) / "state.json").unlink(missing_ok=True)
    else:
        _remove_data(state)
    return state


def stop_node(state: SandboxState, cluster: str, node_id: int, timeout: float = 30.0) -> None:
    node = state.cluster(cluster).node(node_id)
    stop_process(node.pid, node.start_ticks, timeout)


def start_node(
    state: SandboxState, cluster: str, node_id: int, heap_mb: int = 512, timeout: float = 120.0
) -> SandboxState:
    """Restart one stopped node with its existing data; returns (and saves) the new state."""
    cs = state.cluster(cluster)
    node = cs.node(node_id)
    if is_running(node):
        return state
    pid, ticks = _start_node(
        find_java(),
        state.jars,
        heap_mb,
        Path(node.node_dir) / "server.properties",
        Path(node.log_path),
        state.broker_extra_jars,
    )
    new_node = replace(node, pid=pid, start_ticks=ticks)
    new_state = state.with_node(cluster, new_node)
    save_state(new_state)
    _wait_ready(new_state.cluster(cluster), timeout)
    return new_state


@contextlib.contextmanager
def running(opts: SandboxOptions) -> Iterator[SandboxState]:
    """The sandbox for the duration of a block; always torn down, also on error or Ctrl-C."""
    try:
        state = up(opts)
        yield state
    finally:
        down(opts.workdir)
