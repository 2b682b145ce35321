"""Starting, pausing and stopping the sandbox's continuous mirror (``mirror_process``), and
the failover around its stop: what ``mirror-audit sandbox mirror-start / mirror-pause /
mirror-state / failover`` and the failover demo do.

The mirror runs as its own process, recorded in the work dir by pid and /proc start time
like the brokers, so any later command (or a test) can pause or stop it. Its state file is
in the DescribeClusterMirrors shape, and what the audit imports (``mirror.state_file``).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from audit.errors import SandboxError
from audit.fsutil import atomic_write_json
from audit.sandbox.leaders import move_leaders
from audit.sandbox.processes import start_process, stop_process
from audit.sandbox.state import SandboxState, process_start_ticks

log = logging.getLogger(__name__)

PROCESS_FILE = "mirror.json"


@dataclass(frozen=True)
class MirrorProcess:
    pid: int
    start_ticks: int
    state_path: str
    control_path: str
    log_path: str
    topics: str
    groups: str | None

    @property
    def alive(self) -> bool:
        return process_start_ticks(self.pid) == self.start_ticks


def mirror_dir(state: SandboxState) -> Path:
    return Path(state.workdir) / "mirror"


def state_path(state: SandboxState) -> Path:
    """The mirror's per-partition state (DescribeClusterMirrors shape), kept after a stop."""
    return mirror_dir(state) / "state.json"


def load(state: SandboxState) -> MirrorProcess | None:
    path = mirror_dir(state) / PROCESS_FILE
    if not path.exists():
        return None
    try:
        return MirrorProcess(**json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as exc:
        raise SandboxError(f"mirror process file {path} is corrupt ({exc}); remove it") from exc


def start(
    state: SandboxState,
    topics: str = ".*",
    groups: str | None = ".*",
    interval: float = 0.5,
    timeout: float = 60.0,
) -> MirrorProcess:
    """Start the continuous mirror and wait for its first full cycle (its state file)."""
    running = load(state)
    if running is not None and running.alive:
        raise SandboxError(f"the mirror is already running (pid {running.pid}); stop it first")
    directory = mirror_dir(state)
    directory.mkdir(parents=True, exist_ok=True)
    status, control = state_path(state), directory / "control.json"
    status.unlink(missing_ok=True)
    atomic_write_json(control, {"paused_topics": []})
    cmd = [
        sys.executable,
        "-m",
        "audit.sandbox.mirror_process",
        "--source",
        state.cluster("source").bootstrap,
        "--destination",
        state.cluster("destination").bootstrap,
        "--topics",
        topics,
        "--state",
        str(status),
        "--control",
        str(control),
        "--interval",
        str(interval),
    ]
    if groups:
        cmd += ["--groups", groups]
    log_path = directory / "mirror.log"
    pid, ticks = start_process(cmd, log_path)
    proc = MirrorProcess(pid, ticks, str(status), str(control), str(log_path), topics, groups)
    atomic_write_json(directory / PROCESS_FILE, asdict(proc))
    deadline = time.monotonic() + timeout
    while not status.exists():
        if not proc.alive:
            raise SandboxError(f"the mirror exited at start; see {log_path}")
        if time.monotonic() > deadline:
            stop_process(pid, ticks, 10)
            raise SandboxError(f"the mirror wrote no state within {timeout:.0f}s; see {log_path}")
        time.sleep(0.1)
    log.info("mirror running (pid %d), state %s, log %s", pid, status, log_path)
    return proc


def _running(state: SandboxState) -> MirrorProcess:
    proc = load(state)
    if proc is None or not proc.alive:
        raise SandboxError(
            "the sandbox's mirror is not running: start it with 'mirror-audit sandbox mirror-start'"
        )
    return proc


def pause(state: SandboxState, topics: list[str]) -> None:
    """Stop copying ``topics`` (their partitions turn PAUSED) until ``pause`` leaves them out."""
    proc = _running(state)
    atomic_write_json(Path(proc.control_path), {"paused_topics": sorted(topics)})


def read_state(state: SandboxState) -> dict[str, Any]:
    path = state_path(state)
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise SandboxError(
            f"the mirror has written no state ({path}): start it with 'sandbox mirror-start'"
        ) from None


def partition_states(state: SandboxState) -> dict[tuple[str, int], dict[str, Any]]:
    """The state file's partitions by (topic, partition)."""
    out = {}
    for mirror in read_state(state).get("Mirrors", []):
        for topic in mirror.get("Topics", []):
            for p in topic.get("Partitions", []):
                out[(topic["TopicName"], int(p["PartitionIndex"]))] = p
    return out


def wait_caught_up(state: SandboxState, timeout: float = 120.0) -> None:
    """Until two cycles after this call have found every partition not PAUSED with nothing
    left to copy (the destination's LEO at the source's high watermark)."""
    path = state_path(state)
    deadline = time.monotonic() + timeout
    seen, fresh = path.stat().st_mtime_ns, 0
    while time.monotonic() < deadline:
        _running(state)
        mtime = path.stat().st_mtime_ns
        if mtime != seen:
            seen = mtime
            parts = partition_states(state).values()
            behind = [
                p
                for p in parts
                if p["StateValue"] == "MIRRORING" and p["DestinationOffset"] < p["SourceOffset"]
            ]
            fresh = fresh + 1 if not behind else 0
            if fresh >= 2:
                return
        time.sleep(0.1)
    raise SandboxError(f"the mirror did not catch up within {timeout:.0f}s")


def failover(state: SandboxState, timeout: float = 60.0) -> dict[tuple[str, int], dict[str, Any]]:
    """KIP-1279's stop on the sandbox: the mirror process stops (last mirrored offset and
    epoch recorded, transactions in flight aborted, STOPPED), then every mirrored
    partition's destination leader epoch is raised by a real leader move, as the stop's
    epoch bump does. Returns the recorded state per partition."""
    proc = _running(state)
    stop_process(proc.pid, proc.start_ticks, timeout)
    (mirror_dir(state) / PROCESS_FILE).unlink(missing_ok=True)
    parts = partition_states(state)
    not_stopped = sorted(f"{t}-{p}" for (t, p), s in parts.items() if s["StateValue"] != "STOPPED")
    if not_stopped:
        raise SandboxError(
            f"the mirror did not record STOPPED for {', '.join(not_stopped)}; see {proc.log_path}"
        )
    move_leaders(state.cluster("destination").bootstrap, [TopicPartition(t, p) for t, p in sorted(parts)])
    log.info("failover: mirror stopped, %d destination partitions moved to a new leader epoch", len(parts))
    return parts


def stop(state: SandboxState, timeout: float = 30.0) -> MirrorProcess | None:
    """Stop the mirror without the failover's leader moves (the sandbox going down)."""
    proc = load(state)
    if proc is None:
        return None
    stop_process(proc.pid, proc.start_ticks, timeout)
    (mirror_dir(state) / PROCESS_FILE).unlink(missing_ok=True)
    return proc
