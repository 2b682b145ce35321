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
