"""Cluster mirroring's data level on the fast tier's one Spark session, generated from the
declarations and the suites as tests/unit/test_unknown_never_passes.py and
test_invariant_outcomes.py are for the invariants whose SQL both engines run: these
comparisons are PySpark (audit/compare/batches.py, records.py), so Spark computes them.

Each data-level check rejects the damage its case names (fail, or warn for the warnings),
accepts what is healthy (pass), and never passes where an input it declares is unknown.

One pair holds every case, so one compare computes them all: partition 0 with every input
known (every data-level invariant passes on it); partition k with the k-th declared input
unknown (``side:table`` rows of the partition absent from that side's snapshot,
``side:table.column`` null there); and one partition per damage case (``DAMAGES``). Each
invariant's status is folded over partition 0 and the case's, as the validator folds it
(tests/statuses.py). A new data-level invariant that declares its inputs gets the unknown
cases without writing them; a new data-level check needs its damage case, or
``test_every_data_level_check_has_its_cases`` names it.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import pytest

from audit.collect.batches.format import ISSUE_SEVERITY
from audit.collect.records.chunks import RangeChunker
from audit.compare.cluster_mirroring import GROUP_OFFSETS
from audit.compare.run import Compared
from audit.config_file import parse_config
from audit.pipeline import compare_snapshots
from audit.profiles import profile_of
from audit.schemas import columns
from audit.snapshot import ReadRangeRecord, write_table
from audit.validate.invariants import CLUSTER_MIRRORING, Invariant
from tests.invariant_scenarios import NOT_READ, NOT_READ_ON_SPARK
from tests.snapshots import T0_MS, offset, part, write_pair
from tests.statuses import Check, Counts, counts_by_partition, fold, over

pytestmark = pytest.mark.unit  # the fast tier's one Spark session checks the data level

TOPIC = "orders"
# Offsets 0..34: a batch 0-9, a transaction 10-19 committed at 20, a batch 21-29, and a
# transaction 30-34 still open (the last stable offset is 30).
END = 35
LSO = 30
CHUNK = 10
PID = 7
CFG = parse_config("mirror:\n  preserves_topic_ids: true\n  preserves_batch_epochs: true\n", env={})
PROFILE = profile_of(CFG)
DATA_LEVEL: tuple[Invariant, ...] = tuple(inv for inv in CLUSTER_MIRRORING if inv.spark_only)
# The snapshot tables of a partition: the scans' (data level) and the group offsets the
# commit-epoch check reads beside the destination's batches.
TABLES = (
    "partitions",
    "batches",
    "markers",
    "record_chunks",
    "record_chunk_ranges",
    "batch_scan_issues",
    "group_offsets",
)
SCANNED = ("batches", "markers", "record_chunks", "record_chunk_ranges", "batch_scan_issues")
# A row of a data-level snapshot table (the scans write them from Arrow: no record class).
ROW = {t: dataclasses.make_dataclass(f"{t}_row", [c.name for c in columns(t)], frozen=True) for t in SCANNED}
Tables = dict[str, list[Any]]
TXN = {"is_transactional": True, "producer_id": PID, "producer_epoch": 0, "attributes": 16}


def _batch(p: int, base: int, last: int, **kw: Any) -> Any:
    fields: dict[str, Any] = {
        "topic": TOPIC,
        "partition": p,
        "base_offset": base,
        "last_offset": last,
        "partition_leader_epoch": 3,
        "magic": 2,
        "crc": 1000 + base,
        "attributes": 0,
        "compression": "none",
        "timestamp_type": "CreateTime",
        "is_transactional": False,
        "is_control": False,
        "producer_id": -1,
        "producer_epoch": -1,
        "base_sequence": -1,
        "record_count": last - base + 1,
        "size_bytes": 100,
        "first_timestamp_ms": T0_MS - 100_000 + base,
        "max_timestamp_ms": T0_MS - 100_000 + last,
        "crc_valid": True,
        "control_type": None,
        "control_version": None,
        "coordinator_epoch": None,
        "file": None,
        "position": None,
    }
    return ROW["batches"](**{**fields, **kw})


def _chunks(p: int, skip: tuple[int, ...] = (20,), epoch: int = 3) -> list[Any]:
    """One side's record chunks of partition ``p``: every offset but ``skip`` (the COMMIT
    marker at 20 is an offset a consumer never returns), each record at leader ``epoch``."""
    chunker = RangeChunker(TOPIC, p, 0, END, CHUNK)
    for o in range(END):
        if o not in skip:
            chunker.add(o, T0_MS - 100_000 + o, f"k{o}".encode(), f"v{o}".encode(), [], epoch)
    fields = {f.name for f in dataclasses.fields(ROW["record_chunks"])}
    return [
        ROW["record_chunks"](
            **{
                k: v
                for k, v in {**c.row(), "isolation": "read_uncommitted", "compacted": False}.items()
                if k in fields
            }
        )
        for c in chunker.finish()
    ]


def _marker(p: int, at: int, kind: str = "COMMIT") -> Any:
    control = {"ABORT": 0, "COMMIT": 1}[kind]
    return ROW["markers"](TOPIC, p, at, kind, control, 0, 0, PID, 0, 3, T0_MS - 100_000 + at, None, None)


def _side(p: int) -> Tables:
    """One side's tables of partition ``p``: both sides hold the same."""
    return {
        "partitions": [part(TOPIC, p, leader_epoch=5, high_watermark=END, last_stable_offset=LSO)],
        "batches": [
            _batch(p, 0, 9),
            _batch(p, 10, 19, **TXN),
            _control(p, 20),
            _batch(p, 21, 29),
            _batch(p, 30, 34, **{**TXN, "producer_id": PID + 1}),
        ],
        "markers": [_marker(p, 20)],
        "record_chunks": _chunks(p),
        "record_chunk_ranges": [
            ReadRangeRecord(TOPIC, p, 0, END, END, True, "read_uncommitted", False, None)
        ],
        "batch_scan_issues": [],
        "group_offsets": [],
    }


