"""What the sandbox started: written on ``up``, read by ``status`` and ``down``.

Each process is identified by its pid *and* its start time (from /proc), so ``down`` never
signals a process that merely reused a pid after the broker died.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from audit.errors import SandboxError
from audit.fsutil import atomic_write_json

STATE_FILE = "state.json"


@dataclass(frozen=True)
class NodeState:
    node_id: int
    roles: str  # "broker,controller" or "broker"
    port: int
    controller_port: int | None
    pid: int
    start_ticks: int
    node_dir: str
    log_path: str
    sasl_port: int | None = None  # the SASL_PLAINTEXT listener, when the sandbox has one

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass(frozen=True)
class ClusterState:
    name: str
    cluster_id: str
    nodes: tuple[NodeState, ...]

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def sasl_bootstrap(self) -> str | None:
        """The brokers' SASL/PLAIN listeners, or None when the sandbox was started without."""
        if any(n.sasl_port is None for n in self.nodes):
            return None
        return ",".join(f"127.0.0.1:{n.sasl_port}" for n in self.nodes)

    def node(self, node_id: int) -> NodeState:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(f"{self.name} has no node {node_id}")


@dataclass(frozen=True)
class SandboxState:
    workdir: str
    kafka_version: str
    jars: str
    clusters: tuple[ClusterState, ...]
    # Tiered storage (``SandboxOptions.tiered_storage``): the jar of the brokers' remote storage
    # manager (LocalTieredStorage), on their class path after ``jars``; None without.
    tiered_storage_jar: str | None = None

    @property
    def tiered_storage(self) -> bool:
        """Whether the brokers tier closed segments to remote storage (KIP-405): see
        ``audit.sandbox.cluster.remote_storage_dir``."""
        return self.tiered_storage_jar is not None

    @property
    def broker_extra_jars(self) -> tuple[str, ...]:
        """What the brokers' class path holds after ``jars``."""
        return (self.tiered_storage_jar,) if self.tiered_storage_jar else ()

    def cluster(self, name: str) -> ClusterState:
        for c in self.clusters:
            if c.name == name:
                return c
        raise KeyError(f"no sandbox cluster named {name!r}")

    def with_node(self, cluster: str, node: NodeState) -> SandboxState:
        """A copy with one node replaced (after a restart)."""
        clusters = tuple(
            ClusterState(
                c.name, c.cluster_id, tuple(node if n.node_id == node.node_id else n for n in c.nodes)
            )
            if c.name == cluster
            else c
            for c in self.clusters
        )
        return SandboxState(self.workdir, self.kafka_version, self.jars, clusters, self.tiered_storage_jar)


def save_state(state: SandboxState) -> Path:
    return atomic_write_json(Path(state.workdir) / STATE_FILE, asdict(state))


def load_state(workdir: Path) -> SandboxState | None:
    path = workdir / STATE_FILE
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        clusters = tuple(
            ClusterState(c["name"], c["cluster_id"], tuple(NodeState(**n) for n in c["nodes"]))
            for c in raw["clusters"]
        )
        return SandboxState(
            raw["workdir"], raw["kafka_version"], raw["jars"], clusters, raw.get("tiered_storage_jar")
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise SandboxError(
            f"sandbox state file {path} is corrupt ({exc}); remove it and stop any brokers by hand"
        ) from exc


def process_start_ticks(pid: int) -> int | None:
    """The process start time in clock ticks since boot, or None if there is no such live process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # Field 2 (comm) may contain spaces; everything after the last ')' is space-separated.
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):  # zombie or dead: reap it if it is our child
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        return None
    return int(fields[19])


def is_running(node: NodeState) -> bool:
    return process_start_ticks(node.pid) == node.start_ticks
