"""MirrorMaker 2 record by record (audit/compare/mm2_records.py): the matching query on
hand-made digests, one partition per situation, run by the in-process engine (the same SQL
Spark runs over a nightly scan). Each partition of the source topic ``t<n>`` is mirrored to
``source.t<n>``; a record's digest is its content (a letter per record here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from audit.compare.engines import LocalTables
from audit.compare.mm2_alignment import DIGESTS_MISSING, align_partition
from audit.compare.mm2_planned import PLANNED
from audit.compare.mm2_records import RECORDS
from audit.schemas import columns, row_of
from audit.validate.coverage import _reason_sql


@dataclass
class Side:
    """One side of a partition: its records' contents by offset (None: no record there, a
    marker or a hole), its log start and what the scan read."""

    contents: str  # one letter per offset from ``start``; "." is an offset with no record
    start: int = 0
    read: tuple[int, int] | None = None  # [start, read_to); default: all of it
    complete: bool = True
    compacted: bool = False
    present: bool = True  # the partition is in its cluster's snapshot

    @property
    def end(self) -> int:
        return self.start + len(self.contents)


@dataclass
class Case:
    src: Side
    dst: Side
    syncs: list[tuple[int, int]]
    expect: dict[str, Any] = field(default_factory=dict)
    # Where earlier runs left the partition verified: (source, replica, verified from).
    cut: tuple[int, int, int] | None = None


def _digest(letter: str) -> int:
    return ord(letter)


def _run(cases: dict[str, Case], tmp_path: Path, exactly_once: bool = False) -> dict[str, dict[str, Any]]:
    return _run_tables(tables_of(cases, exactly_once), tmp_path)


def _run_tables(tables: LocalTables, tmp_path: Path) -> dict[str, dict[str, Any]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    tables.compute(RECORDS, tmp_path / "mm2_record_partitions.parquet")
    return {r["topic"]: r for r in tables.rows("SELECT * FROM {mm2_record_partitions}")}


def tables_of(
    cases: dict[str, Case],
    exactly_once: bool = False,
    alignments: list[tuple[Any, ...]] | None = None,
    with_digests: bool = True,
) -> LocalTables:
    """The comparison's inputs for these cases, on the in-process engine; ``alignments``:
    the scan's matching as it read (``record_alignments``), none by default; without
    ``with_digests``, no digest of any record (the scan kept none)."""
    tables = LocalTables()
    src_parts: list[tuple[Any, ...]] = []
    dst_parts: list[tuple[Any, ...]] = []
    names: list[tuple[Any, ...]] = []
    scope: list[tuple[Any, ...]] = []
    syncs: list[tuple[Any, ...]] = []
    digests: dict[str, list[tuple[Any, ...]]] = {"src": [], "dst": []}
    ranges: dict[str, list[tuple[Any, ...]]] = {"src": [], "dst": []}
    cuts: list[tuple[Any, ...]] = []
    for topic, case in cases.items():
        remote = f"source.{topic}"
        if case.cut is not None:
            u, d, since = case.cut
            cuts.append(
                row_of(
                    "record_digest_cuts",
                    topic=topic,
                    partition=0,
                    src_through=u,
                    dst_through=d,
                    verified_from=since,
                )
            )
        names.append((topic, remote))
        scope.append((topic, True, False))
        for side, name, data, parts in (
            ("src", topic, case.src, src_parts),
            ("dst", remote, case.dst, dst_parts),
        ):
            if not data.present:
                continue
            parts.append(
                row_of(
                    "partitions",
                    topic=name,
                    partition=0,
                    log_start_offset=data.start,
                    high_watermark=data.end,
                    last_stable_offset=data.end,
                )
            )
            lo, hi = data.read or (data.start, data.end)
            for i, letter in enumerate(data.contents):
                offset = data.start + i
                if letter != "." and lo <= offset < hi:
                    digests[side].append(
                        row_of(
                            "record_digests", topic=name, partition=0, offset=offset, digest=_digest(letter)
                        )
                    )
            ranges[side].append(
                row_of(
                    "record_digest_ranges",
                    topic=name,
                    partition=0,
                    start_offset=lo,
                    end_offset=data.end,
                    read_to=hi,
                    complete=data.complete,
                    isolation="read_uncommitted",
                    compacted=data.compacted,
                )
            )
        for i, (up, down) in enumerate(case.syncs):
            syncs.append(
                row_of(
                    "mm2_offset_syncs",
                    topic=topic,
                    partition=0,
                    upstream_offset=up,
                    downstream_offset=down,
                    record_partition=0,
                    record_offset=i,
                )
            )
    tables.put("src_partitions", "partitions", src_parts)
    tables.put("dst_partitions", "partitions", dst_parts)
    tables.put("topic_names", "topic_names", names)
    tables.put("topic_scope", "topic_scope", scope)
    tables.put("offset_syncs", "mm2_offset_syncs", syncs)
    tables.put("src_record_digest_cuts", "record_digest_cuts", cuts)
    tables.put("src_record_alignments", "record_alignments", alignments or [])
    for side in ("src", "dst"):
        tables.put(f"{side}_record_digests", "record_digests", digests[side] if with_digests else [])
        tables.put(f"{side}_record_digest_ranges", "record_digest_ranges", ranges[side])
    tables.put(
        "run_params",
        "run_params",
        [
            row_of(
                "run_params",
                src_started_at_ms=0,
                preserves_topic_ids=False,
                preserves_batch_epochs=False,
                sync_group_offsets=False,
                dst_markers_collected=False,
                src_share_offsets_read=False,
                dst_share_offsets_read=False,
                mm2_exactly_once=exactly_once,
            )
        ],
    )
    return tables


TEN = "abcdefghij"

CASES: dict[str, Case] = {
    # A healthy copy, synced at its first and last record.
    "healthy": Case(
        Side(TEN),
        Side(TEN),
        [(0, 0), (9, 9)],
        {
            "missing_records": 0,
            "unexplained_records": 0,
            "duplicate_records": 0,
            "order_breaks": 0,
            "compared_src_records": 10,
            "compared_dst_records": 10,
            "uncompared_src_offsets": 0,
            "verified_src_offsets": 0,
            "clean_src_through": 9,
            "clean_dst_through": 9,
            "verified_from": 0,
        },
    ),
    # MirrorMaker 2 skipped source offsets 4 and 5 (its position moved past them).
    "skip": Case(
        Side(TEN),
        Side("abcdghij"),
        [(0, 0), (9, 7)],
        {
            "missing_records": 2,
            "first_missing_offset": 4,
            "unexplained_records": 0,
            "duplicate_records": 0,
            "clean_src_through": 3,  # the next run judges from the first missing record again
            "clean_dst_through": 3,
        },
    ),
    # Another producer wrote one record into the replica.
    "stray": Case(
        Side(TEN),
        Side("abcdeXfghij"),
        [(0, 0), (9, 10)],
        {
            "unexplained_records": 1,
            "first_unexplained_offset": 5,
            "missing_records": 0,
            "duplicate_records": 0,
            "clean_src_through": 4,
            "clean_dst_through": 4,
        },
    ),
    # A task restarted behind its last commit: e, f, g written again; the sync after the
    # restart pairs upstream 4 with its second copy (downstream 7).
    "replay": Case(
        Side(TEN),
        Side("abcdefgefghij"),
        [(0, 0), (4, 7), (9, 12)],
        {
            "duplicate_records": 3,
            "first_duplicate_offset": 7,
            "missing_records": 0,
            "unexplained_records": 0,
            "order_breaks": 0,
            "clean_src_through": 6,
            "clean_dst_through": 6,
        },
    ),
    # Two copies swapped.
    "swapped": Case(
        Side("abcde"),
        Side("abdce"),
        [(0, 0), (4, 4)],
        {
            "order_breaks": 1,
            "first_order_break_offset": 3,
            "missing_records": 0,
            "clean_src_through": 1,
            "clean_dst_through": 1,
        },
    ),
    # Incremental: earlier runs verified through source 4 / replica 4; judged from 5 on.
    "after_cut": Case(
        Side(TEN),
        Side(TEN),
        [(0, 0), (9, 9)],
        {
            "compared_src_start": 5,
            "compared_dst_start": 5,
            "compared_src_records": 5,
            "verified_src_offsets": 5,
            "uncompared_src_offsets": 0,
            "missing_records": 0,
            "clean_src_through": 9,
            "verified_from": 0,
        },
        cut=(4, 4, 0),
    ),
    # Past a cut at source 6 / replica 6, a restarted task wrote e, f, g again: the source's
    # records before the cut, read again but not judged, tell them for duplicates. No clean
    # pair follows, so the cut stays where it was.
    "replay_after_cut": Case(
        Side(TEN, read=(2, 10)),
        Side("abcdefgefghij", read=(7, 13)),
        [(4, 7), (9, 12)],
        {
            "duplicate_records": 3,
            "first_duplicate_offset": 7,
            "unexplained_records": 0,
            "missing_records": 0,
            "compared_src_start": 7,
            "clean_src_through": 6,
            "clean_dst_through": 6,
        },
        cut=(6, 6, 0),
    ),
    # A skip past the cut is found; one before it was found by the run that stopped there.
    "skip_after_cut": Case(
        Side(TEN, read=(4, 10)),
        Side("abcdghij", read=(4, 8)),
        [(9, 7)],
        {"missing_records": 2, "first_missing_offset": 4, "clean_src_through": 3, "clean_dst_through": 3},
        cut=(3, 3, 0),
    ),
    # Nothing new since the cut on the replica, five new source records it has not copied
    # yet: nothing judged past the newest sync, which lies before the cut; the verified
    # part is counted, the rest said uncompared.
    "quiet_after_cut": Case(
        Side("abcdefghijklmno", read=(10, 15)),
        Side(TEN, read=(10, 10)),
        [(9, 9)],
        {
            "compared_src_records": 0,
            "missing_records": 0,
            "verified_src_offsets": 10,
            "uncompared_src_offsets": 5,
            "clean_src_through": 9,
            "clean_dst_through": 9,
        },
        cut=(9, 9, 0),
    ),
    # Equal contents are matched by occurrence: the source holds "a" three times, the
    # replica twice.
    "repeats": Case(
        Side("aaab"), Side("aab"), [(0, 0), (3, 2)], {"missing_records": 1, "first_missing_offset": 2}
    ),
    # Retention removed the source's first five records; the replica still holds their
    # copies: outside the compared range, never unexplained.
    "src_expired": Case(
        Side("fghij", start=5),
        Side(TEN),
        [(0, 0), (9, 9)],
        {
            "unexplained_records": 0,
            "missing_records": 0,
            "compared_src_records": 5,
            "compared_dst_start": 5,
            "uncompared_src_offsets": 0,
        },
    ),
    # The replica's retention removed the copies of the first five: those originals are
    # outside the range, never missing, and said so.
    "dst_expired": Case(
        Side(TEN),
        Side("fghij", start=5),
        [(0, 0), (9, 9)],
        {
            "missing_records": 0,
            "compared_src_start": 5,
            "compared_src_records": 5,
            "uncompared_src_offsets": 5,
        },
    ),
    # Records past the newest sync (the replica's lag) are not called missing.
    "lagging": Case(
        Side("abcdefghijklmno"),
        Side(TEN),
        [(0, 0), (9, 9)],
        {"missing_records": 0, "compared_src_end": 10, "uncompared_src_offsets": 5},
    ),
    # A transaction marker at source offset 3 is no record; MirrorMaker 2 never copies it.
    "markers": Case(
        Side("abc.defg"), Side("abcdefg"), [(0, 0), (7, 6)], {"missing_records": 0, "compared_src_records": 7}
    ),
    # Only the newest sync left (the offset-syncs topic compacted): the range still starts
    # at the first copy.
    "compacted_syncs": Case(
        Side(TEN), Side("abcdghij"), [(9, 7)], {"missing_records": 2, "compared_src_start": 0}
    ),
    # Nothing on either side: nothing to miss, nothing to explain.
    "empty": Case(Side(""), Side(""), [], {"missing_records": 0, "unexplained_records": 0}),
}

UNCHECKED: dict[str, Case] = {
    # No offset sync yet: where the copies end is not known.
    "no_sync": Case(Side(TEN), Side(TEN), []),
    # The sync's copy lies past what the scan read of the replica.
    "sync_unread": Case(Side(TEN), Side(TEN, read=(0, 5), complete=False), [(9, 9)]),
    # A compacted topic: the cleaners keep different records.
    "compacted_topic": Case(Side(TEN, compacted=True), Side(TEN, compacted=True), [(0, 0), (9, 9)]),
}


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return _run({**CASES, **UNCHECKED}, tmp_path_factory.mktemp("mm2-records"))


@pytest.mark.parametrize("topic", sorted(CASES))
def test_each_situation_is_counted_exactly(judged: dict[str, dict[str, Any]], topic: str) -> None:
    row = judged[topic]
    assert {k: row[k] for k in CASES[topic].expect} == CASES[topic].expect, row
    flags = ("none_missing", "none_unexplained", "no_duplicates", "in_order")
    counts = ("missing_records", "unexplained_records", "duplicate_records", "order_breaks")
    assert [row[f] for f in flags] == [row[c] == 0 for c in counts]


@pytest.mark.parametrize("topic", sorted(UNCHECKED))
def test_without_a_range_nothing_is_judged(judged: dict[str, dict[str, Any]], topic: str) -> None:
    """Unknown never passes: every judged column null, so the rows are unchecked."""
    row = judged[topic]
    judged_columns = ("none_missing", "none_unexplained", "no_duplicates", "in_order", "missing_records")
    assert [row[c] for c in judged_columns] == [None] * len(judged_columns), row


def test_a_replica_absent_from_the_target_is_unchecked(tmp_path: Path) -> None:
    rows = _run({"gone": Case(Side(TEN), Side(TEN, present=False), [(0, 0), (9, 9)])}, tmp_path)
    assert (rows["gone"]["dst_present"], rows["gone"]["none_missing"]) == (False, None)


def test_duplicates_fail_only_where_mirror_maker_runs_exactly_once(tmp_path: Path) -> None:
    case = {"replay": CASES["replay"]}
    assert _run(case, tmp_path / "a")["replay"]["duplicates_fail"] is False
    assert _run(case, tmp_path / "b", exactly_once=True)["replay"]["duplicates_fail"] is True


def _scanned(cases: dict[str, Case], kept: bool = False, **changed: Any) -> list[tuple[Any, ...]]:
    """``record_alignments`` as the records scan writes it over these cases: each partition's
    planned range (the ranges step over its reads, in one query: mm2_planned.PLANNED)
    aligned as the scan's tasks align it, from the records in offset order; ``changed``:
    columns the scan wrote otherwise (another range: another configuration; a fallback)."""
    tables = tables_of(cases)
    rows = []
    for r in tables.rows(PLANNED):
        sides = []
        for name, topic, lo, hi in (
            ("src_record_digests", r["topic"], r["src_read_start"], r["end_u"]),
            ("dst_record_digests", r["remote_topic"], r["dst_read_start"], r["end_d"]),
        ):
            found = tables.rows(
                f"SELECT r.offset, r.digest FROM {{{name}}} r WHERE r.topic = '{topic}' "
                f"AND r.offset >= {lo} AND r.offset <= {hi} ORDER BY r.offset"
            )
            offsets = np.array([f["offset"] for f in found], dtype=np.int64).tobytes()
            digests = np.array([f["digest"] for f in found], dtype=np.int64).tobytes()
            sides.append(iter([(offsets, digests)]))
        tally = align_partition(r, sides[0], sides[1])
        rows.append(row_of("record_alignments", **{**r, **tally, **changed, "digests_kept": kept}))
    return rows


def test_the_scans_matching_as_it_read_gives_every_count_without_a_digest(
    judged: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    """Where the comparison's range is the one the scan aligned, its tally is taken: every
    row as from the digests, with none of them in the snapshots."""
    cases = {**CASES, **UNCHECKED}
    scanned = _scanned(cases)
    fallback = [c.name for c in columns("record_alignments")].index("fallback")
    assert scanned and all(r[fallback] is None for r in scanned)
    rows = _run_tables(tables_of(cases, alignments=scanned, with_digests=False), tmp_path)
    assert rows == judged


def test_a_range_the_scan_did_not_align_is_matched_from_kept_digests_or_left_unchecked(
    judged: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    cases = {t: CASES[t] for t in ("healthy", "skip", "stray")}
    # The scan aligned less of each (another configuration, say) and kept the digests:
    # matched from them, exactly as without the scan's rows.
    kept = _scanned(cases, kept=True, end_u=3)
    rows = _run_tables(tables_of(cases, alignments=kept), tmp_path / "kept")
    assert rows == {t: judged[t] for t in cases}
    # The scan's smaller window could not answer (a replay longer than it, say): aligned
    # again from the kept digests with the comparison's own window.
    fell_back = _scanned(cases, kept=True, fallback="a replay longer than the window")
    rows = _run_tables(tables_of(cases, alignments=fell_back), tmp_path / "fell-back")
    assert rows == {t: judged[t] for t in cases}
    assert {r["matching"] for r in rows.values()} == {"aligned"}
    # Kept none: nothing can be matched, so nothing is judged, and matching says why.
    dropped = tables_of(cases, alignments=_scanned(cases, end_u=3), with_digests=False)
    rows = _run_tables(dropped, tmp_path / "dropped")
    for topic, row in rows.items():
        assert row["matching"] == f"not matched: {DIGESTS_MISSING}", row
        judged_columns = ("none_missing", "none_unexplained", "no_duplicates", "in_order", "missing_records")
        assert [row[c] for c in judged_columns] == [None] * len(judged_columns), (topic, row)
    # Each row's unchecked rows are labelled with that cause.
    why = dropped.rows(
        f"SELECT {_reason_sql('mm2_record_partitions', '?')} AS why FROM {{mm2_record_partitions}}"
    )
    assert {w["why"] for w in why} == {
        "the digests of the records of the partition (the scan matched another range as it read "
        "them, or left its counts incomplete, and kept none: see matching)"
    }


def test_a_scan_tally_with_a_count_nulled_is_no_tally(
    judged: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    """A crafted or damaged record_alignments row over the very range, its missing count
    null: never read as zero missing. With the digests kept they are matched instead; with
    none kept, nothing is judged."""
    cases = {t: CASES[t] for t in ("skip", "healthy")}
    rows = _run_tables(
        tables_of(cases, alignments=_scanned(cases, kept=True, missing_records=None)), tmp_path / "kept"
    )
    assert rows == {t: judged[t] for t in cases}
    assert rows["skip"]["missing_records"] > 0
    nulled = _scanned(cases, missing_records=None)
    rows = _run_tables(tables_of(cases, alignments=nulled, with_digests=False), tmp_path / "none")
    for topic, row in rows.items():
        assert row["matching"] == f"not matched: {DIGESTS_MISSING}", row
        assert (row["missing_records"], row["none_missing"]) == (None, None), (topic, row)
