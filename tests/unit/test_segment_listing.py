"""What a segment scan of a live broker's log dir reads, leaves out and reports.

A broker's log dir holds more than ``<topic>-<partition>`` directories: replica
directories Kafka has set aside (``-future``, ``-delete``, ``-stray``), KRaft's metadata
log, ``meta.properties`` and checkpoint files. The listing is Spark's (``*.log`` files
only); everything after it runs here without a JVM: placing the files, planning the ranges
and the scan task itself, with a list standing in for the issues accumulator.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from audit.collect.batches.format import ScanIssue
from audit.collect.batches.listing import place_segments, set_aside_of
from audit.collect.batches.segments import _scan_task, plan_ranges
from audit.config import PatternSet, ScopeConfig
from tests.batches import batch, index

UUID = "5f0e6c2a9b1d4e7f8a3c2b1d0e9f8a7b"  # Kafka's unique id: a UUID without its dashes


def _segment(directory: Path, base: int = 0, count: int = 3, indexed: bool = True) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    batches = [batch(base + i, [(b"k", f"v{i}".encode())]) for i in range(count)]
    (directory / f"{base:020d}.log").write_bytes(b"".join(batches))
    if indexed:
        (directory / f"{base:020d}.index").write_bytes(index([], preallocated=8))


def broker_log_dir(root: Path) -> Path:
    """A log dir as a running KRaft broker leaves it, plus one segment in no partition."""
    _segment(root / "orders-0")
    (root / "orders-0" / "partition.metadata").write_text("version: 0\ntopic_id: q1zq4Ck7TyWBfw0r_E9hKA\n")
    (root / "orders-0" / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    _segment(root / "orders-5", indexed=False)  # a current replica whose index is gone
    _segment(root / f"orders-0.{UUID}-future")  # being moved to another log dir
    _segment(root / f"orders-1.{UUID}-delete")  # waiting to be deleted
    _segment(root / f"orders-2.{UUID}-stray")  # not assigned to this broker
    _segment(root / f"eu.orders-3.{UUID}-delete")  # a dot in the topic name
    _segment(root / "__cluster_metadata-0")
    (root / "__cluster_metadata-0" / "quorum-state").write_text("{}")
    for name in (
        "meta.properties",
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
        ".lock",
    ):
        (root / name).write_text("0\n0\n")
    _segment(root / "restored")  # no <topic>-<partition> directory: cannot be placed
    return root


def _listed(root: Path) -> list[str]:
    """What Spark's ``binaryFile`` listing with ``pathGlobFilter *.log`` returns."""
    return sorted(p.as_uri() for p in root.rglob("*.log"))


class _Issues:
    """Stands in for the Spark accumulator the scan task reports issues on."""

    def __init__(self) -> None:
        self.value: list[tuple[Any, ...]] = []

    def add(self, items: list[tuple[Any, ...]]) -> None:
        self.value.extend(items)


def _run_task(ranges: list[tuple[Any, ...]]) -> tuple[int, list[ScanIssue]]:
    names = ["path", "topic", "partition", "start", "end", "size", "is_last_segment", "note"]
    rb = pa.RecordBatch.from_pydict({n: [r[i] for r in ranges] for i, n in enumerate(names)})
    issues = _Issues()
    rows = sum(out.num_rows for out in _scan_task(False, issues)(iter([rb])))
    return rows, [ScanIssue(*t) for t in issues.value]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (f"orders-0.{UUID}-future", ("orders", 0, "future")),
        (f"orders-12.{UUID}-delete", ("orders", 12, "delete")),
        (f"eu.orders-3.{UUID}-stray", ("eu.orders", 3, "stray")),
        (f"x-delete-4.{UUID}-delete", ("x-delete", 4, "delete")),
        ("orders-0", None),  # a current replica
        ("x-delete-4", None),  # a topic named x-delete: a current replica too
        ("orders-0-delete", None),  # not Kafka's form: no unique id
        (f"orders.{UUID}-delete", None),  # no partition
    ],
)
def test_set_aside_directory_names(name: str, expected: tuple[str, int, str] | None) -> None:
    found = set_aside_of(f"file:///data/{name}/00000000000000000000.log")
    assert (None if found is None else (found.topic, found.partition, found.state)) == expected
    if found is not None:
        assert found.directory == f"file:///data/{name}"


