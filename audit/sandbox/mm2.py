"""A real MirrorMaker 2 between the sandbox clusters, in dedicated mode.

``org.apache.kafka.connect.mirror.MirrorMaker`` from the connect-mirror jar on Maven Central
(fetched apart from the brokers' jars, only when MM2 is started, from the brokers' release or
the newest one below it that Maven Central serves), driven by a properties file of its own: one flow,
source alias -> target alias, checkpoints emitted every second, group offset sync
switchable. It is started and stopped like the brokers, by pid and /proc start time, and
its log is kept in the sandbox work dir (``mm2/mirror-maker.log``).

The aliases are "source" and "target": topics arrive on the destination cluster as
``source.<topic>`` (or unchanged with the identity policy), offset syncs are written to
``mm2-offset-syncs.target.internal`` (on the source; ``mm2-offset-syncs.source.internal``
where ``offset_syncs_location`` puts it on the target) and checkpoints to ``source.checkpoints.internal``,
which is what ``Mm2Config``'s defaults expect.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from confluent_kafka import Consumer, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from audit.errors import SandboxError
from audit.fsutil import atomic_write_json, atomic_write_text
from audit.java_runtime import find_java
from audit.sandbox.jars import ensure_mm2_jars
from audit.sandbox.processes import start_java, stop_process
from audit.sandbox.state import SandboxState, process_start_ticks
from audit.sandbox.traffic import client_conf, scan_messages

log = logging.getLogger(__name__)

MAIN_CLASS = "org.apache.kafka.connect.mirror.MirrorMaker"
SOURCE_ALIAS = "source"
TARGET_ALIAS = "target"
STATE_FILE = "mm2.json"


@dataclass(frozen=True)
class Mm2Options:
    topics: str = ".*"
    groups: str = ".*"
    sync_group_offsets: bool = False
    identity_policy: bool = False
    offset_syncs_location: Literal["source", "target"] = "source"
    # offset.lag.max: how far the downstream may run before MM2 queues a new offset sync.
    # MM2's own default, 100, is the one that makes translation dependable: MM2 keeps at
    # most 10 syncs in flight and only the newest queued one per partition, so with 0
    # (a sync per record) a burst of records replicated together, as at a task's start,
    # keeps an arbitrary sync as the partition's first; 50-record bursts after a restart
    # kept first syncs at upstream 1, 9, 99, 149 and 199. MM2 never translates an offset
    # below a partition's first sync, so a group committed there is never checkpointed (a
    # sandbox test waited 180 s for one). With 100, the first record's sync stays queued
    # until it is sent unless a record 100 offsets later replaces it.
    offset_lag_max: int = 100
    heap_mb: int = 512
    # <source alias>.consumer.isolation.level (None: the consumer's default, read_uncommitted:
    # aborted records are copied too).
    consumer_isolation: Literal["read_uncommitted", "read_committed"] | None = None


@dataclass(frozen=True)
class Mm2Process:
    pid: int
    start_ticks: int
    properties_path: str
    log_path: str
    options: Mm2Options
    # The connect-mirror release running (the brokers' own, or an older one where Maven
    # Central lacks it).
    kafka_version: str = ""

    @property
    def alive(self) -> bool:
        return process_start_ticks(self.pid) == self.start_ticks


def _mm2_dir(state: SandboxState) -> Path:
    return Path(state.workdir) / "mm2"


def properties(state: SandboxState, opts: Mm2Options) -> str:
    src, dst = state.cluster("source").bootstrap, state.cluster("destination").bootstrap
    lines = {
        "clusters": f"{SOURCE_ALIAS}, {TARGET_ALIAS}",
        f"{SOURCE_ALIAS}.bootstrap.servers": src,
        f"{TARGET_ALIAS}.bootstrap.servers": dst,
        f"{SOURCE_ALIAS}->{TARGET_ALIAS}.enabled": "true",
        f"{SOURCE_ALIAS}->{TARGET_ALIAS}.topics": opts.topics,
        f"{SOURCE_ALIAS}->{TARGET_ALIAS}.groups": opts.groups,
        f"{TARGET_ALIAS}->{SOURCE_ALIAS}.enabled": "false",
        "emit.checkpoints.enabled": "true",
        "emit.checkpoints.interval.seconds": "1",
        "sync.group.offsets.enabled": str(opts.sync_group_offsets).lower(),
        "sync.group.offsets.interval.seconds": "1",
        "refresh.topics.interval.seconds": "1",
        "refresh.groups.interval.seconds": "1",
        "emit.heartbeats.interval.seconds": "1",
        "offset.lag.max": str(opts.offset_lag_max),
        "offset-syncs.topic.location": opts.offset_syncs_location,
        "sync.topic.acls.enabled": "false",
        "dedicated.mode.enable.internal.rest": "false",
        # One broker per sandbox cluster is enough: every internal topic at replication 1.
        "replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
        "tasks.max": "1",
    }
    if opts.consumer_isolation is not None:
        lines[f"{SOURCE_ALIAS}.consumer.isolation.level"] = opts.consumer_isolation
    if opts.identity_policy:
        lines["replication.policy.class"] = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
    header = (
        "# Written by kafka-mirror-audit's sandbox (audit/sandbox/mm2.py); MirrorMaker 2 dedicated mode.\n"
    )
    return header + "".join(f"{k} = {v}\n" for k, v in lines.items())


def _save(state: SandboxState, proc: Mm2Process | None) -> None:
    path = _mm2_dir(state) / STATE_FILE
    if proc is None:
        path.unlink(missing_ok=True)
    else:
        atomic_write_json(path, asdict(proc))


def load(state: SandboxState) -> Mm2Process | None:
    path = _mm2_dir(state) / STATE_FILE
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return Mm2Process(**{**raw, "options": Mm2Options(**raw["options"])})
    except (ValueError, KeyError, TypeError) as exc:
        raise SandboxError(f"MirrorMaker 2 state file {path} is corrupt ({exc}); remove it") from exc


def start(state: SandboxState, opts: Mm2Options | None = None, timeout: float = 120.0) -> Mm2Process:
    """Start MirrorMaker 2 and wait until both its connectors have created their topics."""
    opts = opts or Mm2Options()
    running = load(state)
    if running is not None and running.alive:
        raise SandboxError(f"MirrorMaker 2 is already running (pid {running.pid}); stop it first")
    mm2_version, jars = ensure_mm2_jars(state.kafka_version)
    directory = _mm2_dir(state)
    directory.mkdir(parents=True, exist_ok=True)
    props = directory / "mm2.properties"
    atomic_write_text(props, properties(state, opts))
    log_path = directory / "mirror-maker.log"
    log_from = log_path.stat().st_size if log_path.exists() else 0
    pid, ticks = start_java(find_java(), str(jars), opts.heap_mb, MAIN_CLASS, [str(props)], log_path)
    proc = Mm2Process(pid, ticks, str(props), str(log_path), opts, mm2_version)
    _save(state, proc)
    try:
        _wait_started(state, proc, timeout)
        _wait_task_isolation(proc, log_from, timeout)
    except BaseException:
        stop(state)
        raise
    log.info(
        "MirrorMaker 2 (connect-mirror %s) running (pid %d) against Kafka %s brokers, log %s",
        mm2_version,
        pid,
        state.kafka_version,
        log_path,
    )
    return proc


def _wait_started(state: SandboxState, proc: Mm2Process, timeout: float) -> None:
    syncs_cluster = "source" if proc.options.offset_syncs_location == "source" else "destination"
    wanted = {
        (syncs_cluster, offset_syncs_topic(proc.options)),
        ("destination", f"{SOURCE_ALIAS}.checkpoints.internal"),
    }
    # MM2's heartbeat connector creates the source's ``heartbeats`` topic after start; the
    # source connector then sees a new topic and restarts its task, which resumes each
    # partition from its last flushed offset, so records produced before that restart may
    # be copied twice. Once the replica of ``heartbeats`` holds a record, that restart is
    # behind us. (A demo run once had no checkpoint of billing at 150 on orders-2 within
    # 300 s; that was first put down to this restart, but the burst that the task copies
    # after it is the likelier cause: see ``Mm2Options.offset_lag_max``.) Under the
    # identity policy the replica's name is the target's own heartbeats topic, so there is
    # nothing to tell apart and start does not wait.
    heartbeats = None if proc.options.identity_policy else remote_topic("heartbeats", proc.options)
    if heartbeats is not None:
        wanted.add(("destination", heartbeats))
    admins = {
        name: AdminClient(client_conf(state.cluster(name).bootstrap)) for name in ("source", "destination")
    }
    dst = Consumer(
        client_conf(state.cluster("destination").bootstrap, **{"group.id": "mirror-audit-never-joined"})
    )
    deadline = time.monotonic() + timeout
    try:
        while True:
            if not proc.alive:
                raise SandboxError(f"MirrorMaker 2 exited during start: see {proc.log_path}")
            found = {(name, t) for name, a in admins.items() for t in a.list_topics(timeout=10).topics}
            ready = wanted <= found and (heartbeats is None or _holds_a_record(dst, heartbeats))
            if ready:
                return
            if time.monotonic() > deadline:
                missing = ", ".join(f"{t} on {c}" for c, t in sorted(wanted - found))
                what = f"create {missing}" if missing else f"copy a heartbeat into {heartbeats}"
                raise SandboxError(f"MirrorMaker 2 did not {what} within {timeout:.0f}s: see {proc.log_path}")
            time.sleep(0.5)
    finally:
        dst.close()


def _wait_task_isolation(proc: Mm2Process, log_from: int, timeout: float) -> None:
    """Until the source task reads with this start's isolation level. A restarted worker
    first starts its tasks from the task configs stored by the previous run, and restarts
    them with the new ones only once the connector has recomputed them (seconds later): an
    aborted transaction produced in between would be copied by the old task."""
    wanted = proc.options.consumer_isolation or "read_uncommitted"
    deadline = time.monotonic() + timeout
    while True:
        with open(proc.log_path, "rb") as f:
            f.seek(log_from)
            logged = f.read().decode("utf-8", errors="replace")
        if task_isolation(logged) == wanted:
            return
        if not proc.alive or time.monotonic() > deadline:
            raise SandboxError(
                f"MirrorMaker 2's source task did not start reading {wanted} within {timeout:.0f}s: "
                f"see {proc.log_path}"
            )
        time.sleep(0.5)


def task_isolation(logged: str) -> str | None:
    """The isolation level of the newest replication consumer a MirrorMaker 2 log shows
    configured (Kafka clients log their configuration, a tab-indented "key = value" a line,
    client.id before isolation.level)."""
    newest, client = None, ""
    for line in logged.splitlines():
        if not line.startswith("\t"):
            client = ""
            continue
        key, _, value = line.strip().partition(" = ")
        if key == "client.id":
            client = value
        elif key == "isolation.level" and client.endswith("|replication-consumer"):
            newest = value
    return newest


def _holds_a_record(consumer: Consumer, topic: str) -> bool:
    """Partition 0 of ``topic`` has a record; a topic the admin client lists may still be
    unknown to this consumer's metadata or lack a leader for a moment: not yet, no error."""
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1] > 0
    except KafkaException:
        return False


