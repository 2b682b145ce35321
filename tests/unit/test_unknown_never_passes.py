"""Unknown never passes, generated from the declarations: for every input an invariant
declares (``Invariant.inputs``), a pair where the invariant passes with the input known,
then the same pair with the input unknown (null on that side, or the row absent from that
side's snapshot): the invariant must not pass. A new invariant that declares its inputs
gets this test without writing it.

Evaluated at the layer that decides, without Great Expectations or the report (fast): the
comparison tables on the in-process engine, each expectation's rejected rows and unchecked
rows selected by the SQL forms the validator derives from the suites themselves
(``unexpected_rows_sql``, ``unchecked_rows_sql``; tests/unit/test_violations.py holds the
first to the rows GX rejects)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from audit.config import AuditConfig
from audit.config_file import parse_config
from audit.pipeline import compare_snapshots
from audit.profiles import profile_of
from audit.snapshot import GroupOffsetRecord, Mm2CheckpointRecord, Mm2OffsetSyncRecord, PartitionRecord
from audit.validate.invariants import CLUSTER_MIRRORING, MM2, Invariant
from audit.validate.run import mode_suites
from audit.validate.violations import unchecked_rows_sql, unexpected_rows_sql
from tests.snapshots import T0_MS, group, offset, part, write_pair

REMOTE = "source.orders"  # the mm2 replica of orders under the default replication policy


@dataclass(frozen=True)
class Scenario:
    """A pair on which every invariant of ``catalogue`` that declares inputs passes, with
    those inputs known: the tables of each side, as tests/snapshots.py writes them."""

    name: str
    cfg: AuditConfig
    catalogue: tuple[Invariant, ...]
    tables: dict[str, dict[str, list[Any]]]


SCENARIOS = (
    # One partition lagging a little (so time lag is computed from both sides' timestamps),
    # a destination epoch well ahead, one group synced within the clamp.
    Scenario(
        "cluster-mirroring",
        parse_config("mirror:\n  preserves_topic_ids: true\n", env={}),
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
            },
        },
    ),
    # MirrorMaker 2 with every record replicated: offset syncs at 0 and 50, a group
    # checkpointed at 60 -> 55 (within what the sync at 50 allows) and synced to it.
    Scenario(
        "mm2",
        parse_config("mode: mm2\nmirror:\n  mm2:\n    sync_group_offsets: true\n", env={}),
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
            },
            "dst": {
                "partitions": [part(REMOTE)],
                "groups": [group("g")],
                "group_offsets": [offset("g", 55, topic=REMOTE)],
                "mm2_checkpoints": [Mm2CheckpointRecord("g", REMOTE, 0, 60, 55, None, 0, 0, 2000)],
            },
        },
    ),
)


def _declared(catalogue: tuple[Invariant, ...]) -> list[tuple[str, str]]:
    return [
        (inv.id, spec)
        for inv in catalogue
        if not inv.spark_only and inv.not_applicable is None
        for spec in inv.inputs
    ]


def _statuses(pair: dict[str, dict[str, list[Any]]], root: Path, cfg: AuditConfig) -> dict[str, str]:
    """Each invariant's status as the validator folds it: fail or warn where a check of
    that severity rejects a row, warn where a check leaves a row unchecked, else pass."""
    src_t, dst_t = pair["src"], pair["dst"]
    src, dst = write_pair(
        root,
        src_t["partitions"],
        dst_t["partitions"],
        src_t["groups"],
        dst_t["groups"],
        src_t["group_offsets"],
        dst_t["group_offsets"],
        src_syncs=src_t.get("mm2_offset_syncs"),
        dst_checkpoints=dst_t.get("mm2_checkpoints"),
    )
    compared = compare_snapshots(src, dst, root / "run", cfg, engine="local")
    params = dataclasses.asdict(cfg.thresholds)
    status: dict[str, str] = {}
    rank = {"pass": 0, "warn": 1, "fail": 2}
    for suite in mode_suites(cfg, profile_of(cfg).suite_patterns):
        if not compared.tables.has(suite.table):
            continue
        for e in suite.raw["expectations"]:
            inv, severity = e["meta"]["invariant"], e["meta"]["severity"]
            got = "pass"
            rejected = unexpected_rows_sql(e["type"], e["kwargs"], params)
            unchecked = unchecked_rows_sql(e["type"], e["kwargs"], params)
            assert rejected is not None, (suite.name, e["type"])
            if _count(compared, suite.table, rejected):
                got = severity
            elif unchecked is not None and _count(compared, suite.table, unchecked):
                got = "warn"
            if rank[got] > rank[status.get(inv, "pass")]:
                status[inv] = got
            status.setdefault(inv, "pass")
    return status


def _count(compared: Any, table: str, where: str) -> int:
    (row,) = compared.tables.rows(f"SELECT count(*) AS n FROM {{{table}}} WHERE {where}")
    return int(row["n"])


def _unknown(scenario: Scenario, spec: str) -> dict[str, dict[str, list[Any]]]:
    """The scenario's pair with one input unknown: ``side:table.column`` null on every row
    of that side's table (one partition, one group: the in-scope row), ``side:table`` its
    rows absent."""
    side, _, what = spec.partition(":")
    table, _, column = what.partition(".")
    assert side in scenario.tables and table in scenario.tables[side], spec
    pair = {s: dict(tables) for s, tables in scenario.tables.items()}
    rows = pair[side][table]
    pair[side][table] = [dataclasses.replace(r, **{column: None}) for r in rows] if column else []
    return pair


CASES = [(sc, inv_id, spec) for sc in SCENARIOS for inv_id, spec in _declared(sc.catalogue)]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda sc: sc.name)
def test_every_invariant_declaring_inputs_passes_where_they_are_known(
    scenario: Scenario, tmp_path: Path
) -> None:
    statuses = _statuses(scenario.tables, tmp_path, scenario.cfg)
    for inv_id, _ in _declared(scenario.catalogue):
        assert statuses.get(inv_id) == "pass", (inv_id, statuses)


@pytest.mark.parametrize(
    ("scenario", "inv_id", "spec"), CASES, ids=[f"{sc.name}:{inv_id}:{spec}" for sc, inv_id, spec in CASES]
)
def test_an_unknown_input_never_passes(scenario: Scenario, inv_id: str, spec: str, tmp_path: Path) -> None:
    statuses = _statuses(_unknown(scenario, spec), tmp_path, scenario.cfg)
    assert inv_id in statuses, f"{inv_id} was not evaluated with {spec} unknown"
    assert statuses[inv_id] != "pass", f"{inv_id} passes with {spec} unknown"


def test_the_records_the_inputs_name_have_those_fields() -> None:
    records = {
        "partitions": PartitionRecord,
        "group_offsets": GroupOffsetRecord,
        "mm2_offset_syncs": Mm2OffsetSyncRecord,
        "mm2_checkpoints": Mm2CheckpointRecord,
    }
    assert any(_declared(sc.catalogue) for sc in SCENARIOS[1:]), "no mm2 invariant declares an input"
    for sc in SCENARIOS:
        for _, spec in _declared(sc.catalogue):
            table, _, column = spec.partition(":")[2].partition(".")
            assert not column or column in {f.name for f in dataclasses.fields(records[table])}, spec
