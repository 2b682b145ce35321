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
from pathlib import Path
from typing import Any

import pytest

from audit.config import AuditConfig
from audit.config_file import parse_config
from audit.pipeline import compare_snapshots
from audit.profiles import profile_of
from audit.snapshot import GroupOffsetRecord, PartitionRecord
from audit.validate.invariants import CLUSTER_MIRRORING, Invariant
from audit.validate.run import mode_suites
from audit.validate.violations import unchecked_rows_sql, unexpected_rows_sql
from tests.snapshots import T0_MS, group, offset, part, write_pair

CFG = parse_config("mirror:\n  preserves_topic_ids: true\n", env={})

# One partition lagging a little (so time lag is computed from both sides' timestamps), a
# destination epoch well ahead, one group synced within the clamp: every declared
# invariant passes on it.
BASE: dict[str, dict[str, list[Any]]] = {
    "src": {
        "partitions": [part(leader_epoch=5, high_watermark=100, last_stable_offset=100)],
        "group_offsets": [offset("g", 90, epoch=5)],
    },
    "dst": {
        "partitions": [
            part(leader_epoch=9, high_watermark=98, last_stable_offset=98, max_timestamp_ms=T0_MS - 1500)
        ],
        "group_offsets": [offset("g", 90, epoch=9)],
    },
}


def _declared(catalogue: tuple[Invariant, ...]) -> list[tuple[str, str]]:
    return [(inv.id, spec) for inv in catalogue if not inv.spark_only for spec in inv.inputs]


def _statuses(pair: dict[str, dict[str, list[Any]]], root: Path, cfg: AuditConfig) -> dict[str, str]:
    """Each invariant's status as the validator folds it: fail or warn where a check of
    that severity rejects a row, warn where a check leaves a row unchecked, else pass."""
    src, dst = write_pair(
        root,
        pair["src"]["partitions"],
        pair["dst"]["partitions"],
        [group("g")],
        [group("g")],
        pair["src"]["group_offsets"],
        pair["dst"]["group_offsets"],
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


def _unknown(spec: str) -> dict[str, dict[str, list[Any]]]:
    """BASE with one input unknown: ``side:table.column`` null on every row of that side's
    table (one partition, one group: the in-scope row), ``side:table`` its rows absent."""
    side, _, what = spec.partition(":")
    table, _, column = what.partition(".")
    assert side in BASE and table in BASE[side], spec
    pair = {s: dict(tables) for s, tables in BASE.items()}
    rows = pair[side][table]
    pair[side][table] = [dataclasses.replace(r, **{column: None}) for r in rows] if column else []
    return pair


def test_every_declared_input_is_known_in_the_base_pair_and_every_invariant_passes_there(tmp_path: Path) -> None:
    statuses = _statuses(BASE, tmp_path, CFG)
    for inv_id, _ in _declared(CLUSTER_MIRRORING):
        assert statuses.get(inv_id) == "pass", (inv_id, statuses)


@pytest.mark.parametrize(("inv_id", "spec"), _declared(CLUSTER_MIRRORING), ids=lambda v: str(v))
def test_an_unknown_input_never_passes(inv_id: str, spec: str, tmp_path: Path) -> None:
    statuses = _statuses(_unknown(spec), tmp_path, CFG)
    assert inv_id in statuses, f"{inv_id} was not evaluated with {spec} unknown"
    assert statuses[inv_id] != "pass", f"{inv_id} passes with {spec} unknown"


def test_the_records_the_inputs_name_have_those_fields() -> None:
    fields = {
        "partitions": {f.name for f in dataclasses.fields(PartitionRecord)},
        "group_offsets": {f.name for f in dataclasses.fields(GroupOffsetRecord)},
    }
    for _, spec in _declared(CLUSTER_MIRRORING):
        table, _, column = spec.partition(":")[2].partition(".")
        assert not column or column in fields[table], spec
