"""The mm2 invariants on hand-made snapshots: one fault per group or partition, each caught by
the invariant that owns it; a healthy pair passes; what was not collected is skipped. On the
in-process engine: tests/spark/test_engine_parity.py holds Spark's tables, summary and
failover plan equal to its own for each of these pairs ("mm2-*")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from audit.config_file import parse_config
from audit.jobs import READINESS
from audit.pipeline import audit_snapshots
from audit.snapshot import (
    Mm2CheckpointRecord,
    Mm2OffsetSyncRecord,
    Mm2PositionRecord,
    PartitionTraitRecord,
    write_table,
)
from audit.validate.invariants import CM_IN_MM2, MM2
from tests.snapshots import group, offset, part, write_pair

CFG = parse_config(
    "mode: mm2\nmirror:\n  mm2:\n    sync_group_offsets: true\n"
    "scope:\n  topics:\n    exclude: ['local-only']\n",
    env={},
)
REMOTE = "source.orders"
MM2_ONLY = parse_config("mode: mm2\n", env={})
NOT_APPLICABLE = "assumes equal offsets on both clusters: not applicable in mode mm2"


def sync(partition: int, up: int, down: int, rec: int) -> Mm2OffsetSyncRecord:
    return Mm2OffsetSyncRecord("orders", partition, up, down, 0, rec, 1000 + rec)


def ckpt(gid: str, partition: int, up: int, down: int, rec: int) -> Mm2CheckpointRecord:
    return Mm2CheckpointRecord(gid, REMOTE, partition, up, down, None, 0, rec, 2000 + rec)


def _pair(root: Path, faulty: bool) -> tuple[Path, Path]:
    syncs = [sync(0, 0, 0, 0), sync(0, 50, 50, 1), sync(1, 0, 0, 3), sync(1, 10, 10, 4)]
    checkpoints = [
        ckpt("g1", 0, 30, 30, 0),
        ckpt("g1", 0, 60, 55, 1),
        ckpt("g1", 1, 20, 20, 2),
        ckpt("g2", 0, 40, 40, 3),
        ckpt("g3", 1, 25, 25, 5),
        ckpt("g5", 0, 30, 30, 6),
    ]
    src_offsets = [
        offset("g1", 60, partition=0),
        offset("g1", 20, partition=1),
        offset("g2", 40, partition=0),
        offset("g3", 25, partition=1),
        offset("g5", 30, partition=0),
        offset("g1", 5, topic="local-only"),  # not mirrored: never judged
    ]
    dst_offsets = [
        offset("g1", 55, topic=REMOTE, partition=0),
        offset("g1", 20, topic=REMOTE, partition=1),
        offset("g2", 40, topic=REMOTE, partition=0),
        offset("g3", 25, topic=REMOTE, partition=1),
        offset("g5", 30, topic=REMOTE, partition=0),
    ]
    src_parts = [part("orders", 0), part("orders", 1), part("local-only")]
    dst_parts = [part(REMOTE, 0), part(REMOTE, 1, log_start_offset=20 if faulty else 0)]
    dst_groups = [group(g) for g in ("g1", "g2", "g3", "g4", "g5")]
    if faulty:
        syncs.append(sync(0, 40, 60, 2))  # MM2-SYNC-1: upstream went back
        checkpoints[2] = ckpt("g1", 1, 20, 25, 2)  # MM2-CKPT-3: best sync (10, 10) allows 20
        checkpoints.insert(3, ckpt("g2", 0, 50, 50, 3))  # MM2-CKPT-1: g2 then goes back to 40
        checkpoints[4] = ckpt("g2", 0, 40, 40, 4)
        checkpoints[5] = ckpt("g3", 1, 15, 5, 5)  # MM2-CKPT-2: below the target's log start (20)
        src_offsets[3] = offset("g3", 15, partition=1)  # (so that g3's checkpoint stays fresh)
        src_offsets[2] = offset("g2", 45, partition=0)  # MM2-CKPT-4 warns: stale by 5
        src_offsets.append(offset("g4", 10, partition=0))  # MM2-CKPT-4 fails: no checkpoint
        # ... and g6 too, committed below the first offset sync of late-0 (15), where MM2
        # translates nothing.
        src_offsets.append(offset("g6", 5, topic="late", partition=0))
        dst_offsets[1] = offset("g1", 25, topic=REMOTE, partition=1)  # keeps GROUP-1 on g1 p1 clean
        dst_offsets[3] = offset("g3", 7, topic=REMOTE, partition=1)  # MM2-GROUP-1: not the checkpoint's 5
        # MM2-READY-1: g5 is live on the target (its own offset there, never judged by
        # MM2-GROUP-1), and "late" has 10 records the replica has not received.
        dst_groups[4] = group("g5", "STABLE", 1)
        dst_offsets[4] = offset("g5", 10, topic=REMOTE, partition=0)
        src_parts.append(part("late", 0, high_watermark=30))
        dst_parts.append(part("source.late", 0, high_watermark=20))
        syncs.append(Mm2OffsetSyncRecord("late", 0, 15, 15, 0, 9, 1009))
    src, dst = write_pair(
        root,
        src_parts,
        dst_parts,
        src_groups=[group(g) for g in ("g1", "g2", "g3", "g4", "g5", "g6")],
        dst_groups=dst_groups,
        src_offsets=src_offsets,
        dst_offsets=dst_offsets,
        src_syncs=syncs,
        dst_checkpoints=checkpoints,
    )
    # MirrorSourceConnector's positions in Connect's offsets topic: caught up on orders.
    positions = (
        Mm2PositionRecord("orders", 0, 99, 0, 0, 1000),
        Mm2PositionRecord("orders", 1, 99, 0, 1, 1001),
    )
    write_table(dst, "mm2_positions", positions)
    return src, dst


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The faulty pair audited by the in-process engine (Spark's run of it: the parity test's
    "mm2-faulty" scenario)."""
    root = tmp_path_factory.mktemp("mm2-faulty-local")
    src, dst = _pair(root, faulty=True)
    outcome = audit_snapshots(src, dst, root / "run", CFG, job=READINESS, engine="local")
    assert outcome.summary["run"]["engine"] == "local"
    return outcome.summary