def _control(p: int, at: int, control_type: int = 1) -> Any:
    return _batch(
        p, at, at, **{**TXN, "attributes": 48}, is_control=True, control_type=control_type, control_version=0
    )


def _issue(p: int, kind: str) -> Any:
    """A scan issue in partition ``p``'s first segment, weighed as the scanner weighs it."""
    return ROW["batch_scan_issues"](
        TOPIC, p, f"{TOPIC}-{p}/{0:020d}.log", 0, kind, ISSUE_SEVERITY[kind], kind, 61
    )


def _set(rows: list[Any], where: Callable[[Any], bool], **fields: Any) -> list[Any]:
    return [dataclasses.replace(r, **fields) if where(r) else r for r in rows]


def _clamped_commit(epoch: int) -> Callable[[int], dict[str, list[Any]]]:
    """The destination's log starts at 10 (0-9 deleted there); a group at 5 on the source was
    synced up to 10, committing leader ``epoch`` (the batch at 10 is at epoch 3)."""

    def change(p: int) -> dict[str, list[Any]]:
        healthy = _side(p)
        return {
            "dst:partitions": _set(healthy["partitions"], lambda r: True, log_start_offset=10),
            "dst:batches": [b for b in healthy["batches"] if b.base_offset >= 10],
            "dst:record_chunks": [c for c in healthy["record_chunks"] if c.chunk_start >= 10],
            "src:group_offsets": [offset("g", 5, TOPIC, p)],
            "dst:group_offsets": [offset("g", 10, TOPIC, p, epoch=epoch)],
        }

    return change


@dataclasses.dataclass(frozen=True)
class Damage:
    """A case: partition ``p``'s tables as ``change`` gives them (``side:table`` to its rows
    there), the status ``invariant`` must fold to over partitions 0 and ``p``, and the checks
    (``table.column``, or ``table.column:severity`` where two checks judge one column) that
    must reject a row of ``p`` or, for a pass case, judge and accept them."""

    invariant: str
    expected: str
    what: str
    checks: tuple[str, ...]
    change: Callable[[int], dict[str, list[Any]]]


def _dst(table: str, rows: Callable[[Tables, int], list[Any]]) -> Callable[[int], dict[str, list[Any]]]:
    """A change of one destination table, from the partition's healthy tables."""
    return lambda p: {f"dst:{table}": rows(_side(p), p)}


