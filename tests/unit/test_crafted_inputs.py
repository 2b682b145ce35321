"""Crafted files and configs (issue 34's reproductions outside the segment parser): each is
exit 2 with one line naming the input, never a traceback, never a run over bytes that mean
nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audit.collect.metadata.mirror_state import parse_mirror_state, read_mirror_state
from audit.config_file import parse_config
from audit.errors import ConfigError, InputError
from tests.cli import run_in_process
from tests.output_roots import audit_argv, snapshot_pair


def test_a_yaml_alias_bomb_is_refused_at_once() -> None:
    """480 bytes of nested aliases kept config loading busy for over a minute."""
    lol = '["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'
    bomb = f"a: &a {lol}\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    started = time.monotonic()
    with pytest.raises(ConfigError, match=r"aliases .* are not allowed"):
        parse_config(bomb, env={})
    assert time.monotonic() - started < 2


def test_a_config_nested_too_deeply_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="nested too deeply"):
        parse_config("x: " + "[" * 100_000, env={})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[" * 100_000, "nested too deeply"),
        (
            '{"Mirrors": [{"MirrorName": "m", "Topics": [{"TopicName": "t", "Partitions": '
            '[{"PartitionIndex": 0, "StateValue": "STOPPED", "LastMirrorOffset": Infinity}]}]}]}',
            "Infinity",
        ),
        ('{"Mirrors": "abc"}', "Mirrors: expected a list of objects"),
        ('{"Mirrors": [{"MirrorName": "m", "Topics": [5]}]}', r"Topics: expected a list of objects"),
        ('[{"topic": "t", "partition": 100000000000000, "state": "STOPPED"}]', "not a partition number"),
        (
            '[{"topic": "t", "partition": 0, "state": "STOPPED", "lastMirrorOffset": 1e300}]',
            "beyond a 64-bit",
        ),
    ],
)
def test_a_crafted_mirror_state_is_an_input_error_naming_the_problem(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "state.json"
    path.write_text(text)
    with pytest.raises(InputError, match=expected):
        read_mirror_state(path)


def test_a_mirror_state_row_with_an_error_message_of_another_type_keeps_it_as_text() -> None:
    state = parse_mirror_state([{"topic": "t", "partition": 0, "state": "FAILED", "errorMessage": 7}])
    assert state.records[0].error_message == "7"


def test_a_manifest_nested_too_deeply_is_exit_2_naming_it(tmp_path: Path) -> None:
    src, dst = snapshot_pair(tmp_path / "snap")
    (src / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    proc = run_in_process(*audit_argv(src, dst, tmp_path / "run"))
    assert proc.returncode == 2 and "nested too deeply" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_a_crafted_summary_under_the_output_root_is_skipped_not_a_traceback_in_every_later_run(
    tmp_path: Path,
) -> None:
    src, dst = snapshot_pair(tmp_path / "snap")
    root = tmp_path / "runs"
    assert run_in_process(*audit_argv(src, dst, root / "first")).returncode == 0
    crafted = root / "crafted"
    crafted.mkdir()
    first = json.loads((root / "first" / "summary.json").read_text())
    (crafted / "summary.json").write_text(json.dumps({**first, "run": "x"}))
    elsewhere = root / "elsewhere"
    (root / "claims").mkdir()
    (root / "claims" / "summary.json").write_text(json.dumps({**first, "dir": str(elsewhere)}))
    proc = run_in_process(*audit_argv(src, dst, root / "next"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "not one this tool wrote" in proc.stderr
    summary = json.loads((root / "next" / "summary.json").read_text())
    assert summary["changes"]["previous_run"]["dir"] in ("first", "claims")  # never the claimed "dir"


@pytest.mark.parametrize(
    ("column", "value"), [("high_watermark", -1001), ("log_start_offset", -5), ("last_stable_offset", -1)]
)
def test_a_snapshot_with_a_negative_offset_is_exit_2_not_go(tmp_path: Path, column: str, value: int) -> None:
    """An earlier version wrote librdkafka's -1001 as a high watermark: offline it said GO."""
    src, dst = snapshot_pair(tmp_path / "snap")
    path = src / "partitions.parquet"
    table = pq.read_table(path)
    index = table.schema.get_field_index(column)
    table = table.set_column(index, column, pa.array([value] * table.num_rows, type=pa.int64()))
    pq.write_table(table, path)
    proc = run_in_process(*audit_argv(src, dst, tmp_path / "run", command="readiness"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert f"{column} of orders-0 is {value}" in line and "partitions.parquet" in line
    assert not (tmp_path / "run" / "summary.json").exists()


def test_a_group_id_of_any_length_gets_a_plan_file_name_within_the_filesystem_s_limit() -> None:
    from audit.report.failover_plan import _file_name

    long_ids = ["g" * 300, "é" * 85 + "x", "g" * 300 + "y"]
    names = [_file_name(g) for g in long_ids]
    assert all(len((n + ".csv").encode()) < 255 for n in names)
    assert len(set(names)) == 3  # cut ids stay apart
    assert _file_name("billing/eu") == "billing%2Feu"  # short ids as before


# --------------------------------------------------------------------------- issue 53


@pytest.mark.parametrize("notes", [["x"], "text", 7])
def test_a_manifest_whose_notes_are_not_an_object_is_exit_2_naming_the_key(
    tmp_path: Path, notes: object
) -> None:
    """A list of notes reached the report's details as an AttributeError (an internal error)."""
    src, dst = snapshot_pair(tmp_path / "snap")
    manifest = json.loads((src / "manifest.json").read_text())
    (src / "manifest.json").write_text(json.dumps({**manifest, "notes": notes}))
    proc = run_in_process(*audit_argv(src, dst, tmp_path / "run"))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert "manifest.json: notes is" in line and "expected an object" in line


def test_a_manifest_whose_records_note_is_not_an_object_is_an_input_error(tmp_path: Path) -> None:
    from audit.snapshot import read_manifest

    src, _ = snapshot_pair(tmp_path / "snap")
    manifest = json.loads((src / "manifest.json").read_text())
    for records, expected in (([1], "notes.records is a list"), ({"issues": [3]}, "notes.records.issues")):
        (src / "manifest.json").write_text(json.dumps({**manifest, "notes": {"records": records}}))
        with pytest.raises(InputError, match=expected):
            read_manifest(src, "source")


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("high_watermark", 2**63 - 1, "beyond 9007199254740991"),
        ("log_start_offset", 2**53, "beyond 9007199254740991"),
        ("max_timestamp_ms", -(2**63), "below -9007199254740991"),
    ],
)
def test_an_offset_or_timestamp_beyond_2_53_is_exit_2_on_both_engines_paths_never_an_overflow(
    tmp_path: Path, column: str, value: int, expected: str
) -> None:
    """2^63 - 1 overflowed ``lag_records * 2``: DuckDB's OutOfRangeException (and Spark's
    ARITHMETIC_OVERFLOW) as an internal error with a traceback. The bound is checked when
    the snapshot is read, before either engine computes anything."""
    src, dst = snapshot_pair(tmp_path / "snap")
    path = src / "partitions.parquet"
    table = pq.read_table(path)
    index = table.schema.get_field_index(column)
    table = table.set_column(index, column, pa.array([value] * table.num_rows, type=pa.int64()))
    pq.write_table(table, path)
    proc = run_in_process(*audit_argv(src, dst, tmp_path / "run", command="readiness"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert f"{column} of orders-0 is {value}, {expected}" in line and "partitions.parquet" in line


def test_figures_over_many_partitions_at_the_bound_sum_without_overflow(tmp_path: Path) -> None:
    """Each offset within the bound, their sum over 1100 partitions past 64 bits: the
    readiness figures and the report's totals are summed as decimals, never overflowing."""
    from audit import api
    from tests.snapshots import part, write_pair

    top = 2**53 - 1
    n = 1100
    src, dst = write_pair(
        tmp_path / "snap",
        [part("orders", p, high_watermark=top, last_stable_offset=top) for p in range(n)],
        [part("orders", p, leader_epoch=8, high_watermark=0, last_stable_offset=0) for p in range(n)],
    )
    result = api.readiness(None, source=src, destination=dst, out=tmp_path / "run")
    assert result.figures["expected_loss_records"] == n * top > 2**63
    assert (result.readiness, result.exit_code) == ("NO-GO", 1)


def _claiming(raw: bytes, total: int) -> bytes:
    """A batch whose length field claims ``total`` bytes (the field counts what follows it)."""
    damaged = bytearray(raw)
    damaged[8:12] = (total - 12).to_bytes(4, "big", signed=True)
    return bytes(damaged)


@pytest.mark.parametrize("last_segment", [True, False])
def test_a_batch_claiming_a_gigabyte_never_hides_the_batches_after_it(last_segment: bool) -> None:
    """In the newest segment such a batch was a routine "tail being written" (info) and hid
    every batch after it; in an older one an error that hid them as well. A batch with a
    whole batch after it is no tail: an error over its bytes, and the scan reads on."""
    from tests.batches import batch, walk_bytes

    first = batch(0, [(b"k", b"v")])
    liar = _claiming(batch(1, [(b"k", b"w" * 50)]), 10**9)
    after = [batch(2, [(b"k", b"x")]), batch(3, [(b"k", b"y" * 300)])]
    sink = walk_bytes(first + liar + b"".join(after), file="f.log", partial_tail_ok=last_segment)
    assert [r["base_offset"] for r in sink.rows()] == [0, 2, 3]
    (issue,) = sink.issues
    assert (issue.kind, issue.severity) == ("truncated_inside", "error")
    assert (issue.position, issue.end_position) == (len(first), len(first) + len(liar))
    assert (
        "claims 1000000000 bytes" in issue.detail
        and f"follows at byte {len(first) + len(liar)}" in issue.detail
    )


def test_a_batch_being_written_at_the_end_of_the_newest_segment_stays_a_routine_tail() -> None:
    from tests.batches import batch, walk_bytes

    first = batch(0, [(b"k", b"v")])
    partial = batch(1, [(b"k", bytes(range(256)) * 40)])[:5000]  # its length is true, its bytes not all there
    sink = walk_bytes(first + partial, file="f.log", partial_tail_ok=True)
    assert [r["base_offset"] for r in sink.rows()] == [0]
    (issue,) = sink.issues
    assert (issue.kind, issue.severity) == ("truncated", "info")


def test_a_lying_batch_in_a_segment_file_is_an_error_and_the_batches_after_it_are_read(
    tmp_path: Path,
) -> None:
    """The same through the file scan (the columnar walk hands the damaged part over)."""
    from audit.collect.batches.format import ScanSink
    from audit.collect.batches.scan import scan_schema_arrow
    from audit.collect.batches.segments import RangeFile, walk_range
    from tests.batches import batch

    first = [batch(i, [(b"k", b"v")]) for i in range(3)]
    liar = _claiming(batch(3, [(b"k", b"w" * 50)]), 10**9)
    after = [batch(4 + i, [(b"k", b"x")]) for i in range(3)]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join([*first, liar, *after]))
    sink = ScanSink()
    with RangeFile(str(path)) as f:
        arrow = walk_range(
            f, 0, f.size, sink, scan_schema_arrow(), topic="orders", partition=0, file="seg.log", deep=False,
            partial_tail_ok=True,
        )  # fmt: skip
    offsets = [r["base_offset"] for b in arrow for r in b.to_pylist()] + [
        r["base_offset"] for r in sink.rows()
    ]
    assert sorted(offsets) == [0, 1, 2, 4, 5, 6]
    assert [(i.kind, i.severity) for i in sink.issues] == [("truncated_inside", "error")]