def _keys(checks: list[dict[str, Any]], severity: str, *cols: str) -> set[tuple[Any, ...]]:
    """The examples' keys; a missing key column reads as the row's topic (mixed-table invariants)."""
    return {
        tuple(e.get(c, e.get("topic")) for c in cols)
        for c in checks
        if c["severity"] == severity
        for e in c["examples"]
    }


@pytest.mark.parametrize(
    ("invariant", "keys", "cols"),
    [
        ("MM2-SYNC-1", {("orders", 0, 2)}, ("topic", "partition", "record_offset")),
        ("MM2-CKPT-1", {("g2", 0, 4)}, ("group_id", "partition", "record_offset")),
        ("MM2-CKPT-2", {("g3", 1)}, ("group_id", "partition")),
        ("MM2-CKPT-3", {("g1", 1, 2)}, ("group_id", "partition", "record_offset")),
        ("MM2-CKPT-4", {("g4", "orders", 0), ("g6", "late", 0)}, ("group_id", "topic", "partition")),
        ("MM2-GROUP-1", {("g3", 1)}, ("group_id", "partition")),
        ("MM2-READY-1", {("g5", 0), ("late", 0)}, ("group_id", "partition")),
    ],
)
def test_each_mm2_fault_caught_by_its_invariant(
    faulty: dict[str, Any], invariant: str, keys: set[tuple[Any, ...]], cols: tuple[str, ...]
) -> None:
    inv = faulty["invariants"][invariant]
    assert inv["status"] == "fail", inv
    assert _keys(inv["checks"], "fail", *cols) == keys
    assert inv["evaluated"] > len(keys)


def test_stale_checkpoint_warns(faulty: dict[str, Any]) -> None:
    checks = faulty["invariants"]["MM2-CKPT-4"]["checks"]
    assert _keys(checks, "warn", "group_id", "staleness_records") == {("g2", 5)}