DAMAGES = (
    # -- record_chunk_diffs (cm_record_chunks.json)
    Damage(
        "CM-DATA-1",
        "fail",
        "a chunk's records differ",
        ("record_chunk_diffs.chunk_status",),
        _dst(
            "record_chunks",
            lambda t, p: _set(t["record_chunks"], lambda c: c.chunk_start == 10, checksum="x"),
        ),
    ),
    Damage(
        "CM-TXN-2",
        "fail",
        "the copy has no record at 6, an aborted one the source committed",
        ("record_chunk_diffs.gaps_equal",),
        _dst("record_chunks", lambda t, p: _chunks(p, skip=(6, 20))),
    ),
    Damage(
        "CM-EPOCH-4",
        "fail",
        "the copy's records carry epoch 4, the source's 3",
        ("record_chunk_diffs.epochs_equal",),
        _dst("record_chunks", lambda t, p: _chunks(p, epoch=4)),
    ),
    Damage(
        "CM-EPOCH-4",
        "fail",
        "the copy's leader epoch 2 is below its records' and batches' 3",
        ("record_chunk_diffs.dst_epoch_within_dle", "batch_diffs.dst_epoch_within_dle"),
        _dst("partitions", lambda t, p: _set(t["partitions"], lambda r: True, leader_epoch=2)),
    ),
    # -- batch_diffs (cm_batch_diffs.json)
    Damage(
        "CM-DATA-2",
        "fail",
        "a batch's checksum differs",
        ("batch_diffs.batch_status",),
        _dst("batches", lambda t, p: _set(t["batches"], lambda b: b.base_offset == 0, crc=1)),
    ),
    Damage(
        "CM-EPOCH-4",
        "fail",
        "the copy's batches carry epoch 4, the source's 3",
        ("batch_diffs.epochs_equal",),
        _dst("batches", lambda t, p: _set(t["batches"], lambda b: True, partition_leader_epoch=4)),
    ),
    # -- marker_diffs (cm_marker_diffs.json)
    Damage(
        "CM-TXN-2",
        "fail",
        "the copy aborted what the source committed",
        ("marker_diffs.marker_status",),
        lambda p: {
            "dst:markers": [_marker(p, 20, "ABORT")],
            "dst:batches": _set(_side(p)["batches"], lambda b: b.base_offset == 20, control_type=0),
        },
    ),
    # -- txn_closure (cm_txn_closure.json)
    Damage(
        "CM-TXN-3",
        "fail",
        "the copy lost the marker closing 10-19",
        ("txn_closure.unclosed_below_lso",),
        lambda p: {
            "dst:batches": [b for b in _side(p)["batches"] if b.base_offset != 20],
            "dst:markers": [],
        },
    ),
    Damage(
        "CM-TXN-3",
        "fail",
        "the copy closes the transaction twice, at 20 and 21",
        ("txn_closure.closes_twice",),
        lambda p: {
            "dst:batches": [
                *(b for b in _side(p)["batches"] if b.base_offset < 21),
                _control(p, 21),
                _batch(p, 22, 29),
                *(b for b in _side(p)["batches"] if b.base_offset >= 30),
            ],
            "dst:markers": [_marker(p, 20), _marker(p, 21)],
        },
    ),
    # -- scan_issues (cm_scan_issues.json)
    Damage(
        "CM-DATA-2",
        "fail",
        "a corrupt batch in the copy's segment",
        ("scan_issues.severity:fail",),
        _dst("batch_scan_issues", lambda t, p: [_issue(p, "crc_mismatch")]),
    ),
    Damage(
        "CM-DATA-2",
        "warn",
        "a segment without its index",
        ("scan_issues.severity:warn",),
        _dst("batch_scan_issues", lambda t, p: [_issue(p, "missing_index")]),
    ),
    Damage(
        "CM-DATA-2",
        "pass",
        "a segment still being written ends in a partial batch",
        ("scan_issues.severity:fail", "scan_issues.severity:warn"),
        _dst("batch_scan_issues", lambda t, p: [_issue(p, "truncated")]),
    ),
    # -- commit_epochs (cm_commit_epochs.json)
    Damage(
        "CM-EPOCH-3",
        "fail",
        "a commit clamped to the log start carries epoch 4, the batch there 3",
        ("commit_epochs.epoch_at_offset_matches",),
        _clamped_commit(4),
    ),
    Damage(
        "CM-EPOCH-3",
        "pass",
        "a commit clamped to the log start carries the batch's epoch",
        ("commit_epochs.epoch_at_offset_matches",),
        _clamped_commit(3),
    ),
)


