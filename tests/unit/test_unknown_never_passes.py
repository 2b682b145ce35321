"""Unknown never passes, generated from the declarations: for every input an invariant
declares (``Invariant.inputs``), a pair where the invariant passes with the input known,
then the same pair with the input unknown (null on that side, or the row absent from that
side's snapshot): the invariant must not pass. A new invariant that declares its inputs
gets this test without writing it.

Evaluated at the layer that decides, without Great Expectations or the report (fast): the
comparison tables on the in-process engine, each expectation's rejected rows and unchecked
rows selected by the SQL forms the validator derives from the suites themselves
(``unexpected_rows_sql``, ``unchecked_rows_sql``; tests/unit/test_violations.py holds the
first to the rows GX rejects). The pairs are tests/invariant_scenarios.py's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from audit.collect.metadata.mirror_state import MirrorPartitionRecord
from audit.snapshot import GroupOffsetRecord, Mm2CheckpointRecord, Mm2OffsetSyncRecord, PartitionRecord
from audit.validate.invariants import CLUSTER_MIRRORING, FAILBACK, FAILOVER_VERIFY, MM2, MM2_DATA
from tests.invariant_scenarios import (
    NOT_READ,
    NOT_READ_ON_SPARK,
    SCENARIOS,
    Pair,
    Scenario,
    scenario_statuses,
    with_partition_1,
)


def _declared(scenario: Scenario) -> list[tuple[str, str]]:
    return [
        (inv.id, spec)
        for inv in scenario.catalogue
        if (scenario.records or not inv.spark_only) and inv.not_applicable is None
        for spec in inv.inputs
    ]


TOPIC_LEVEL = frozenset({"topic_id"})


def _unknown(scenario: Scenario, spec: str) -> Pair:
    """The scenario's pair with one input unknown on partition 0 (partition 1 keeps it):
    ``side:table.column`` null on that side's row, ``side:table`` the row absent."""
    side, _, what = spec.partition(":")
    table, _, column = what.partition(".")
    assert side in scenario.tables and table in scenario.tables[side], spec
    pair = {s: dict(tables) for s, tables in scenario.tables.items()}
    rows = with_partition_1(pair[side][table])
    # A topic's own value (its ID) is reported for the topic, so for all its partitions.
    hit = [column in TOPIC_LEVEL or getattr(r, "partition", 0) == 0 for r in rows]
    assert any(hit), spec
    if column:
        pair[side][table] = [
            dataclasses.replace(r, **{column: None}) if h else r for r, h in zip(rows, hit, strict=True)
        ]
    else:
        pair[side][table] = [r for r, h in zip(rows, hit, strict=True) if not h]
    return pair


CASES = [(sc, inv_id, spec) for sc in SCENARIOS for inv_id, spec in _declared(sc)]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda sc: sc.name)
def test_every_invariant_declaring_inputs_passes_where_they_are_known(
    scenario: Scenario, tmp_path: Path
) -> None:
    statuses = scenario_statuses(scenario, scenario.tables, tmp_path)
    for inv_id, _ in _declared(scenario):
        assert statuses.get(inv_id) == "pass", (inv_id, statuses)


@pytest.mark.parametrize(
    ("scenario", "inv_id", "spec"), CASES, ids=[f"{sc.name}:{inv_id}:{spec}" for sc, inv_id, spec in CASES]
)
def test_an_unknown_input_never_passes(scenario: Scenario, inv_id: str, spec: str, tmp_path: Path) -> None:
    statuses = scenario_statuses(scenario, _unknown(scenario, spec), tmp_path)
    assert inv_id in statuses, f"{inv_id} was not evaluated with {spec} unknown"
    assert statuses[inv_id] != "pass", f"{inv_id} passes with {spec} unknown"


BOTH = "src+dst"


def _not_read(scenario: Scenario, side: str, table: str, form: str) -> Pair:
    """The scenario's pair with ``table`` present on ``side`` (or on both: ``BOTH``) but
    saying, for partition 0, that the scan did not read it whole (partition 1 read whole
    beside it)."""
    pair = {s: dict(tables) for s, tables in scenario.tables.items()}
    for s in BOTH.split("+") if side == BOTH else (side,):
        rows = with_partition_1(pair[s][table])
        pair[s][table] = [NOT_READ[table](r)[form] if r.partition == 0 else r for r in rows]
    return pair


READ_CASES = [
    (sc, side, table, form)
    for sc in SCENARIOS
    for table in NOT_READ
    if all(table in sc.tables[s] for s in ("src", "dst"))
    for side in ("src", "dst", BOTH)
    for form in NOT_READ[table](sc.tables["src"][table][0])
]


