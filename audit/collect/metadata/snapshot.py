"""Take a ``mirror-audit-snapshot/1`` of one cluster, and of both in the safe order.

The destination is snapshotted first: a source that keeps growing while we read can then
only make the destination look further behind, never ahead (CM-OFFSET-1 stays honest).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from audit.collect.metadata.kafka_admin import CommittedOffset, GroupInfo, KafkaAdmin, TopicInfo, compaction
from audit.collect.metadata.mirror_state import MirrorState, read_mirror_state
from audit.collect.metadata.mm2_topics import collect_mm2
from audit.collect.metadata.tiers import TOPIC_CONFIGS, TopicConfigs, with_tiers
from audit.collect.metadata.transactions import collect_open_transactions, transactional_producers
from audit.config import AuditConfig
from audit.errors import ClusterError
from audit.faultpoints import pause_point
from audit.snapshot import (
    GroupOffsetRecord,
    GroupRecord,
    PartitionRecord,
    PartitionTraitRecord,
    ShareGroupOffsetRecord,
    Snapshot,
    make_manifest,
    write_snapshot,
)

log = logging.getLogger(__name__)

Role = Literal["source", "destination"]


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class SnapshotPlan:
    """What a mode reads of each cluster (its profile's part of the snapshot): which topics
    are in scope on each side, and whether MirrorMaker 2's own topics are read too."""

    topic_filter: Callable[[AuditConfig, Role], Callable[[str], bool]]
    reads_mm2_topics: bool = False
    # False: offsets only (the drain loop's polls): no groups, committed offsets or
    # transaction descriptions, which at thousands of groups cost as much as the offsets.
    reads_groups: bool = True


def _nothing_in_scope(cfg: AuditConfig, bootstrap: str, listed: int) -> ClusterError:
    """A source with no topic in scope is an error, not an empty audit: every invariant
    would be skipped and the run would end PASS (readiness GO) having checked nothing. It
    happens with a scope that matches nothing and, silently, with a principal that may not
    Describe the topics: Kafka leaves the topics it may not describe out of the list."""
    scope = cfg.scope.topics_shown()
    return ClusterError(
        f"source cluster ({bootstrap}): no topic in scope: the cluster lists {listed} topics to the "
        f"auditor and none is in scope.topics ({scope}; internal topics left out); check the "
        "patterns, and that the auditor's principal may Describe the topics (Kafka lists only "
        "those): see Permissions in docs/configuration.md"
    )


def collect_snapshot(cfg: AuditConfig, role: Role, plan: SnapshotPlan) -> Snapshot:
    """Read one cluster's partitions, groups and committed offsets (read-only)."""
    cluster_cfg = cfg.cluster(role)
    started_at = utc_now()
    t0 = time.monotonic()
    admin = KafkaAdmin(role, cluster_cfg)
    cluster_id = admin.cluster_id()
    listed = admin.topic_names()
    in_scope = plan.topic_filter(cfg, role)
    topics = [t for t in listed if in_scope(t)]
    if role == "source" and not topics:
        raise _nothing_in_scope(cfg, cluster_cfg.bootstrap_servers, len(listed))
    infos = admin.describe_topics(topics)
    # The groups are read beside the partitions: they share only the connections, and with
    # thousands of groups their DescribeGroups and OffsetFetch round trips cost as much as
    # the partitions' ListOffsets (at 5,000 partitions: 5.1 s beside 13.5 s, one after the
    # other until now). The partitions' error, when both fail, is the one reported.
    groups_read = _Beside(lambda: _groups(admin, cfg.java.kafka_classpath)) if plan.reads_groups else None
    partitions, open_positions = _partitions(admin, infos)
    configs: tuple[TopicConfigs, str | None] | None = None
    if plan.reads_groups:
        configs = admin.topic_configs(topics, TOPIC_CONFIGS)
        partitions, tier_note = with_tiers(role, configs, cluster_cfg, cfg.java.kafka_classpath, partitions)
    else:
        tier_note = "not read: offsets only (a drain poll)"
        partitions = [dataclasses.replace(p, tier_detail=tier_note) for p in partitions]
    read = groups_read.result() if groups_read is not None else _GroupsRead([], {}, None, {})
    groups, committed = read.groups, read.committed
    group_rows = [GroupRecord(g.group_id, g.group_type, g.state, g.member_count) for g in groups]
    offset_rows = [
        GroupOffsetRecord(gid, c.topic, c.partition, c.offset, c.leader_epoch, c.metadata)
        for gid, rows in committed.items()
        for c in rows
    ]
    if plan.reads_groups:
        txns, txn_note = collect_open_transactions(role, cluster_cfg, [tp for tp in open_positions])
    else:
        txns, txn_note = None, "not read: offsets only (a drain poll)"
    notes: dict[str, object] = {"open_transactions": txn_note, "tiered_storage": tier_note, **read.notes}
    if not plan.reads_groups:
        notes["groups"] = "not read: offsets only (a drain poll)"
    elif not admin.may_describe_cluster():
        notes["groups"] = (
            f"only the {len(groups)} groups this principal may Describe: without Describe on the "
            "cluster, Kafka lists no other group, and the group invariants cover these only"
        )
        log.warning("%s: %s (see Permissions in docs/configuration.md)", role, notes["groups"])
    mm2 = collect_mm2(admin, role, cfg.mirror.mm2) if plan.reads_mm2_topics else None
    if mm2 is not None:
        notes.update(mm2.notes)
    traits = None
    if mm2 is not None and mm2.offset_syncs is not None and role == "source":
        syncs = mm2.offset_syncs
        traits, traits_note = _partition_traits(admin, role, cluster_cfg, syncs, configs, set(topics))
        notes["partition_traits"] = traits_note
    manifest = make_manifest(
        role,
        cluster_id,
        started_at,
        utc_now(),
        scope={
            "topics": {"include": list(cfg.scope.topics.include), "exclude": list(cfg.scope.topics.exclude)},
            "groups": {"include": list(cfg.scope.groups.include), "exclude": list(cfg.scope.groups.exclude)},
            "include_internal_topics": cfg.scope.include_internal_topics,
        },
        client=cluster_cfg.redacted(),
        notes=notes,
    )
    log.info(
        "%s: %d topics, %d partitions, %d groups, %d committed offsets, %d open transactions in %.1fs",
        role,
        len(infos),
        len(partitions),
        len(group_rows),
        len(offset_rows),
        len(open_positions),
        time.monotonic() - t0,
    )
    return Snapshot(
        manifest=manifest,
        partitions=tuple(partitions),
        groups=tuple(group_rows),
        group_offsets=tuple(offset_rows),
        open_transactions=None if txns is None else tuple(txns),
        share_group_offsets=read.share_offsets,
        mm2_offset_syncs=mm2.offset_syncs if mm2 else None,
        mm2_checkpoints=mm2.checkpoints if mm2 else None,
        partition_traits=traits,
        mm2_positions=mm2.positions if mm2 else None,
    )


def _partition_traits(
    admin: KafkaAdmin,
    role: str,
    cluster_cfg: Any,
    syncs: Sequence[Any],
    configs: tuple[TopicConfigs, str | None] | None,
    topics: set[str],
) -> tuple[tuple[PartitionTraitRecord, ...], str]:
    """What tells a source offset MirrorMaker 2 passed over from a lost record, for every
    in-scope partition its offset syncs name (MM2-SKIP-1): compaction (the topic's
    cleanup.policy, from the snapshot's topic ``configs`` where it read them, else asked
    now) and its transactional producers (DescribeProducers). Unknown where the cluster did
    not answer, with why."""
    named = sorted({(s.topic, s.partition) for s in syncs if s.topic in topics})
    if configs is None:
        compacted, compaction_why = admin.compaction(sorted({t for t, _ in named}))
    else:
        compacted, compaction_why = compaction(configs[0]), configs[1]
    producers, producers_why = transactional_producers(role, cluster_cfg, named)
    why = "; ".join(w for w in (compaction_why, producers_why) if w) or None
    rows = tuple(PartitionTraitRecord(t, p, compacted.get(t), producers.get((t, p)), why) for t, p in named)
    note = f"{len(rows)} partitions: cleanup.policy and DescribeProducers" + (f" ({why})" if why else "")
    return rows, note


class _Beside:
    """A call run on a daemon thread beside the caller's own, its result (or error) taken
    later. A daemon, so that when the caller fails first the process exits without waiting
    out the other call's timeout."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._result: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[], Any]) -> None:
        try:
            self._result = call()
        except BaseException as exc:  # handed to the caller in result()
            self._error = exc

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result


@dataclass(frozen=True)
class _GroupsRead:
    groups: list[GroupInfo]
    committed: dict[str, list[CommittedOffset]]
    # None where share groups' start offsets were not read (the note says why).
    share_offsets: tuple[ShareGroupOffsetRecord, ...] | None
    notes: dict[str, str]


def _groups(admin: KafkaAdmin, java_classpath: str) -> _GroupsRead:
    """Every group, not only in-scope ones (CM-GROUP-3 must see excluded groups that were
    synced), Kafka Streams and share groups among them, the committed offsets of all but
    the share groups, and the share groups' start offsets where the Java client can read
    them; and manifest notes on what could not be listed or read."""
    groups = admin.list_groups()
    streams, share, note = admin.groups_by_type({g.group_id for g in groups})
    notes: dict[str, str] = {} if note is None else {"streams_groups": note, "share_groups": note}
    committed = admin.committed_offsets([g.group_id for g in [*groups, *streams]])
    share_offsets: tuple[ShareGroupOffsetRecord, ...] | None = ()
    if note is None and not share:
        notes["share_groups"] = "nothing in scope: the cluster lists no share group"
    elif share:
        read = _share_groups(admin, share, java_classpath)
        if isinstance(read, str):
            notes["share_groups"] = f"{len(share)} share groups listed, their start offsets not read: {read}"
            log.warning("%s: %s", admin.role, notes["share_groups"])
            share_offsets = None
        else:
            share, share_offsets = read
            notes["share_groups"] = f"{len(share)} share groups, start offsets read with Kafka's Java Admin"
    return _GroupsRead([*groups, *streams, *share], committed, share_offsets, notes)


def _share_groups(
    admin: KafkaAdmin, listed: list[GroupInfo], java_classpath: str
) -> tuple[list[GroupInfo], tuple[ShareGroupOffsetRecord, ...]] | str:
    """The listed share groups as the Java Admin describes them, and their start offsets;
    or why they could not be read."""
    from audit.collect.metadata.java_admin import java_admin, java_error

    with java_admin(admin.cfg, java_classpath) as java:
        if isinstance(java, str):
            return java
        try:
            described = java.share_groups([g.group_id for g in listed])
        except Exception as exc:  # a refusal (ACLs) or a timeout: the note, not the snapshot's end
            return java_error(exc)
    groups = [GroupInfo(g.group_id, "share", g.state, g.member_count) for g in described]
    return groups, tuple(o for g in described for o in g.offsets)


def _partitions(
    admin: KafkaAdmin, infos: list[TopicInfo]
) -> tuple[list[PartitionRecord], dict[tuple[str, int], int]]:
    """Every partition's offsets and leader epoch, and where each open transaction starts
    (its last stable offset, where it is below the high watermark)."""
    tps = [(t.name, p) for t in infos for p in sorted(t.leaders)]
    log_start = admin.list_offsets(tps, "earliest")
    pause_point("snapshot.offsets")
    # The newest timestamps are read beside the ends: one call's round trips and futures
    # overlap the other's. The ends keep their order (high watermark, then last stable
    # offset: read the other way, records arriving between the two reads would look like
    # an open transaction).
    newest_read = _Beside(lambda: admin.list_offsets(tps, "max_timestamp"))
    high = admin.list_offsets(tps, "latest")
    stable = admin.list_offsets(tps, "latest", committed=True)
    newest = newest_read.result()
    open_positions = {tp: stable[tp].offset for tp in tps if stable[tp].offset < high[tp].offset}
    open_ts = admin.record_timestamps(open_positions)
    partitions = []
    for info in infos:
        for p in sorted(info.leaders):
            tp = (info.name, p)
            partitions.append(
                PartitionRecord(
                    topic=info.name,
                    partition=p,
                    topic_id=info.topic_id,
                    leader=info.leaders[p],
                    leader_epoch=high[tp].leader_epoch,
                    log_start_offset=log_start[tp].offset,
                    high_watermark=high[tp].offset,
                    last_stable_offset=stable[tp].offset,
                    max_timestamp_ms=newest[tp].timestamp_ms if newest[tp].offset >= 0 else None,
                    open_txn_first_timestamp_ms=open_ts.get(tp),
                )
            )
    return partitions, open_positions


def with_mirror_state(snap: Snapshot, state: MirrorState, origin: str) -> Snapshot:
    """The snapshot with the mirror's state in it, and a manifest note of where it came from."""
    notes = {**snap.manifest.get("notes", {}), "mirror_state": state.note(origin)}
    return dataclasses.replace(
        snap, mirror_partitions=state.records, manifest={**snap.manifest, "notes": notes}
    )


def take_snapshots(
    cfg: AuditConfig, out: Path, plan: SnapshotPlan, mirror_state: Path | None = None
) -> tuple[Path, Path]:
    """Snapshot the destination, then the source, into ``out/destination`` and ``out/source``.

    Both clusters' settings are checked before either is read, and each directory appears
    only once complete. The mirror's own state (``mirror_state``, else
    ``mirror.state_file``) is read first and goes into the destination's snapshot: the
    cluster the mirror writes to.
    """
    cfg.cluster("destination")
    cfg.cluster("source")
    state_file = mirror_state or (Path(cfg.mirror.state_file) if cfg.mirror.state_file else None)
    state = read_mirror_state(state_file) if state_file is not None else None
    # Both are read before either is written: a failure on the source leaves no lone
    # destination snapshot behind to be mistaken for a usable pair.
    dst_snap = collect_snapshot(cfg, "destination", plan)
    if state is not None and state_file is not None:
        dst_snap = with_mirror_state(dst_snap, state, str(state_file))
    src_snap = collect_snapshot(cfg, "source", plan)
    # One pair id in both manifests: a crash between the two directories' renames leaves a
    # new destination beside an old source, which the audit then refuses (read_pair).
    pair = uuid.uuid4().hex
    dst_snap = dataclasses.replace(dst_snap, manifest={**dst_snap.manifest, "pair": pair})
    src_snap = dataclasses.replace(src_snap, manifest={**src_snap.manifest, "pair": pair})
    dst = write_snapshot(out / "destination", dst_snap)
    src = write_snapshot(out / "source", src_snap)
    return src, dst
