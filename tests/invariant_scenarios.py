"""The small snapshot pairs the invariant tests start from, one per catalogue (each
mode, failover verify, failback): on each, every invariant of the catalogue passes with
every input known. The generated tests change one thing of a pair (an input taken away:
tests/unit/test_unknown_never_passes.py; a fault or a threshold crossed:
tests/unit/test_invariant_outcomes.py) and fold the statuses as the validator does, on the
in-process engine, without Great Expectations or the report (fast)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.compare.engines import LocalTables
from audit.compare.run import Compared, run_compare
from audit.config import AuditConfig
from audit.config_file import parse_config
from audit.pipeline import compare_snapshots
from audit.profiles import Profile, failback_profile, failover_verify_profile, profile_of
from audit.snapshot import (
    Mm2CheckpointRecord,
    Mm2OffsetSyncRecord,
    Mm2PositionRecord,
    PartitionTraitRecord,
    ReadRangeRecord,
    read_pair,
    write_table,
)
from audit.validate.invariants import CLUSTER_MIRRORING, FAILBACK, FAILOVER_VERIFY, MM2, MM2_DATA, Invariant
from tests.snapshots import T0_MS, group, mirror, offset, part, write_pair
from tests.statuses import fold_statuses

# Each side's tables (snapshot table name -> its rows, the records tests/snapshots.py writes).
Pair = dict[str, dict[str, list[Any]]]

REMOTE = "source.orders"  # the mm2 replica of orders under the default replication policy
# A records scan's tables (mode mm2), written beside a snapshot.
SCANNED_TABLES = ("record_digests", "record_digest_ranges")
EXTRA_TABLES = ("partition_traits", "mm2_positions")


@dataclass(frozen=True)
class Scenario:
    """A pair on which every invariant of ``catalogue`` that declares inputs passes, with
    those inputs known: the tables of each side, as tests/snapshots.py writes them."""

    name: str
    config: str  # the audit config, YAML
    catalogue: tuple[Invariant, ...]
    tables: Pair
    # A failover job's own profile (given the readiness run it compares against), else the
    # mode's; ``before``: the pair that readiness run audited, where the job reads one.
    profile: Callable[[Path], Profile] | None = None
    before: Pair | None = None
    # Computes the data-level tables whose SQL both engines share (mode mm2's record
    # matching) in process, at this test's scale: its invariants join the test.
    records: bool = False

    @property
    def cfg(self) -> AuditConfig:
        return parse_config(self.config, env={})

    def job_profile(self, cfg: AuditConfig, before: Path) -> Profile:
        """The profile its catalogue is judged by (``before``: the readiness run a failover
        job compares against)."""
        return profile_of(cfg) if self.profile is None else self.profile(before)


@dataclass(frozen=True)
class Digest:
    """A row of record_digests (Spark writes them in a scan: no record class of its own)."""

    topic: str
    partition: int
    offset: int
    digest: int


def _scanned(topic: str, records: int, isolation: str) -> dict[str, list[Any]]:
    """A records scan of one partition in mode mm2: each record's digest (its content: the
    same on both sides) and the range read whole."""
    return {
        "record_digests": [Digest(topic, 0, o, 7000 + o) for o in range(records)],
        "record_digest_ranges": [
            ReadRangeRecord(topic, 0, 0, records, records, True, isolation, False, None)
        ],
    }


def _not_read(r: ReadRangeRecord) -> dict[str, ReadRangeRecord]:
    """A range the scan wrote but did not read whole, each way a scanner says so: refused at
    its start (what a read refused on the cluster, or a range no task reported, writes),
    stopped part way, and the two impossible accounts (read_to below its start; complete
    with read_to short of its end)."""
    refused = "TopicAuthorizationFailedError: read refused"
    return {
        "refused": dataclasses.replace(r, read_to=r.start_offset, complete=False, detail=refused),
        "stopped-early": dataclasses.replace(
            r, read_to=(r.start_offset + r.end_offset) // 2, complete=False, detail="KafkaTimeoutError"
        ),
        "read-to-below-start": dataclasses.replace(
            r, read_to=r.start_offset - 1, complete=False, detail=refused
        ),
        "complete-short-of-end": dataclasses.replace(r, read_to=r.end_offset - 1, complete=True, detail=None),
    }


# The snapshot tables that record what a scan read, each row turned into the ways it can say
# "present, but not read" (tests/unit/test_unknown_never_passes.py: none may pass).
NOT_READ: dict[str, Callable[[Any], dict[str, Any]]] = {
    "record_digest_ranges": _not_read,
    "record_chunk_ranges": _not_read,
}
# Those compared by PySpark only (audit/compare/records.py), not by the SQL both engines
# run: tests/spark/test_data_level_outcomes.py generates their not-read cases.
NOT_READ_ON_SPARK = frozenset({"record_chunk_ranges"})


class RecordScale(LocalTables):
    """The in-process engine computing the data-level tables whose SQL both engines share,
    as it never does for a run (a row per record): a few records here."""

    data_level = True


CM = "mirror:\n  preserves_topic_ids: true\n"


SCENARIOS = (
    # One partition lagging a little (so time lag is computed from both sides' timestamps),
    # a destination epoch well ahead, one group synced within the clamp, the mirror stopped.
    Scenario(
        "cluster-mirroring",
        CM,
        CLUSTER_MIRRORING,
        {
            "src": {
                "partitions": [part(leader_epoch=5, high_watermark=100, last_stable_offset=100)],
                "groups": [group("g")],
                "group_offsets": [offset("g", 90, epoch=5)],
            },
            "dst": {
                "partitions": [
                    part(
                        leader_epoch=9,
                        high_watermark=98,
                        last_stable_offset=98,
                        max_timestamp_ms=T0_MS - 1500,
                    )
                ],
                "groups": [group("g")],
                "group_offsets": [offset("g", 90, epoch=9)],
                # Stopped at the destination's end, as after a clean stop (CM-FAILOVER-1).
                "mirror_partitions": [mirror(last_offset=98, last_epoch=5, source_offset=100)],
            },
        },
    ),
    # MirrorMaker 2 with every record replicated: offset syncs at 0 and 50, a group
    # checkpointed at 60 -> 55 (within what the sync at 50 allows) and synced to it.
    Scenario(
        "mm2",
        "mode: mm2\nmirror:\n  mm2:\n    sync_group_offsets: true\n",
        # MirrorMaker 2's own invariants (the cluster-mirroring ones it keeps read other
        # tables in this mode; their inputs are declared for cluster-mirroring).
        MM2,
        {
            "src": {
                "partitions": [part()],
                "groups": [group("g")],
                "group_offsets": [offset("g", 60)],
                "mm2_offset_syncs": [
                    Mm2OffsetSyncRecord("orders", 0, 0, 0, 0, 0, 1000),
                    Mm2OffsetSyncRecord("orders", 0, 50, 50, 0, 1, 1001),
                ],
                # A plain topic: not compacted, no transactional producer.
                "partition_traits": [PartitionTraitRecord("orders", 0, False, 0)],
            },
            "dst": {
                "partitions": [part(REMOTE)],
                "groups": [group("g")],
                "group_offsets": [offset("g", 55, topic=REMOTE)],
                "mm2_checkpoints": [Mm2CheckpointRecord("g", REMOTE, 0, 60, 55, None, 0, 0, 2000)],
                # MirrorSourceConnector's position: the last record it copied is 99 (it reads on from 100).
                "mm2_positions": [Mm2PositionRecord("orders", 0, 99, 0, 0, 1000)],
            },
        },
    ),
    # MirrorMaker 2, record by record: ten records, each copied once and in order, synced
    # at the first and the last.
    Scenario(
        "mm2-records",
        "mode: mm2\n",
        MM2_DATA,
        {
            "src": {
                "partitions": [part(high_watermark=10, last_stable_offset=10)],
                "mm2_offset_syncs": [
                    Mm2OffsetSyncRecord("orders", 0, 0, 0, 0, 0, 1000),
                    Mm2OffsetSyncRecord("orders", 0, 9, 9, 0, 1, 1001),
                ],
                **_scanned("orders", 10, "read_uncommitted"),
            },
            "dst": {
                "partitions": [part(REMOTE, high_watermark=10, last_stable_offset=10)],
                **_scanned(REMOTE, 10, "read_committed"),
            },
        },
        records=True,
    ),
    # failover verify after a clean stop: readiness saw lag 2 (100 vs 98); the mirror
    # stopped at 98 with the source at 100 (2 lost, as predicted) and wrote one pid-reset
    # record (destination LEO 99), bumping the epoch past both; the group committed at 90
    # resumes at 90 on the destination.
    Scenario(
        "failover-verify",
        CM,
        FAILOVER_VERIFY,
        {
            "src": {
                "partitions": [part(leader_epoch=5, high_watermark=100, last_stable_offset=100)],
                "groups": [group("g")],
                "group_offsets": [offset("g", 90, epoch=5)],
            },
            "dst": {
                "partitions": [part(leader_epoch=9, high_watermark=99, last_stable_offset=99)],
                "groups": [group("g")],
                "group_offsets": [offset("g", 90, epoch=9)],
                "mirror_partitions": [mirror(last_offset=98, last_epoch=5, source_offset=100)],
            },
        },
        profile=failover_verify_profile,
        before={
            "src": {"partitions": [part(leader_epoch=5, high_watermark=100, last_stable_offset=100)]},
            "dst": {"partitions": [part(leader_epoch=5, high_watermark=98, last_stable_offset=98)]},
        },
    ),
    # failback readiness: the old source holds nothing past the last mirrored offset (100),
    # no transaction is open there and its group committed at 90, behind it.
    Scenario(
        "failback",
        CM,
        FAILBACK,
        {
            "src": {
                "partitions": [part(leader_epoch=5, high_watermark=100, last_stable_offset=100)],
                "groups": [group("g")],
                "group_offsets": [offset("g", 90, epoch=5)],
            },
            "dst": {
                "partitions": [part(leader_epoch=9, high_watermark=101, last_stable_offset=101)],
                "groups": [],
                "group_offsets": [],
                "mirror_partitions": [mirror(last_offset=100, last_epoch=5, source_offset=100)],
            },
        },
        profile=lambda _before: failback_profile(),
    ),
)


def with_partition_1(rows: list[Any]) -> list[Any]:
    """Each row of partition 0 and its twin on partition 1: the input made unknown on
    partition 0 must show although partition 1 passes beside it."""
    fields = {f.name for f in dataclasses.fields(rows[0])} if rows else set()
    if "partition" not in fields:
        return rows
    return [*rows, *(dataclasses.replace(r, partition=1) for r in rows if r.partition == 0)]


def write_scenario(root: Path, pair: Pair) -> tuple[Path, Path]:
    pair = {side: {t: with_partition_1(rows) for t, rows in tables.items()} for side, tables in pair.items()}
    src_t, dst_t = pair["src"], pair["dst"]
    src, dst = write_pair(
        root,
        src_t["partitions"],
        dst_t["partitions"],
        src_t.get("groups", []),
        dst_t.get("groups", []),
        src_t.get("group_offsets", []),
        dst_t.get("group_offsets", []),
        src_syncs=src_t.get("mm2_offset_syncs"),
        dst_checkpoints=dst_t.get("mm2_checkpoints"),
        dst_mirror=dst_t.get("mirror_partitions"),
    )
    for directory, tables in ((src, src_t), (dst, dst_t)):
        # A records scan's (mode mm2) and the snapshot's optional tables write_pair takes no
        # argument for, beside the snapshot.
        for table in (*SCANNED_TABLES, *EXTRA_TABLES):
            if table in tables:
                write_table(directory, table, tuple(tables[table]))
    return src, dst


def scenario_statuses(
    scenario: Scenario, pair: Pair, root: Path, cfg: AuditConfig | None = None
) -> dict[str, str]:
    """Each invariant's status as the validator folds it: fail or warn where a check of
    that severity rejects a row, warn where a check leaves a row unchecked, pass where it
    judged rows, skipped where none was in its checks' domains (nothing in scope)."""
    cfg = cfg or scenario.cfg
    compared, prof = scenario_compared(scenario, pair, root, cfg)
    return fold_statuses(compared, cfg, prof.suite_patterns)


def scenario_compared(
    scenario: Scenario, pair: Pair, root: Path, cfg: AuditConfig
) -> tuple[Compared, Profile]:
    """The pair's comparison tables on the in-process engine (the data-level ones at a few
    records' scale where the scenario has records), and the profile judging them."""
    before = root / "before"
    if scenario.before is not None:  # the readiness run the job compares against
        b_src, b_dst = write_scenario(root / "before-snapshots", scenario.before)
        compare_snapshots(b_src, b_dst, before, cfg, engine="local")
    prof = scenario.job_profile(cfg, before)
    src, dst = write_scenario(root, pair)
    if scenario.records:
        pair_read = read_pair(src, dst)
        compared = run_compare(RecordScale(), prof.comparisons, prof.inputs, pair_read, root / "run", cfg)
    else:
        compared = compare_snapshots(src, dst, root / "run", cfg, engine="local", prof=prof)
    return compared, prof