def stop(state: SandboxState, timeout: float = 30.0) -> Mm2Process | None:
    """Stop the MirrorMaker 2 that ``start`` recorded, if any; its log stays."""
    proc = load(state)
    if proc is None:
        return None
    stop_process(proc.pid, proc.start_ticks, timeout)
    _save(state, None)
    return proc


def offsets_topic() -> str:
    """Where the dedicated-mode worker of the flow keeps its source tasks' positions (on the target)."""
    return f"mm2-offsets.{SOURCE_ALIAS}.internal"


def move_position(state: SandboxState, topic: str, partition: int, by: int) -> tuple[int, int]:
    """Move the committed source position of ``topic``-``partition`` by ``by`` records, as an
    operator editing Connect's offsets (or a bug, or a lost commit) would: forward, MirrorMaker
    2 never copies the next ``by`` records (they stay on the source, missing from the
    replica); back, it copies the last ``-by`` again (a task restarted behind its last
    commit: duplicates). Only while it is stopped (a running worker would overwrite the
    position). Returns (old, new) position: the offset of the last record counted as copied,
    as Connect stores it.

    Connect stores a position as a record keyed by the connector and the source partition
    (JSON), valued ``{"offset": N}``; its reader keeps the last record per key, so the new
    record reuses the stored key's exact bytes and partition."""
    running = load(state)
    if running is not None and running.alive:
        raise SandboxError("moving a position needs MirrorMaker 2 stopped: mirror-audit sandbox mm2-stop")
    dst = state.cluster("destination").bootstrap
    wanted = ["MirrorSourceConnector", {"cluster": SOURCE_ALIAS, "partition": partition, "topic": topic}]
    stored: tuple[bytes, int, int] | None = None
    for msg in _all_messages(dst, offsets_topic()):
        try:
            key, value = json.loads(msg.key() or b"null"), json.loads(msg.value() or b"null")
        except ValueError:
            continue
        if key == wanted and isinstance(value, dict) and isinstance(value.get("offset"), int):
            stored = (msg.key() or b"", msg.partition() or 0, value["offset"])
    if stored is None:
        raise SandboxError(f"MirrorMaker 2 has committed no position of {topic}-{partition} yet")
    key_bytes, at, old = stored
    new = old + by
    if new < -1:
        raise SandboxError(f"{topic}-{partition}: cannot move the position {old} back by {-by}")
    producer = Producer(client_conf(dst))
    producer.produce(offsets_topic(), key=key_bytes, value=json.dumps({"offset": new}).encode(), partition=at)
    if producer.flush(30) != 0:
        raise SandboxError(f"could not write MirrorMaker 2's position of {topic}-{partition}")
    return old, new


