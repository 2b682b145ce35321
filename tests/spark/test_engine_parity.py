"""The two engines are interchangeable: on the same snapshots, Spark and the in-process
engine write the same comparison tables (column names, order, types and every cell) and
reach the same summary. A difference here means one engine's compare logic drifted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from audit.compare.run import OPTIONAL_TABLES
from audit.config import AuditConfig
from audit.config_file import parse_config
from audit.errors import InputError
from audit.jobs import READINESS
from audit.pipeline import audit_snapshots, compare_snapshots
from audit.profiles import profile
from audit.snapshot import GroupRecord
from audit.validate.invariants import ALL
from audit.validate.results import MAX_EXAMPLES
from tests.run_files import kept_keys, unchecked_keys
from tests.snapshots import faulty_pair, group, mirror, offset, part, share, write_pair
from tests.spark.test_mm2_invariants import CFG as MM2_CFG
from tests.spark.test_mm2_invariants import _pair as mm2_pair

KEYS = {c.table: c.key for mode in ("cluster-mirroring", "mm2") for c in profile(mode).comparisons}

FAULTY_CFG = parse_config("scope:\n  groups:\n    exclude: ['private']\n", env={})

# Scope patterns, topic ids compared, and the null cases the derived columns must agree on.
EDGE_CFG = parse_config(
    "scope:\n"
    "  topics:\n    include: ['orders.*', 'app-.*', '__consumer_offsets']\n    exclude: ['orders-tmp']\n"
    "  groups:\n    include: ['g.*', 'app']\n    exclude: ['g-private.*']\n"
    "mirror:\n  preserves_topic_ids: true\n",
    env={},
)


def _edge_pair(root: Path) -> tuple[Path, Path]:
    src = [
        part("orders", 0, leader_epoch=None, max_timestamp_ms=None),
        part("orders", 1, topic_id=None),
        part("orders-tmp"),
        part("orders-ids", topic_id="a"),
        part("app-x-repartition", last_stable_offset=40, open_txn_first_timestamp_ms=None),
        part("__consumer_offsets"),
        part("only-src", log_start_offset=90, high_watermark=90),
    ]
    dst = [
        # Both lag (10 records): a time lag is needed and one side has no newest timestamp.
        part("orders", 0, leader_epoch=7, high_watermark=90),
        part("orders", 1, topic_id=None, max_timestamp_ms=None, high_watermark=90),
        part("orders-ids", topic_id="b"),
        part("app-x-repartition", leader_epoch=None),
        part("only-dst"),
    ]
    return write_pair(
        root,
        src,
        dst,
        # g-streams: a Kafka Streams group (KIP-1071) by its type alone, its member count
        # unknown (no client here describes a streams group).
        src_groups=[
            group("g1"),
            group("g-private-1"),
            group("app", "STABLE", 3),
            GroupRecord("g-streams", "streams", "NOT_READY", None),
            # g-share: a share group (KIP-932), its start offset synced 4 past the clamp.
            GroupRecord("g-share", "share", "STABLE", 1),
        ],
        dst_groups=[group("g1", "COMPLETING_REBALANCING"), group("h", "STABLE", 0), group("app")],
        src_offsets=[
            offset("g1", 5),
            offset("g1", 500, partition=1),
            offset("g-private-1", 1),
            offset("app", 7, topic="app-x-repartition"),
            offset("g-streams", 6),
            offset("g1", 3, topic="only-src"),
            offset("nobody", 1, topic="unknown-topic"),
        ],
        dst_offsets=[
            offset("g1", 4, epoch=9),
            offset("g-private-1", 1),
            offset("h", 2, topic="only-dst"),
            offset("h", 2, topic="gone-from-dst"),  # no partition, no source commit: no clamp
            offset("app", 8, topic="app-x-repartition", epoch=1),
        ],
        src_share=[share("g-share", 5)],
        dst_share=[share("g-share", 9)],
    )


def _empty_pair(root: Path) -> tuple[Path, Path]:
    return write_pair(root, [], [])


def _stopped_pair(root: Path) -> tuple[Path, Path]:
    """After a stop: one partition clean, one a control record over the bound (an open
    transaction left on the destination), one FAILED, one still mirroring."""
    return write_pair(
        root,
        [part("orders", p, high_watermark=100, leader_epoch=5) for p in range(4)],
        [
            part("orders", 0, high_watermark=101, leader_epoch=7),
            part("orders", 1, high_watermark=103, last_stable_offset=101, leader_epoch=5),
            part("orders", 2, high_watermark=100, leader_epoch=7),
            part("orders", 3, high_watermark=90, leader_epoch=7),
        ],
        dst_mirror=[
            mirror("orders", 0),
            mirror("orders", 1),
            mirror("orders", 2, state="FAILED", last_offset=None, last_epoch=None),
            mirror("orders", 3, state="MIRRORING", last_offset=None, last_epoch=None),
        ],
    )


SCENARIOS = {
    "faulty": (faulty_pair, FAULTY_CFG),
    "stopped": (_stopped_pair, AuditConfig()),
    "edge": (_edge_pair, EDGE_CFG),
    "empty": (_empty_pair, AuditConfig()),
    # Mode mm2 runs the same way on both engines since its comparisons are SQL too.
    "mm2-faulty": (lambda root: mm2_pair(root, faulty=True), MM2_CFG),
    "mm2-healthy": (lambda root: mm2_pair(root, faulty=False), MM2_CFG),
}


def _sorted_rows(path: Path, key: tuple[str, ...]) -> tuple[Any, list[dict[str, Any]]]:
    table = pq.read_table(path)
    rows = sorted(table.to_pylist(), key=lambda r: tuple(str(r[k]) for k in key))
    return table.schema, rows


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_engines_write_identical_tables(spark: Any, tmp_path: Path, scenario: str) -> None:
    make, cfg = SCENARIOS[scenario]
    src, dst = make(tmp_path / "snap")
    on_spark = compare_snapshots(src, dst, tmp_path / "spark", cfg, "spark")
    local = compare_snapshots(src, dst, tmp_path / "local", cfg, "local")
    # Tables whose input is optional (the mirror state, record digests) are written by both
    # or neither.
    assert set(on_spark.paths) == set(local.paths)
    assert set(on_spark.paths) >= set(profile(cfg.mode).tables) - set(OPTIONAL_TABLES)
    for table in on_spark.paths:
        s_schema, s_rows = _sorted_rows(on_spark.paths[table], KEYS[table])
        l_schema, l_rows = _sorted_rows(local.paths[table], KEYS[table])
        assert l_schema.names == s_schema.names, table
        assert [str(t) for t in l_schema.types] == [str(t) for t in s_schema.types], table
        assert len(l_rows) == len(s_rows), table
        for s_row, l_row in zip(s_rows, l_rows, strict=True):
            assert l_row == s_row, (table, {k: (s_row[k], l_row[k]) for k in s_row if s_row[k] != l_row[k]})


def _comparable(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary minus what legitimately differs (when and how it ran); examples compared
    as sets, and only where every offending row is listed (beyond that, which rows are
    shown depends on each engine's row order)."""
    out: dict[str, Any] = json.loads(json.dumps(summary))
    for when in ("started_at", "finished_at", "duration_seconds", "stage_seconds", "engine"):
        out["run"].pop(when)
    # Where Spark ran it: only the Spark engine says (and a cluster says another master).
    out["run"].pop("spark_master", None)
    out["run"].pop("spark_executors_ran_tasks", None)
    spark_only = {i.id for i in ALL.values() if i.spark_only}
    for inv_id, inv in out["invariants"].items():
        if inv_id in spark_only:  # skipped by both; the local engine says it never checks them
            assert inv["status"] == "skipped", (inv_id, inv)
            inv.pop("reason")
        inv.pop("examples_seen", None)  # the streaks start at each run's own time
        for check in [inv, *inv.get("checks", [])]:
            examples = check.pop("examples", [])
            if check.get("violations", check.get("unexpected", 0)) <= MAX_EXAMPLES:
                check["example_set"] = sorted(json.dumps(e, sort_keys=True) for e in examples)
    plan = out.get("failover_plan")
    if plan is not None:
        plan.pop("path")  # each run writes its own
    return out


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_engines_reach_the_same_summary(spark: Any, tmp_path: Path, scenario: str) -> None:
    make, cfg = SCENARIOS[scenario]
    src, dst = make(tmp_path / "snap")
    if scenario == "empty":
        # No in-scope source partition: an input error on both engines, never a GO over nothing.
        for engine in ("spark", "local"):
            with pytest.raises(InputError, match="no in-scope source partition"):
                audit_snapshots(src, dst, tmp_path / "runs" / engine, cfg, job=READINESS, engine=engine)
        return
    on_spark = audit_snapshots(src, dst, tmp_path / "runs" / "spark", cfg, job=READINESS, engine="spark")
    local = audit_snapshots(src, dst, tmp_path / "runs2" / "local", cfg, job=READINESS, engine="local")
    assert _comparable(local.summary) == _comparable(on_spark.summary)
    # Each keeps every violating row's key for the history, the same keys (a nightly on
    # Spark and a readiness check on DuckDB under one root follow the same rows).
    assert kept_keys(on_spark.run_dir) == kept_keys(local.run_dir)
    # An invariant may warn for rows it could not check alone (coverage, no violation):
    # those rows are kept apart, in unchecked.parquet, the same by both engines.
    assert unchecked_keys(on_spark.run_dir) == unchecked_keys(local.run_dir)
    unchecked = {k for k, v in local.summary["invariants"].items() if v["unchecked"]}
    assert set(unchecked_keys(local.run_dir)) == unchecked
    failing = {
        k: v
        for k, v in local.summary["invariants"].items()
        if v["status"] in ("fail", "warn") and (v["violations"] or not v["unchecked"])
    }
    assert set(kept_keys(local.run_dir)) == set(failing)
    for inv_id, inv in failing.items():
        checks = inv["checks"]
        counted = [c["unexpected"] for c in checks if not c["success"] and c["severity"] == inv["status"]]
        # One check: its rejected rows are the violations; several: a row may fail two.
        assert max(counted) <= len(kept_keys(local.run_dir)[inv_id]) <= sum(counted), inv_id
        if len(counted) == 1:
            assert len(kept_keys(local.run_dir)[inv_id]) == inv["violations"], inv_id
    # Not vacuous: the scenarios do exercise failing invariants and non-zero figures.
    if scenario == "faulty":
        assert on_spark.summary["readiness"] == "NO-GO"
        assert on_spark.summary["expected_loss_records"] > 0