def test_a_missing_checkpoint_shows_the_first_offset_sync_of_its_partition(faulty: dict[str, Any]) -> None:
    """g6 committed below the first sync of late-0, which MM2 cannot translate; g4 did not."""
    checks = faulty["invariants"]["MM2-CKPT-4"]["checks"]
    assert _keys(checks, "fail", "group_id", "src_committed_offset", "first_sync_upstream_offset") == {
        ("g4", 10, 0),
        ("g6", 5, 15),
    }


def test_mm2_summary_contract(faulty: dict[str, Any]) -> None:
    assert (faulty["verdict"], faulty["mode"], faulty["readiness"]) == ("FAIL", "mm2", "NO-GO")
    for inv_id, inv in faulty["invariants"].items():
        if inv_id.startswith("CM-") and inv_id not in CM_IN_MM2:
            assert (inv["status"], inv["reason"]) == ("skipped", NOT_APPLICABLE), inv_id
    assert faulty["invariants"]["CM-TOPIC-1"]["status"] == "pass"
    assert faulty["expected_loss_records"] == 10  # "late": 30 on the source, 20 replicated
    assert faulty["run"]["total_lag_records"] == 10
    # Reprocessing after translating the latest checkpoints (groups inactive on the target),
    # staleness plus what the translation gave away against the syncs' bound: g1 p0 55 of 60
    # (5); g1 p1 over-translated (0, it skips 5 instead); g2 stale by 5 and 40 of 60 (the
    # backwards sync (40, 60) sets that bound: 20); g3 5 of 15 (10); g4 has no checkpoint.
    assert faulty["expected_reprocess_records"] == 5 + 0 + (5 + 20) + 10
    plan = faulty["failover_plan"]
    assert (plan["groups"], plan["skip_records"]) == (4, 5)  # g1 p1 was over-translated by 5


def test_failover_plan_files_can_be_read_by_kafka_tooling(faulty: dict[str, Any]) -> None:
    plan_dir = Path(faulty["failover_plan"]["path"])
    assert (plan_dir / "groups" / "g1.csv").read_text() == f"{REMOTE},0,55\n{REMOTE},1,25\n"
    commands = (plan_dir / "commands.txt").read_text()
    assert "--group 'g1' --reset-offsets --from-file 'groups/g1.csv' --dry-run" in commands
    assert "--execute" not in commands.replace("replace --dry-run with --execute", "")
    rows = json.loads((plan_dir / "plan.json").read_text())["rows"]
    assert len(rows) == faulty["failover_plan"]["partitions"]


def test_healthy_mm2_pair_passes(tmp_path: Path) -> None:
    src, dst = _pair(tmp_path, faulty=False)
    outcome = audit_snapshots(src, dst, tmp_path / "run", CFG, engine="local")
    statuses = {k: v["status"] for k, v in outcome.summary["invariants"].items()}
    assert outcome.summary["verdict"] == "PASS", statuses
    assert {k for k, s in statuses.items() if s == "pass"} == {i.id for i in MM2} | set(CM_IN_MM2)
    report = outcome.report.read_text()
    assert "Records not yet replicated" in report and "Epoch headroom" not in report
    assert outcome.summary["run"]["total_lag_records"] == 0


def _without_mm2_tables(root: Path) -> tuple[Path, Path]:
    return write_pair(root, [part("orders")], [part(REMOTE)], src_offsets=[offset("g", 1)])


def test_without_mm2_tables_every_mm2_invariant_is_skipped(tmp_path: Path) -> None:
    src, dst = _without_mm2_tables(tmp_path)
    outcome = audit_snapshots(src, dst, tmp_path / "run", CFG, engine="local")
    statuses = {k: v["status"] for k, v in outcome.summary["invariants"].items()}
    # No checkpoints and no offset syncs at all: the group's missing checkpoint and the
    # partition no sync shows replicated are findings, not skips.
    assert statuses.pop("MM2-CKPT-4") == "fail"
    assert statuses.pop("MM2-READY-1") == "fail"
    assert statuses.pop("CM-TOPIC-1") == "pass"  # the replica exists
    assert set(statuses.values()) == {"skipped"}, statuses


