from __future__ import annotations

from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audit.cli import main
from audit.errors import InputError
from audit.sandbox.mirror import SourceRecord, split_segments
from audit.schemas import arrow_schema
from audit.snapshot import check_table, read_arrow, read_manifest
from audit.validate.results import CheckOutcome, fold, verdict
from tests.snapshots import part, write_pair


def _check(
    severity: Literal["fail", "warn"], success: bool, evaluated: int = 10, unexpected: int = 0
) -> CheckOutcome:
    return CheckOutcome(
        "X-1", severity, "d", success, evaluated, unexpected, ({"topic": "t"},) if not success else ()
    )


def test_fold_fail_beats_warn_and_warn_never_fails() -> None:
    assert (
        fold("X-1", "s", [_check("fail", False, unexpected=2), _check("warn", False, unexpected=5)]).status
        == "fail"
    )
    warn = fold("X-1", "s", [_check("fail", True), _check("warn", False, unexpected=5)])
    assert (warn.status, warn.violations, warn.examples) == ("warn", 5, ({"topic": "t"},))
    assert verdict([warn]) == "WARN"
    assert fold("X-1", "s", [_check("fail", True)]).status == "pass"


def test_fold_with_nothing_checked_is_skipped_not_pass() -> None:
    result = fold("X-1", "s", [_check("fail", True, evaluated=0)])
    assert result.status == "skipped"
    assert verdict([result]) == "PASS"


def _rec(offset: int, committed: bool = True) -> SourceRecord:
    return SourceRecord(offset, 0, None, b"v", (), committed)


def test_split_segments_finds_markers_at_gaps_and_the_end() -> None:
    # 0-2 plain+committed txn, marker 3, 4-5 aborted, marker 6, 7 plain, end (LSO) 8.
    records = [_rec(0), _rec(1), _rec(2), _rec(4, False), _rec(5, False), _rec(7)]
    segs = split_segments(records, 0, 8)
    assert [(tuple(r.offset for r in s.records), s.marker_offset) for s in segs] == [
        ((0, 1, 2), 3),
        ((4, 5), 6),
        ((7,), None),
    ]
    # A marker as the last offset before the LSO.
    assert [s.marker_offset for s in split_segments([_rec(0)], 0, 2)] == [1]


def test_snapshot_missing_column_names_file_and_column(tmp_path: Path) -> None:
    src, _ = write_pair(tmp_path, [part()], [part()])
    pq.write_table(
        pa.table({"topic": ["t"], "partition": pa.array([0], pa.int32())}), src / "partitions.parquet"
    )
    with pytest.raises(InputError, match=r"partitions\.parquet has no column 'topic_id'"):
        check_table(src, "partitions")


def test_a_column_added_later_reads_as_nulls_from_an_older_file(tmp_path: Path) -> None:
    older = pa.schema([f for f in arrow_schema("batch_scan_issues") if f.name != "end_position"])
    row = {"topic": "t", "partition": 0, "file": "f.log", "position": 7, "kind": "garbage"}
    pq.write_table(
        pa.Table.from_pylist([{**row, "severity": "error", "detail": "d"}], older),
        tmp_path / "batch_scan_issues.parquet",
    )
    assert check_table(tmp_path, "batch_scan_issues")
    (read,) = read_arrow(tmp_path, "batch_scan_issues").to_pylist()
    assert read["end_position"] is None and read["position"] == 7
    # A column of the first release is still required.
    pq.write_table(pa.table({"topic": ["t"]}), tmp_path / "batch_scan_issues.parquet")
    with pytest.raises(InputError, match="has no column 'partition'"):
        check_table(tmp_path, "batch_scan_issues")


def test_snapshot_role_and_format_checked(tmp_path: Path) -> None:
    src, dst = write_pair(tmp_path, [part()], [part()])
    with pytest.raises(InputError, match="role is 'destination'"):
        read_manifest(dst, "source")
    (src / "manifest.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        read_manifest(src, "source")


def test_offline_audit_with_missing_snapshot_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "audit",
            "--source",
            str(tmp_path / "nope"),
            "--destination",
            str(tmp_path / "nope2"),
            "--out",
            str(tmp_path / "run"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert f"snapshot directory {tmp_path / 'nope'} does not exist" in err
    assert "Traceback" not in err
    assert not (tmp_path / "run" / "summary.json").exists()
