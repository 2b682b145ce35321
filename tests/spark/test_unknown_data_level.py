"""Unknown never passes, at cluster mirroring's data level, generated from the declarations
as tests/unit/test_unknown_never_passes.py is for the invariants whose SQL both engines
run: these comparisons are PySpark (audit/compare/batches.py, records.py), so Spark
computes them.

One pair holds every case, so one compare computes them all: partition 0 with every input
known (every data-level invariant passes on it), and partition k with the k-th declared
input unknown (``side:table`` rows of the partition absent from that side's snapshot,
``side:table.column`` null there). Each invariant's status is folded over partitions 0 and
k, as the unit test folds its unknown partition beside a healthy twin: it must not pass.
A new data-level invariant that declares its inputs gets this test without writing it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from audit.collect.records.chunks import RangeChunker
from audit.compare.run import Compared
from audit.config_file import parse_config
from audit.pipeline import compare_snapshots
from audit.profiles import profile_of
from audit.schemas import columns
from audit.snapshot import write_table
from audit.validate.invariants import CLUSTER_MIRRORING, Invariant
from tests.snapshots import T0_MS, part, write_pair
from tests.statuses import fold_statuses

pytestmark = pytest.mark.unit  # the fast tier's one Spark session checks the data level too

TOPIC = "orders"
# Offsets 0..34: a batch 0-9, a transaction 10-19 committed at 20, a batch 21-29, and a
# transaction 30-34 still open (the last stable offset is 30).
END = 35
LSO = 30
CHUNK = 10
PID = 7
CFG = parse_config("mirror:\n  preserves_topic_ids: true\n  preserves_batch_epochs: true\n", env={})
DATA_LEVEL: tuple[Invariant, ...] = tuple(inv for inv in CLUSTER_MIRRORING if inv.spark_only)
TABLES = ("partitions", "batches", "markers", "record_chunks")
# A row of a data-level snapshot table (the scans write them from Arrow: no record class).
ROW = {
    t: dataclasses.make_dataclass(f"{t}_row", [c.name for c in columns(t)], frozen=True) for t in TABLES[1:]
}


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


def _side(p: int) -> dict[str, list[Any]]:
    """One side's tables of partition ``p``: both sides hold the same."""
    txn = {"is_transactional": True, "producer_id": PID, "producer_epoch": 0, "attributes": 16}
    chunker = RangeChunker(TOPIC, p, 0, END, CHUNK)
    for o in range(END):
        if o != 20:  # the COMMIT marker: an offset a consumer never returns
            chunker.add(o, T0_MS - 100_000 + o, f"k{o}".encode(), f"v{o}".encode(), [], 3)
    chunk_fields = {f.name for f in dataclasses.fields(ROW["record_chunks"])}
    return {
        "partitions": [part(TOPIC, p, leader_epoch=5, high_watermark=END, last_stable_offset=LSO)],
        "batches": [
            _batch(p, 0, 9),
            _batch(p, 10, 19, **txn),
            _batch(
                p, 20, 20, **{**txn, "attributes": 48}, is_control=True, control_type=1, control_version=0
            ),
            _batch(p, 21, 29),
            _batch(p, 30, 34, **{**txn, "producer_id": PID + 1}),
        ],
        "markers": [
            ROW["markers"](TOPIC, p, 20, "COMMIT", 1, 0, 0, PID, 0, 3, T0_MS - 100_000 + 20, None, None)
        ],
        "record_chunks": [
            ROW["record_chunks"](
                **{
                    k: v
                    for k, v in {**c.row(), "isolation": "read_uncommitted", "compacted": False}.items()
                    if k in chunk_fields
                }
            )
            for c in chunker.finish()
        ],
    }


def _declared() -> list[tuple[str, str]]:
    return [(inv.id, spec) for inv in DATA_LEVEL for spec in inv.inputs]


CASES = _declared()
PARTITIONS = {spec: k for k, spec in enumerate(sorted({spec for _, spec in CASES}), start=1)}


def _without(rows: list[Any], column: str) -> list[Any]:
    return [dataclasses.replace(r, **{column: None}) for r in rows] if column else []


def _pair() -> dict[str, dict[str, list[Any]]]:
    """Partition 0 healthy; partition k (``PARTITIONS``) with its input unknown."""
    pair: dict[str, dict[str, list[Any]]] = {s: {t: [] for t in TABLES} for s in ("src", "dst")}
    for p in (0, *PARTITIONS.values()):
        for side in ("src", "dst"):
            for table, rows in _side(p).items():
                pair[side][table] += rows
    for spec, p in PARTITIONS.items():
        side, _, what = spec.partition(":")
        table, _, column = what.partition(".")
        assert table in TABLES, spec
        kept = [r for r in pair[side][table] if r.partition != p]
        pair[side][table] = kept + _without([r for r in pair[side][table] if r.partition == p], column)
    return pair


def _write(root: Path, pair: dict[str, dict[str, list[Any]]]) -> tuple[Path, Path]:
    src, dst = write_pair(root, pair["src"]["partitions"], pair["dst"]["partitions"])
    for directory, side in ((src, "src"), (dst, "dst")):
        for table in TABLES[1:]:
            write_table(directory, table, tuple(pair[side][table]))
    return src, dst


@pytest.fixture(scope="module")
def compared(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Compared:
    root = tmp_path_factory.mktemp("unknown-data-level")
    src, dst = _write(root, _pair())
    # The data-level tables alone: the metadata comparisons are the unit test's, in process.
    data_only = dataclasses.replace(profile_of(CFG), comparisons=())
    return compare_snapshots(src, dst, root / "run", CFG, engine="spark", prof=data_only)


def _status(compared: Compared, inv_id: str, partitions: tuple[int, ...]) -> str:
    """The invariant's status over these partitions' rows, folded as the validator folds it."""
    only = f"partition IN ({', '.join(map(str, partitions))})"
    return fold_statuses(compared, CFG, profile_of(CFG).suite_patterns, only).get(inv_id, "skipped")


def test_every_data_level_invariant_declares_its_inputs() -> None:
    assert {inv.id for inv in DATA_LEVEL} == {"CM-DATA-1", "CM-DATA-2", "CM-TXN-2", "CM-TXN-3", "CM-EPOCH-4"}
    assert all(inv.inputs for inv in DATA_LEVEL), [inv.id for inv in DATA_LEVEL if not inv.inputs]


@pytest.mark.parametrize("inv_id", [inv.id for inv in DATA_LEVEL])
def test_every_data_level_invariant_passes_where_its_inputs_are_known(
    compared: Compared, inv_id: str
) -> None:
    assert _status(compared, inv_id, (0,)) == "pass"


@pytest.mark.parametrize(("inv_id", "spec"), CASES, ids=[f"{i}:{s}" for i, s in CASES])
def test_an_unknown_data_level_input_never_passes(compared: Compared, inv_id: str, spec: str) -> None:
    status = _status(compared, inv_id, (0, PARTITIONS[spec]))
    assert status != "pass", f"{inv_id} passes with {spec} unknown on partition {PARTITIONS[spec]}"