@pytest.mark.parametrize(
    ("scenario", "side", "table", "form"),
    READ_CASES,
    ids=[f"{sc.name}:{side}:{table}:{form}" for sc, side, table, form in READ_CASES],
)
def test_an_input_present_but_not_read_never_passes(
    scenario: Scenario, side: str, table: str, form: str, tmp_path: Path
) -> None:
    """A scan's account that it did not read a partition whole (refused, stopped, no task,
    or an impossible range) is an unknown input, not an empty partition: every invariant
    declaring the table as an input is not ``pass``."""
    statuses = scenario_statuses(scenario, _not_read(scenario, side, table, form), tmp_path)
    judged = [
        inv.id
        for inv in scenario.catalogue
        if any(f"{s}:{table}" in inv.inputs for s in BOTH.split("+") if side in (s, BOTH))
    ]
    assert judged, (side, table)
    for inv_id in judged:
        assert inv_id in statuses, f"{inv_id} was not evaluated with {side}:{table} {form}"
        assert statuses[inv_id] != "pass", f"{inv_id} passes with {side}:{table} {form}"


# Snapshot tables with a column saying how far or whether a read got, and why each is not
# in NOT_READ: a new scan table with one must be added there, or here with its reason.
READ_ACCOUNT_COLUMNS = frozenset({"complete", "read_to"})
NOT_A_READ_ACCOUNT: dict[str, str] = {}


def test_every_table_that_records_what_was_read_has_its_not_read_case() -> None:
    from audit.schemas import SNAPSHOT_TABLES

    accounts = {
        name for name, columns in SNAPSHOT_TABLES.items() if READ_ACCOUNT_COLUMNS & {c.name for c in columns}
    }
    assert accounts - set(NOT_A_READ_ACCOUNT) == set(NOT_READ)
    assert READ_CASES and {table for _, _, table, _ in READ_CASES} == set(NOT_READ) - NOT_READ_ON_SPARK


def test_the_records_the_inputs_name_have_those_fields() -> None:
    records = {
        "partitions": PartitionRecord,
        "group_offsets": GroupOffsetRecord,
        "mm2_offset_syncs": Mm2OffsetSyncRecord,
        "mm2_checkpoints": Mm2CheckpointRecord,
        "mirror_partitions": MirrorPartitionRecord,
    }
    assert any(_declared(sc) for sc in SCENARIOS[1:]), "no mm2 invariant declares an input"
    for sc in SCENARIOS:
        for _, spec in _declared(sc):
            table, _, column = spec.partition(":")[2].partition(".")
            assert not column or column in {f.name for f in dataclasses.fields(records[table])}, spec


# The invariants no input of which a cluster can leave unreported without another
# invariant answering for it, and why; every other one declares its inputs.
NO_INPUTS = {
    "CM-GROUP-3": (
        "judges how the scope classifies groups: a group missing from a snapshot has no sync to judge"
    ),
    "CM-TXN-1": (
        "its one optional input, the oldest open transaction's start, is missing only where a "
        "transaction is open, and an open transaction already warns"
    ),
    "CM-SCOPE-1": "judges topic and group names (Streams internal topics), which every snapshot holds",
    "MM2-SYNC-1": (
        "judges the order of the syncs read; a partition without one is MM2-READY-1's (src:mm2_offset_syncs)"
    ),
    "MM2-CKPT-1": (
        "judges the order of the checkpoints read; a group without one is MM2-CKPT-4's (dst:mm2_checkpoints)"
    ),
    "MM2-SKIP-1": (
        "its input (src:partition_traits) matters only where two syncs leave a gap, which the pair has "
        "none of (every sync passes with it or without): its cases take it away where a gap is "
        "(test_invariant_outcomes.py: producers not described, a compacted topic; "
        "test_mm2_invariants.py: no partition_traits at all), and the gap is unchecked"
    ),
    "MM2-POS-1": (
        "its position comes from Connect's offsets topic or, before Connect has flushed one, from the "
        "latest offset sync: either alone judges it, so neither is an input it lacks alone; a partition "
        "holding records with neither is unchecked (its case in test_invariant_outcomes.py)"
    ),
    "MM2-SKIP-2": (
        "judges the syncs read against the source partition's end, which every source snapshot holds; "
        "a sync of a partition absent from it is unchecked (its cause: the topic deleted?)"
    ),
}


def test_every_invariant_of_every_job_declares_its_inputs_or_says_why_not() -> None:
    """Every catalogue of both modes, verify and failback has a scenario, and every
    invariant its scenario evaluates declares the inputs the test above takes away, unless
    it is listed with its reason. Mode mm2's record level is evaluated (its SQL runs on
    both engines); cluster mirroring's (PySpark code) is evaluated on Spark, by
    tests/spark/test_data_level_outcomes.py, from the same declarations."""
    assert {sc.catalogue for sc in SCENARIOS} == {CLUSTER_MIRRORING, MM2, MM2_DATA, FAILOVER_VERIFY, FAILBACK}
    undeclared = {
        inv.id
        for sc in SCENARIOS
        for inv in sc.catalogue
        if (sc.records or not inv.spark_only) and inv.not_applicable is None and not inv.inputs
    }
    assert undeclared == set(NO_INPUTS)
    assert {inv.id for inv in MM2_DATA} <= {inv_id for sc in SCENARIOS for inv_id, _ in _declared(sc)}