def test_mm2_readiness_runs_in_process_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No JVM: mode mm2's readiness takes the in-process engine like cluster-mirroring's."""
    from audit.cli import main

    src, dst = _pair(tmp_path, faulty=True)
    cfg = tmp_path / "mm2.yaml"
    cfg.write_text("mode: mm2\nmirror:\n  mm2:\n    sync_group_offsets: true\n")
    run = tmp_path / "run"
    code = main(
        [
            "readiness",
            "--config",
            str(cfg),
            "--source",
            str(src),
            "--destination",
            str(dst),
            "--out",
            str(run),
        ]
    )
    assert code == 1, capsys.readouterr().err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["run"]["engine"] == "local"
    assert summary["readiness"] == "NO-GO" and summary["mode"] == "mm2"


# orders-0: not compacted, no transactional producer.
PLAIN = (PartitionTraitRecord("orders", 0, False, 0),)


def _skipped_pair(root: Path, traits: Any) -> tuple[Path, Path]:
    """Issue 55's reproduction: orders-0's offset syncs go (0, 0), (999, 999), (1200, 1000),
    (1900, 1700); the source's log start is 1200 and the topic is plain. The replica ends
    where the last sync puts it (1,700 copies: 0-999 and 1200-1899; the issue's 1,800 would
    also be more than the mirror wrote, which MM2-READY-1 fails on its own). At the sync
    after the jump the offset delta moved from 0 to 200: the records 1000-1199 were never
    copied and the source no longer holds them."""
    src, dst = write_pair(
        root,
        [part(log_start_offset=1200, high_watermark=1900, last_stable_offset=1900)],
        [part(REMOTE, log_start_offset=0, high_watermark=1700, last_stable_offset=1700)],
        src_syncs=[sync(0, 0, 0, 0), sync(0, 999, 999, 1), sync(0, 1200, 1000, 2), sync(0, 1900, 1700, 3)],
    )
    if traits is not None:
        write_table(src, "partition_traits", tuple(traits))
    return src, dst


def test_records_the_mirror_passed_over_on_a_plain_topic_are_lost_and_readiness_says_no_go(
    tmp_path: Path,
) -> None:
    src, dst = _skipped_pair(tmp_path, PLAIN)
    outcome = audit_snapshots(src, dst, tmp_path / "run", MM2_ONLY, job=READINESS, engine="local")
    summary = outcome.summary
    assert (summary["readiness"], outcome.exit_code) == ("NO-GO", 1)
    assert summary["lost_records"] == 200
    assert summary["expected_loss_records"] == 0  # the loss already happened: apart from a failover's
    skip = summary["invariants"]["MM2-SKIP-1"]
    assert skip["status"] == "fail" and skip["violations"] == 1
    (example,) = skip["examples"]
    assert (example["skipped_from_offset"], example["upstream_offset"], example["lost_records"]) == (
        1000,
        1200,
        200,
    )
    assert (example["prev_timestamp_ms"], example["timestamp_ms"]) == (1001, 1002)  # since when
    assert summary["readiness_reasons"] == ["MM2-SKIP-1 failed (1 rows)"]  # nothing else is wrong
    # By partition, with since when: what a person reads first (the report shows the same).
    assert summary["lost_by_partition"] == [
        {
            "topic": "orders",
            "partition": 0,
            "lost_records": 200,
            "gaps": 1,
            "first_lost_offset": 1000,
            "lost_after_ms": 1001,
            "lost_by_ms": 1002,
            "accepted": False,
        }
    ]
    report = (tmp_path / "run" / "report" / "index.html").read_text()
    assert "Records known lost" in report and "1970-01-01 00:00:01 UTC" in report


def test_without_what_explains_a_gap_it_is_unchecked_never_passed(tmp_path: Path) -> None:
    """The snapshot could not say whether the topic is compacted or transactional (an older
    snapshot, or a cluster that refused DescribeConfigs / DescribeProducers): the gap is
    unchecked with that cause, the figure unknown, and readiness cannot say GO."""
    src, dst = _skipped_pair(tmp_path, None)
    summary = audit_snapshots(src, dst, tmp_path / "run", MM2_ONLY, job=READINESS, engine="local").summary
    skip = summary["invariants"]["MM2-SKIP-1"]
    assert skip["status"] == "warn" and skip["unchecked"] == 1, skip
    assert summary["lost_records"] is None
    assert "compaction, transactional producers" in summary["unknown_figures"]["lost_records"]["reason"]
    assert summary["readiness"] == "NO-GO"
    assert any("what explains a skipped source offset" in r for r in summary["readiness_reasons"])


def test_a_known_loss_the_operator_accepts_by_topic_warns_and_is_said_on_every_run(tmp_path: Path) -> None:
    src, dst = _skipped_pair(tmp_path, PLAIN)
    cfg = parse_config("mode: mm2\nreadiness:\n  accept_lost: ['orders']\n", env={})
    summary = audit_snapshots(src, dst, tmp_path / "run", cfg, job=READINESS, engine="local").summary
    assert summary["invariants"]["MM2-SKIP-1"]["status"] == "warn"
    assert summary["lost_records"] == 200  # accepted, still known: never hidden from the figure
    assert summary["readiness"] == "GO", summary["readiness_reasons"]
    (line,) = summary["accepted_unchecked"]
    assert "MM2-SKIP-1: 1 offset sync gaps" in line and "orders" in line and "readiness.accept_lost" in line


def test_a_source_topic_recreated_under_the_mirror_fails_naming_both_ids(tmp_path: Path) -> None:
    """The newest earlier run of the pair (its history under the output root) saw orders
    with another topic id: the topic was deleted and recreated under the mirror, whose
    offset syncs and replica still describe the old one."""
    runs = tmp_path / "runs"
    before_src, before_dst = write_pair(
        tmp_path / "before", [part()], [part(REMOTE)], src_syncs=[sync(0, 0, 0, 0)]
    )
    first = audit_snapshots(before_src, before_dst, runs / "1", MM2_ONLY, job=READINESS, engine="local")
    assert first.summary["invariants"]["MM2-SKIP-2"]["status"] == "pass"  # nothing earlier to compare with
    src, dst = write_pair(
        tmp_path / "after", [part(topic_id="id-orders-new")], [part(REMOTE)], src_syncs=[sync(0, 0, 0, 0)]
    )
    summary = audit_snapshots(src, dst, runs / "2", MM2_ONLY, job=READINESS, engine="local").summary
    skip = summary["invariants"]["MM2-SKIP-2"]
    assert skip["status"] == "fail", skip
    (example,) = [e for c in skip["checks"] for e in c["examples"]]
    assert (example["topic"], example["src_topic_id"], example["previous_src_topic_id"]) == (
        "orders",
        "id-orders-new",
        "id-orders",
    )
    assert summary["readiness"] == "NO-GO"


def _source_reads(run: Path, rows: list[tuple[str, int, int]], topic_id: str = "id-orders") -> None:
    """Stand in for what a nightly's records scan of orders-0 left in ``run`` (kind, start,
    end exclusive), read uncommitted: its mm2_source_reads as the Spark engine writes it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from audit.schemas import arrow_schema

    names = ("topic", "partition", "topic_id", "kind", "start_offset", "end_offset", "read_committed")
    data = [("orders", 0, topic_id, kind, lo, hi, False) for kind, lo, hi in rows]
    table = pa.Table.from_pylist(
        [dict(zip(names, r, strict=True)) for r in data],
        schema=arrow_schema("mm2_source_reads", "comparison"),
    )
    pq.write_table(table, run / "compare" / "mm2_source_reads.parquet")