def _declared() -> list[tuple[str, str]]:
    return [(inv.id, spec) for inv in DATA_LEVEL for spec in inv.inputs]


CASES = _declared()
PARTITIONS = {spec: k for k, spec in enumerate(sorted({spec for _, spec in CASES}), start=1)}
DAMAGED = {d: len(PARTITIONS) + k for k, d in enumerate(DAMAGES, start=1)}
# A scan's account that it did not read a partition whole, each way it can say so
# (tests/invariant_scenarios.py ``NOT_READ``), on the source, the destination or both.
_HEALTHY_RANGE = _side(0)["record_chunk_ranges"][0]
NOT_READ_CASES = [
    (table, side, form)
    for table in sorted(NOT_READ_ON_SPARK)
    for side in ("src", "dst", "src+dst")
    for form in NOT_READ[table](_HEALTHY_RANGE)
]
UNREAD = {case: len(PARTITIONS) + len(DAMAGES) + k for k, case in enumerate(NOT_READ_CASES, start=1)}


def _without(rows: list[Any], column: str) -> list[Any]:
    return [dataclasses.replace(r, **{column: None}) for r in rows] if column else []


def _pair() -> dict[str, Tables]:
    """Partition 0 healthy; partition k (``PARTITIONS``) with its input unknown; a partition
    per damage (``DAMAGED``) with its tables changed."""
    pair: dict[str, Tables] = {s: {t: [] for t in TABLES} for s in ("src", "dst")}
    for p in range(len(PARTITIONS) + len(DAMAGES) + len(UNREAD) + 1):
        for side in ("src", "dst"):
            for table, rows in _side(p).items():
                pair[side][table] += rows
    for spec, p in PARTITIONS.items():
        side, _, what = spec.partition(":")
        table, _, column = what.partition(".")
        assert table in TABLES, spec
        kept = [r for r in pair[side][table] if r.partition != p]
        pair[side][table] = kept + _without([r for r in pair[side][table] if r.partition == p], column)
    for damage, p in DAMAGED.items():
        for where, rows in damage.change(p).items():
            side, _, table = where.partition(":")
            pair[side][table] = [r for r in pair[side][table] if r.partition != p] + rows
    for (table, sides, form), p in UNREAD.items():
        for side in sides.split("+"):
            pair[side][table] = [
                NOT_READ[table](r)[form] if r.partition == p else r for r in pair[side][table]
            ]
    return pair


def _write(root: Path, pair: dict[str, Tables]) -> tuple[Path, Path]:
    src, dst = write_pair(
        root,
        pair["src"]["partitions"],
        pair["dst"]["partitions"],
        src_offsets=pair["src"]["group_offsets"],
        dst_offsets=pair["dst"]["group_offsets"],
    )
    for directory, side in ((src, "src"), (dst, "dst")):
        for table in SCANNED:
            write_table(directory, table, tuple(pair[side][table]))
    return src, dst


