"""A disk that fills while Spark writes the comparison tables: the JVM's "No space left on
device" reaches Python as text inside a Py4J or Spark exception, with no errno; it is exit
2 naming the run directory, like the same failure in pyarrow or Great Expectations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.cli import run_in_process
from tests.output_roots import error_line, snapshot_pair, tmpfs


def test_a_full_disk_under_spark_exits_2_naming_the_run_directory(spark: Any, tmp_path: Path) -> None:
    src, dst = snapshot_pair(tmp_path / "snaps")
    with tmpfs(tmp_path / "tiny", 16 * 1024) as root:
        out = root / "new"
        proc = run_in_process("audit", "--source", str(src), "--destination", str(dst), "--out", str(out))
        line = error_line(proc.stderr)
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert f"run directory {out} cannot be written: No space left on device" in line, line
        assert not out.exists()