# A nightly read orders-0 from 990 to 1300 while the source held it: records at 990-999,
# markers at 1000-1002 and 1100 (a transactional producer's), records between.
SCANNED = [("read", 990, 1300), ("records", 990, 1000), ("records", 1003, 1100), ("records", 1101, 1300)]
TRANSACTIONAL = (PartitionTraitRecord("orders", 0, False, 1),)


def test_a_gap_an_earlier_scan_read_counts_its_records_lost_and_its_markers_not(tmp_path: Path) -> None:
    """The gap 1000-1199 is on a transactional topic, gone from the source: its markers are
    told from its records only by what an earlier records scan read there, which each run
    keeps under the output root and hands on. 196 records lost, not 200 nor unknown."""
    runs = tmp_path / "runs"
    src, dst = _skipped_pair(tmp_path / "pair", TRANSACTIONAL)
    first = audit_snapshots(src, dst, runs / "1", MM2_ONLY, job=READINESS, engine="local").summary
    assert first["invariants"]["MM2-SKIP-1"]["status"] == "warn"  # no scan of the gap: unchecked
    assert first["lost_records"] is None
    assert "a records scan of the gap" in first["unknown_figures"]["lost_records"]["reason"]
    _source_reads(runs / "1", SCANNED)
    summary = audit_snapshots(src, dst, runs / "2", MM2_ONLY, job=READINESS, engine="local").summary
    assert summary["lost_records"] == 196
    (example,) = summary["invariants"]["MM2-SKIP-1"]["examples"]
    assert (example["lost_records"], example["gap_scanned"], example["skipped_records"]) == (196, True, 200)
    assert summary["readiness"] == "NO-GO"
    # Handed on: the next run finds what the scan read in the run before it.
    summary = audit_snapshots(src, dst, runs / "3", MM2_ONLY, job=READINESS, engine="local").summary
    assert summary["lost_records"] == 196