def _all_messages(bootstrap: str, topic: str) -> list[Message]:
    """Every message of every partition of ``topic``, each partition in offset order."""
    c = Consumer(client_conf(bootstrap, **{"group.id": "mirror-audit-never-joined"}))
    try:
        md = c.list_topics(topic, timeout=10).topics.get(topic)
        if md is None or md.error is not None:
            raise SandboxError(f"{topic} not found on {bootstrap}: has MirrorMaker 2 run?")
        marks = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in md.partitions}
    finally:
        c.close()
    return [m for p, (lo, hi) in sorted(marks.items()) for m in scan_messages(bootstrap, topic, p, lo, hi)]


def restart(state: SandboxState, timeout: float = 120.0) -> Mm2Process:
    """Stop and start again with the same options (tasks restart from their stored offsets)."""
    proc = load(state)
    opts = proc.options if proc is not None else Mm2Options()
    stop(state)
    return start(state, opts, timeout)


@contextlib.contextmanager
def running(state: SandboxState, opts: Mm2Options | None = None) -> Iterator[Mm2Process]:
    """MirrorMaker 2 for the duration of a block; always stopped, also on error."""
    try:
        yield start(state, opts)
    finally:
        stop(state)


def offset_syncs_topic(opts: Mm2Options) -> str:
    """MirrorMaker 2 names its offset-syncs topic after the cluster it is not on: as the
    auditor's configuration of the same MirrorMaker 2 names it."""
    from audit.config import Mm2Config

    return Mm2Config(
        source_alias=SOURCE_ALIAS,
        target_alias=TARGET_ALIAS,
        offset_syncs_topic_location=opts.offset_syncs_location,
    ).offset_syncs_topic_name()