@pytest.fixture(scope="module")
def compared(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Compared:
    root = tmp_path_factory.mktemp("data-level")
    src, dst = _write(root, _pair())
    # The data-level tables and the group offsets the commit epochs read: the other
    # metadata comparisons are the unit tests', in process.
    data_only = dataclasses.replace(PROFILE, comparisons=(GROUP_OFFSETS,))
    return compare_snapshots(src, dst, root / "run", CFG, engine="spark", prof=data_only)


@pytest.fixture(scope="module")
def counts(compared: Compared) -> dict[Check, dict[int, Counts] | None]:
    """Every check's counts per partition: one query per table for all the cases."""
    return counts_by_partition(compared, CFG, PROFILE.suite_patterns)


def _status(counts: dict[Check, dict[int, Counts] | None], inv_id: str, partitions: tuple[int, ...]) -> str:
    """The invariant's status over these partitions' rows, folded as the validator folds it."""
    return fold(over(counts, partitions)).get(inv_id, "skipped")


def _names(checks: Collection[Check]) -> dict[Check, set[str]]:
    """The names a case may give each check: ``table.column:severity``, and ``table.column``
    where no other check judges that column of that table."""
    plain = Counter(f"{c.table}.{c.column}" for c in checks)
    out = {}
    for c in checks:
        column = f"{c.table}.{c.column}"
        out[c] = {f"{column}:{c.severity}", *([column] if plain[column] == 1 else [])}
    return out


def _by_name(counts: dict[Check, Counts | None]) -> dict[str, Counts | None]:
    return {name: counts[c] for c, names in _names(counts).items() for name in names}


def test_every_data_level_invariant_declares_its_inputs() -> None:
    assert {inv.id for inv in DATA_LEVEL} == {"CM-DATA-1", "CM-DATA-2", "CM-TXN-2", "CM-TXN-3", "CM-EPOCH-4"}
    assert all(inv.inputs for inv in DATA_LEVEL), [inv.id for inv in DATA_LEVEL if not inv.inputs]


@pytest.mark.parametrize("inv_id", [inv.id for inv in DATA_LEVEL])
def test_every_data_level_invariant_passes_where_its_inputs_are_known(
    counts: dict[Check, dict[int, Counts] | None], inv_id: str
) -> None:
    assert _status(counts, inv_id, (0,)) == "pass"


@pytest.mark.parametrize(("inv_id", "spec"), CASES, ids=[f"{i}:{s}" for i, s in CASES])
def test_an_unknown_data_level_input_never_passes(
    counts: dict[Check, dict[int, Counts] | None], inv_id: str, spec: str
) -> None:
    status = _status(counts, inv_id, (0, PARTITIONS[spec]))
    assert status != "pass", f"{inv_id} passes with {spec} unknown on partition {PARTITIONS[spec]}"


@pytest.mark.parametrize(("table", "side", "form"), NOT_READ_CASES, ids=[":".join(c) for c in NOT_READ_CASES])
def test_a_data_level_input_present_but_not_read_never_passes(
    counts: dict[Check, dict[int, Counts] | None], table: str, side: str, form: str
) -> None:
    """A scan's account that it did not read a partition whole (refused, stopped early, an
    impossible range) is an unknown input, never an empty or a matching partition: every
    data-level invariant declaring the table as an input is not ``pass`` over it."""
    judged = [inv.id for inv in DATA_LEVEL if any(f"{s}:{table}" in inv.inputs for s in side.split("+"))]
    assert judged, (side, table)
    for inv_id in judged:
        status = _status(counts, inv_id, (0, UNREAD[(table, side, form)]))
        assert status != "pass", f"{inv_id} passes with {side}:{table} {form}"


def test_every_spark_compared_read_account_has_its_not_read_cases() -> None:
    assert {table for table, _, _ in NOT_READ_CASES} == NOT_READ_ON_SPARK
    assert set(TABLES) >= NOT_READ_ON_SPARK


@pytest.mark.parametrize("damage", DAMAGES, ids=lambda d: f"{d.invariant}:{d.expected}:{d.what}")
def test_a_data_level_check_reaches_the_status_its_case_names(
    counts: dict[Check, dict[int, Counts] | None], damage: Damage
) -> None:
    p = DAMAGED[damage]
    assert _status(counts, damage.invariant, (0, p)) == damage.expected
    named = _by_name(over(counts, (p,)))
    for name in damage.checks:
        rejected, unchecked, judged = named[name] or (0, 0, 0)
        if damage.expected == "pass":
            assert judged and not rejected and not unchecked, (name, named[name])
        else:
            assert rejected, f"{name} rejects no row of partition {p}: {named[name]}"


def test_every_data_level_check_has_its_cases(counts: dict[Check, dict[int, Counts] | None]) -> None:
    """Each check on a Spark-computed table rejects a case's damage at its severity, and
    accepts healthy rows: partition 0's, or a pass case's where partition 0 has none of its
    rows (no scan issue, no clamped commit there)."""
    missing = []
    healthy = over(counts, (0,))
    metadata = {c.table for c in PROFILE.comparisons}  # the rest only Spark computes
    names = _names(counts)
    for check in (c for c in counts if c.table not in metadata):
        cases = [d for d in DAMAGES if d.invariant == check.invariant and names[check] & set(d.checks)]
        if not any(d.expected == check.severity for d in cases):
            missing.append(f"{check.invariant}: no {check.severity} case for {check.table}.{check.column}")
        judged_at_0 = (healthy.get(check) or (0, 0, 0))[2]
        if not judged_at_0 and not any(d.expected == "pass" for d in cases):
            missing.append(f"{check.invariant}: nothing healthy judged by {check.table}.{check.column}")
    assert not missing, sorted(set(missing))