def test_a_live_log_dir_reads_current_replicas_and_reports_set_aside_ones(tmp_path: Path) -> None:
    root = broker_log_dir(tmp_path / "kafka-logs")
    listing = place_segments(_listed(root), ScopeConfig())

    assert {(f.uri.rsplit("/", 2)[-2], f.topic, f.partition) for f in listing.files} == {
        ("orders-0", "orders", 0),
        ("orders-5", "orders", 5),
        ("restored", None, None),
    }
    assert listing.duplicates == []  # a -future copy is not a second copy of orders-0
    assert sorted((a.topic, a.partition, a.state) for a in listing.set_aside) == [
        ("eu.orders", 3, "delete"),
        ("orders", 0, "future"),
        ("orders", 1, "delete"),
        ("orders", 2, "stray"),
    ]

    rows, issues = _run_task(plan_ranges(listing, 1 << 20))
    assert rows == 6  # orders-0's and orders-5's batches only: nothing of the set-aside copies
    by_kind = sorted((i.kind, i.severity, i.topic, i.partition) for i in issues)
    assert by_kind == [
        ("missing_index", "warn", "orders", 5),
        ("not_a_partition", "error", None, None),
        ("set_aside_replica", "info", "eu.orders", 3),
        ("set_aside_replica", "info", "orders", 0),
        ("set_aside_replica", "info", "orders", 1),
        ("set_aside_replica", "info", "orders", 2),
    ]
    future = next(i for i in issues if i.kind == "set_aside_replica" and i.partition == 0)
    assert future.file == (root / f"orders-0.{UUID}-future").as_uri()
    assert future.position is None and "-future" in future.detail
    (lost,) = (i for i in issues if i.kind == "not_a_partition")
    assert lost.file is not None and lost.file.endswith("restored/00000000000000000000.log")


def test_set_aside_and_metadata_directories_follow_scope(tmp_path: Path) -> None:
    root = broker_log_dir(tmp_path / "kafka-logs")
    only_eu = ScopeConfig(topics=PatternSet(include=(r"eu\..*",)))
    listing = place_segments(_listed(root), only_eu)
    assert [(a.topic, a.partition) for a in listing.set_aside] == [("eu.orders", 3)]
    # KRaft's metadata log is no topic: not read even with internal topics in scope.
    everything = place_segments(_listed(root), ScopeConfig(include_internal_topics=True))
    assert "__cluster_metadata" not in {f.topic for f in everything.files}
    assert {f.topic for f in everything.files} == {"orders", None}


def test_a_directory_whose_partition_number_is_past_32_bits_is_not_a_partition() -> None:
    """big-99999999999 reached Spark's int32 partition column: PySparkValueError, internal error."""
    from audit.collect.batches.listing import partition_of

    assert partition_of("file:///logs/big-99999999999/00000000000000000000.log") == (None, None)
    assert partition_of("file:///logs/big-2147483647/00000000000000000000.log") == ("big", 2147483647)


# A topic id in LocalTieredStorage's directory name: base64url, here ending in "-12", which
# must not be read as a partition number.
TOPIC_ID = "t-5vIW8ZRTWEfDhtAvD-12"
SEGMENT_ID = "kGvDkfOlQtyRrcQJxOrZXg"


def _remote_segment(directory: Path, base: int, count: int = 3, segment_id: str = SEGMENT_ID) -> None:
    """A segment as LocalTieredStorage keeps it in the remote tier: the local segment's bytes
    under ``<base offset>-<segment id>.log``, its indexes beside it."""
    directory.mkdir(parents=True, exist_ok=True)
    batches = [batch(base + i, [(b"k", f"v{i}".encode())]) for i in range(count)]
    (directory / f"{base:020d}-{segment_id}.log").write_bytes(b"".join(batches))
    (directory / f"{base:020d}-{segment_id}.index").write_bytes(index([], preallocated=8))


def test_remote_tier_segments_join_their_partition_below_the_local_log(tmp_path: Path) -> None:
    """Tiered storage: the remote tier (LocalTieredStorage's layout) and the local log dir
    of one partition read as one log, each batch once: the remote segments below the first
    local one, the segments in both tiers (copied, not yet deleted locally) from the local
    copy."""
    remote = tmp_path / "remote" / "kafka-tiered-storage" / f"orders-0-{TOPIC_ID}"
    _remote_segment(remote, 0)
    _remote_segment(remote, 3)
    _remote_segment(remote, 3, segment_id="Z" * 22)  # a copy retried: one file per base offset
    _remote_segment(remote, 6)  # still local too
    _segment(tmp_path / "logs" / "orders-0", base=6)
    listing = place_segments(_listed(tmp_path / "remote") + _listed(tmp_path / "logs"), ScopeConfig())

    placed = [(f.uri.rsplit("/", 1)[-1], f.topic, f.partition, f.is_last_segment) for f in listing.files]
    assert placed == [
        (f"{0:020d}-{SEGMENT_ID}.log", "orders", 0, False),
        (f"{3:020d}-{SEGMENT_ID}.log", "orders", 0, False),
        (f"{6:020d}.log", "orders", 0, True),
    ]
    assert listing.duplicates == []
    rows, issues = _run_task(plan_ranges(listing, 1 << 20))
    assert rows == 9 and issues == []  # offsets 0-8, each batch once, through the one parser


def test_a_remote_tier_alone_is_read_and_follows_scope(tmp_path: Path) -> None:
    remote = tmp_path / "remote" / "kafka-tiered-storage"
    _remote_segment(remote / f"orders-0-{TOPIC_ID}", 0)
    _remote_segment(remote / f"audit-log-2-{TOPIC_ID}", 0)
    listing = place_segments(
        _listed(tmp_path / "remote"), ScopeConfig(topics=PatternSet(include=("orders",)))
    )
    assert [(f.topic, f.partition) for f in listing.files] == [("orders", 0)]