@pytest.mark.parametrize(
    ("why", "reads", "topic_id", "traits"),
    [
        (
            "the scan read only part of the gap",
            [("read", 1050, 1300), ("records", 1050, 1300)],
            "id-orders",
            None,
        ),
        ("another topic under the name was scanned", SCANNED, "id-orders-old", None),
        ("compacted since the scan", SCANNED, "id-orders", (PartitionTraitRecord("orders", 0, True, 1),)),
    ],
)
def test_what_an_earlier_scan_cannot_stand_for_leaves_the_gap_unchecked(
    tmp_path: Path, why: str, reads: list[tuple[str, int, int]], topic_id: str, traits: Any
) -> None:
    runs = tmp_path / "runs"
    src, dst = _skipped_pair(tmp_path / "pair", traits or TRANSACTIONAL)
    audit_snapshots(src, dst, runs / "1", MM2_ONLY, job=READINESS, engine="local")
    _source_reads(runs / "1", reads, topic_id)
    summary = audit_snapshots(src, dst, runs / "2", MM2_ONLY, job=READINESS, engine="local").summary
    skip = summary["invariants"]["MM2-SKIP-1"]
    assert (skip["status"], skip["unchecked"], summary["lost_records"]) == ("warn", 1, None), why
    assert summary["readiness"] == "NO-GO", why


@pytest.mark.parametrize(
    ("left", "carried"),
    [
        # The cleaner kept the newest sync only: the gap's row comes from the earlier run.
        ([3], True),
        # It kept the sync after the gap: that sync takes its predecessor from the earlier run.
        ([2, 3], False),
    ],
)
def test_a_gap_whose_sync_the_cleaner_removed_stays_known_lost(
    tmp_path: Path, left: list[int], carried: bool
) -> None:
    """The offset-syncs topic is compacted by partition: once the cleaner has removed the
    sync before the gap, the syncs alone no longer show it. The earlier run that saw it
    hands it on (its mm2_syncs under the output root), so the loss does not vanish into a
    GO: still 200 records, from the same range and times."""
    runs = tmp_path / "runs"
    src, dst = _skipped_pair(tmp_path / "seen", PLAIN)
    first = audit_snapshots(src, dst, runs / "1", MM2_ONLY, job=READINESS, engine="local").summary
    assert first["lost_records"] == 200
    all_syncs = [sync(0, 0, 0, 0), sync(0, 999, 999, 1), sync(0, 1200, 1000, 2), sync(0, 1900, 1700, 3)]
    src, dst = write_pair(
        tmp_path / "cleaned",
        [part(log_start_offset=1200, high_watermark=1900, last_stable_offset=1900)],
        [part(REMOTE, log_start_offset=0, high_watermark=1700, last_stable_offset=1700)],
        src_syncs=[all_syncs[i] for i in left],
    )
    write_table(src, "partition_traits", PLAIN)
    alone = audit_snapshots(src, dst, tmp_path / "alone", MM2_ONLY, job=READINESS, engine="local").summary
    assert (alone["lost_records"], alone["readiness"]) == (0, "GO")  # what the syncs left say alone
    summary = audit_snapshots(src, dst, runs / "2", MM2_ONLY, job=READINESS, engine="local").summary
    assert (summary["lost_records"], summary["readiness"]) == (200, "NO-GO")
    (gap,) = summary["invariants"]["MM2-SKIP-1"]["examples"]
    assert (gap["skipped_from_offset"], gap["upstream_offset"], gap["carried"]) == (1000, 1200, carried)
    assert (gap["prev_timestamp_ms"], gap["timestamp_ms"]) == (1001, 1002)
    # And on to the run after it, the sync before the gap long gone.
    again = audit_snapshots(src, dst, runs / "3", MM2_ONLY, job=READINESS, engine="local").summary
    assert again["lost_records"] == 200