def remote_topic(topic: str, opts: Mm2Options) -> str:
    return topic if opts.identity_policy else f"{SOURCE_ALIAS}.{topic}"


def latest_checkpoints(bootstrap: str) -> dict[tuple[str, str, int], tuple[int, int]]:
    """(group, replica topic, partition) -> (upstream, downstream) of the newest checkpoint
    in the target's checkpoints topic so far, read by assignment (no group joined)."""
    from audit.collect.metadata.mm2_formats import Mm2RecordError, decode_checkpoint

    c = Consumer(
        client_conf(bootstrap, **{"group.id": "mirror-audit-never-joined", "enable.auto.commit": False})
    )
    out: dict[tuple[str, str, int], tuple[int, int]] = {}
    topic = f"{SOURCE_ALIAS}.checkpoints.internal"
    try:
        md = c.list_topics(topic, timeout=10).topics.get(topic)
        if md is None or md.error is not None:
            return out
        for p in sorted(md.partitions):
            low, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            if high <= low:
                continue
            c.assign([TopicPartition(topic, p, low)])
            while True:
                msg = c.poll(2.0)
                if msg is None:
                    break
                if msg.error() is None:
                    try:
                        ck = decode_checkpoint(msg.key(), msg.value())
                    except Mm2RecordError:
                        continue
                    out[(ck.group_id, ck.topic, ck.partition)] = (ck.upstream_offset, ck.downstream_offset)
                if (msg.offset() or 0) + 1 >= high:
                    break
    finally:
        c.close()
    return out
