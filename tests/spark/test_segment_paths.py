"""Which segment files a scan lists, through Spark's Hadoop filesystem."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from audit.collect.batches.listing import list_log_files, list_segments
from audit.errors import InputError

SEGMENT = "00000000000000000000.log"


def _touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def test_topics_whose_names_start_with_an_underscore_or_a_dot_are_listed(spark: Any, tmp_path: Path) -> None:
    """Spark's own file index hides names starting with '_' or '.', which would leave
    topics like _schemas out of the scan without a word."""
    for name in ("_schemas-0", "_confluent-command-0", ".odd-0", "orders-0"):
        _touch(tmp_path / name / SEGMENT)
        _touch(tmp_path / name / "00000000000000000000.index")  # not a segment: never listed
    _touch(tmp_path / "orders-0" / "00000000000000000100.log")
    listing = list_segments(spark, [str(tmp_path)])
    topics = sorted({(f.topic, f.partition) for f in listing.files})
    assert topics == [(".odd", 0), ("_confluent-command", 0), ("_schemas", 0), ("orders", 0)]
    assert len(listing.files) == 5
    newest = [f.uri for f in listing.files if f.is_last_segment and f.topic == "orders"]
    assert [u.rsplit("/", 1)[-1] for u in newest] == ["00000000000000000100.log"]


def test_paths_may_be_files_directories_or_globs_and_overlap(spark: Any, tmp_path: Path) -> None:
    one = _touch(tmp_path / "a-0" / SEGMENT)
    _touch(tmp_path / "b-0" / SEGMENT)
    uris = list_log_files(spark, [str(one), str(tmp_path), str(tmp_path / "*-0")])
    assert sorted(u.rsplit("/", 2)[-2] for u in uris) == ["a-0", "b-0"]  # each file once
    assert all(u.startswith("file:///") for u in uris)


def test_a_missing_path_or_an_unknown_filesystem_is_an_input_error(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"segment path does not exist: .*nope"):
        list_log_files(spark, [str(tmp_path / "nope")])
    with pytest.raises(InputError, match="segment path does not exist"):
        list_log_files(spark, [str(tmp_path / "nothing-*")])
    with pytest.raises(InputError, match='No FileSystem for scheme "nosuch"'):
        list_log_files(spark, ["nosuch://bucket/topic-0"])


@pytest.mark.parametrize("kind", ["relative", "tilde", "file-uri", "glob"])
def test_segments_scan_takes_each_kind_of_path_from_the_command_line(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A relative or ``~`` path is made absolute before Spark sees it; a ``file:`` URI and
    a glob reach Hadoop as written; ``--out`` may be relative too. Each kind finds the same
    batches as an absolute path."""
    from audit.cli import main
    from tests.spark.test_batch_audit import source_tree

    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    tree = source_tree((home if kind == "tilde" else work) / "logs")
    given = {
        "relative": "logs",
        "tilde": "~/logs",
        "file-uri": f"file://{tree}",
        # As written: a relative glob would be resolved by Hadoop against the JVM's working
        # directory (the session here is the suite's, started elsewhere).
        "glob": f"{tree}/orders-*",
    }[kind]
    assert main(["segments", "scan", given, "--out", "snap", "--role", "source"]) == 0
    batches = pq.read_table(work / "snap" / "batches.parquet").to_pylist()
    assert len(batches) == 17  # what test_batch_audit's scan of the same tree finds
    assert all(r["file"].startswith(f"file://{tree}/") for r in batches)


def test_segments_scan_output_json_says_what_it_wrote(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--output json: one object on one line, held to the shipped schema, with the scan's
    counts (17 batches, as the text output says of the same tree)."""
    import json

    from audit.cli import main
    from audit.report.summary import output_schema, schema_errors
    from tests.spark.test_batch_audit import source_tree

    tree = source_tree(tmp_path / "logs")
    capsys.readouterr()
    args = [
        "segments",
        "scan",
        str(tree),
        "--out",
        str(tmp_path / "snap"),
        "--role",
        "source",
        "--output",
        "json",
    ]
    assert main(args) == 0
    (line,) = capsys.readouterr().out.splitlines()
    obj = json.loads(line)
    assert schema_errors(obj, output_schema()) == []
    assert (obj["outcome"], obj["out"], obj["batches"]["batches"]) == ("written", str(tmp_path / "snap"), 17)