def test_edge_scenario_covers_the_null_cases(tmp_path: Path) -> None:
    """Guards the parity test's reach: the edge pair must keep producing the nulls and
    classifications it exists for, or a parity pass would prove less than it claims."""
    src, dst = _edge_pair(tmp_path / "snap")
    local = compare_snapshots(src, dst, tmp_path / "local", EDGE_CFG, "local")
    parts = local.frames["partitions"].set_index(["topic", "partition"])
    assert parts["epoch_headroom"].isna().sum() >= 2
    assert parts["lag_seconds"].isna().sum() >= 2
    assert not parts.loc[("only-dst", 0), "src_present"]
    topics = local.frames["topics"].set_index("topic")
    assert not topics.loc["orders-ids", "topic_mirrored"]  # ids differ where the mirror keeps them
    assert topics.loc["orders", "topic_mirrored"]
    groups = local.frames["groups"].set_index("group_id")
    assert set(groups["classification"]) == {"active-on-destination", "excluded", "out-of-scope", "synced"}
    assert groups.loc["app", "streams_application"]
    assert groups.loc["g-streams", "streams_application"] and not groups.loc["g1", "streams_application"]
    offsets = local.frames["group_offsets"]
    shared = offsets.set_index("group_id").loc["g-share"]
    assert (shared["src_group_type"], shared["sync_delta"]) == ("share", 4)
    assert offsets["expected_offset"].isna().any()
    assert offsets["sync_delta"].isna().any()