def test_the_position_margin_is_also_given_in_time_at_the_pace_retention_deleted_since_the_last_run(
    tmp_path: Path,
) -> None:
    """MirrorMaker 2 reads on from 100; the source's log start is 90 now and was 50 an hour
    ago (the newest earlier run's snapshot): retention deletes 40 records an hour, so the 10
    records of margin last 900 s. Without an earlier run the pace is unknown: null, never a
    figure made up."""
    from datetime import datetime, timedelta

    import pyarrow.parquet as pq

    from audit.snapshot import read_manifest

    runs = tmp_path / "runs"

    def pair(root: Path, log_start: int) -> tuple[Path, Path]:
        src, dst = write_pair(
            root,
            [part(log_start_offset=log_start, high_watermark=200, last_stable_offset=200)],
            [part(REMOTE, high_watermark=100, last_stable_offset=100)],
            src_syncs=[sync(0, 0, 0, 0)],
        )
        write_table(dst, "mm2_positions", (Mm2PositionRecord("orders", 0, 99, 0, 0, 1000),))
        return src, dst

    before_src, before_dst = pair(tmp_path / "before", 50)
    manifest = read_manifest(before_src)
    started = datetime.fromisoformat(manifest["started_at"].replace("Z", "+00:00"))
    manifest["started_at"] = (started - timedelta(hours=1)).isoformat()
    (before_src / "manifest.json").write_text(json.dumps(manifest))
    first = audit_snapshots(before_src, before_dst, runs / "1", MM2_ONLY, job=READINESS, engine="local")
    (alone,) = pq.read_table(runs / "1" / "compare" / "mm2_positions.parquet").to_pylist()
    assert (alone["margin_records"], alone["log_start_rate"], alone["margin_seconds"]) == (50, None, None)
    assert first.summary["invariants"]["MM2-POS-1"]["status"] == "warn"  # 50 records above: within 1,000
    src, dst = pair(tmp_path / "after", 90)
    summary = audit_snapshots(src, dst, runs / "2", MM2_ONLY, job=READINESS, engine="local").summary
    (row,) = pq.read_table(runs / "2" / "compare" / "mm2_positions.parquet").to_pylist()
    assert row["margin_records"] == 10
    assert row["log_start_rate"] == pytest.approx(40 / 3600)
    assert row["margin_seconds"] == pytest.approx(900)
    (example,) = [e for c in summary["invariants"]["MM2-POS-1"]["checks"] for e in c["examples"]]
    assert example["margin_seconds"] == pytest.approx(900)


def test_without_the_offset_syncs_read_the_known_loss_is_unknown_never_0(tmp_path: Path) -> None:
    """Offset syncs not collected: nothing says whether the mirror passed records over, so
    the figure is unknown with the reason (it once summed an empty stand-in to 0), there is
    no loss by partition to list, and MM2-SKIP-1 is not collected."""
    src, dst = _without_mm2_tables(tmp_path)
    summary = audit_snapshots(src, dst, tmp_path / "run", MM2_ONLY, job=READINESS, engine="local").summary
    assert summary["lost_records"] is None
    assert "mm2_syncs was not computed" in summary["unknown_figures"]["lost_records"]["reason"]
    assert "lost_by_partition" not in summary
    assert summary["invariants"]["MM2-SKIP-1"]["status"] == "skipped"
    assert summary["readiness"] == "NO-GO"
