"""Output failures: a run directory that already holds a run, an output root that is or
turns read-only, a disk that fills while the run writes. Each is exit 2 with one line naming
the path and the cause, no traceback, no summary.json in the failed run (what it wrote is
removed where the filesystem lets it), and the previous run's files untouched."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from audit.cli import main
from audit.run_dirs import write_failure
from tests.cli import run_in_process
from tests.output_roots import (
    audit_argv,
    copy_run,
    error_line,
    files_state,
    make_previous_run,
    remount_read_only,
    snapshot_pair,
    tmpfs,
    tree_size,
)

MIB = 1 << 20


@pytest.fixture(scope="module")
def previous_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_previous_run(tmp_path_factory.mktemp("previous"))


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    return snapshot_pair(tmp_path / "snaps")


# --------------------------------------------------------------------------- (c) an existing run directory


def test_out_pointing_at_an_earlier_run_is_refused_and_the_run_left_as_it_was(
    tmp_path: Path, previous_run: Path, pair: tuple[Path, Path]
) -> None:
    earlier = copy_run(previous_run, tmp_path / "runs")
    before = files_state(earlier)
    for command in ("audit", "readiness"):
        proc = run_in_process(*audit_argv(*pair, earlier, command=command))
        line = error_line(proc.stderr)
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert f"run directory {earlier} is not empty" in line and "summary.json" in line, line
    assert files_state(earlier) == before


def test_out_may_be_an_empty_directory_or_hold_only_the_snapshots_it_audits(
    tmp_path: Path, pair: tuple[Path, Path]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_in_process(*audit_argv(*pair, empty)).returncode == 0
    assert (empty / "summary.json").is_file()
    # 'snapshot --out RUN' then 'audit --source RUN/source --destination RUN/destination --out RUN'
    run = tmp_path / "run"
    src, dst = snapshot_pair(run)
    proc = run_in_process(*audit_argv(src, dst, run))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (run / "summary.json").is_file()
    again = run_in_process(*audit_argv(src, dst, run))  # now it holds a finished run
    assert again.returncode == 2 and f"run directory {run} is not empty" in error_line(again.stderr)
    # Anything else in it is refused, naming it.
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    proc = run_in_process(*audit_argv(*pair, other))
    assert proc.returncode == 2 and "(it holds notes.txt)" in error_line(proc.stderr)
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]


# --------------------------------------------------------------------------- (a) a read-only output root


def test_an_output_root_turning_read_only_exits_2_and_leaves_no_summary(
    tmp_path: Path, previous_run: Path, pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel remounts a filesystem read-only after an I/O error: here right after the
    compare stage, so Great Expectations' writes fail with EROFS. The runs after it fail at
    once (what check_writable did before too, now with the lock file in the way)."""
    import audit.pipeline

    with tmpfs(tmp_path / "disk", tree_size(previous_run) + 16 * MIB) as root:
        earlier = copy_run(previous_run, root)
        before = files_state(earlier)
        compare = audit.pipeline.compare_pair

        def compare_then_fail_the_disk(*args: Any, **kwargs: Any) -> Any:
            compared = compare(*args, **kwargs)
            remount_read_only(root)
            return compared

        monkeypatch.setattr(audit.pipeline, "compare_pair", compare_then_fail_the_disk)
        # readiness: no lock file held open for writing, so the remount is allowed
        proc = run_in_process(*audit_argv(*pair, root / "new", command="readiness"))
        line = error_line(proc.stderr)
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert f"run directory {root / 'new'} cannot be written: Read-only file system" in line, line
        # What it wrote could not be removed (read-only): it stays clearly unfinished.
        assert not (root / "new" / "summary.json").exists()
        # The next runs find the root read-only from the start: exit 2 naming it, nothing made.
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"output:\n  root: {root}\n")
        for argv, named in (
            (audit_argv(*pair, root / "next"), f"run directory {root / 'next'} cannot be created"),
            (["nightly", "--config", str(cfg)], f"output root (output.root) {root} is not writable"),
        ):
            proc = run_in_process(*argv)
            assert proc.returncode == 2, proc.stderr[-3000:]
            assert named in error_line(proc.stderr)
        assert sorted(p.name for p in root.iterdir()) == sorted([earlier.name, "new"])
        assert files_state(earlier) == before


# --------------------------------------------------------------------------- (b) a disk that fills


def test_a_disk_filling_while_the_run_writes_exits_2_and_gives_the_space_back(
    tmp_path: Path, previous_run: Path, pair: tuple[Path, Path]
) -> None:
    """A real full filesystem: room for the earlier run and 1 MiB, while a run writes about
    4 MiB (Great Expectations' Data Docs), so the write fails deep inside GX."""
    with tmpfs(tmp_path / "small", tree_size(previous_run) + MIB) as root:
        earlier = copy_run(previous_run, root)
        before = files_state(earlier)
        free = os.statvfs(root).f_bavail
        proc = run_in_process(*audit_argv(*pair, root / "new"))
        line = error_line(proc.stderr)
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert f"run directory {root / 'new'} cannot be written: No space left on device" in line, line
        assert not (root / "new").exists()  # removed: nothing half-written, the space back
        assert os.statvfs(root).f_bavail == free
        assert files_state(earlier) == before


def test_enospc_injected_at_the_summary_write_exits_2_and_removes_the_run(
    tmp_path: Path, previous_run: Path, pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same without a mount (runs anywhere): the last write of the run, summary.json,
    fails with a bare ENOSPC (no file name, as pyarrow and plain writes raise it), after the
    report was written."""
    import audit.report.summary

    def full(*args: Any, **kwargs: Any) -> Path:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(audit.report.summary, "atomic_write_json", full)
    root = tmp_path / "runs"
    earlier = copy_run(previous_run, root)
    before = files_state(earlier)
    proc = run_in_process(*audit_argv(*pair, root / "new"))
    line = error_line(proc.stderr)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert line == f"mirror-audit: error: run directory {root}/new cannot be written: No space left on device"
    assert not (root / "new").exists()  # its report/index.html too: nothing looks complete
    assert files_state(earlier) == before


def test_a_full_disk_in_a_command_without_a_run_directory_is_one_line_not_a_bug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import audit.cli.audit_commands

    def raising(exc: OSError) -> Any:
        def handler(args: Any) -> int:
            raise exc

        return handler

    cfg = tmp_path / "c.yaml"
    cfg.write_text("source:\n  bootstrap_servers: x:1\ndestination:\n  bootstrap_servers: x:1\n")
    argv = ["snapshot", "--config", str(cfg), "--out", str(tmp_path / "s")]
    monkeypatch.setattr(audit.cli.audit_commands, "cmd_snapshot", raising(OSError(errno.ENOSPC, "x")))
    assert main(argv) == 2
    assert error_line(capsys.readouterr().err).startswith("mirror-audit: error: No space left on device")
    # Any other OSError without a path is still a bug, with its traceback.
    monkeypatch.setattr(audit.cli.audit_commands, "cmd_snapshot", raising(OSError(errno.EBADF, "x")))
    assert main(argv) == 2
    assert "internal error (a bug)" in capsys.readouterr().err


class _JvmError(Exception):
    """What Py4J raises: the Java exception's text, no errno."""


def test_write_failures_are_recognised_however_they_are_raised(tmp_path: Path) -> None:
    run = tmp_path / "run"
    full = "No space left on device"
    assert write_failure(OSError(errno.ENOSPC, "Error writing bytes to file"), run) == full
    jvm = _JvmError(f"org.apache.spark.SparkException: Task failed\nCaused by: java.io.IOException: {full}")
    assert write_failure(jvm, run) == full
    duck = RuntimeError('IO Error: Could not write file "x.parquet": Disk quota exceeded')
    assert write_failure(duck, run) == "Disk quota exceeded"
    try:
        try:
            raise OSError(errno.EROFS, "Read-only file system", str(run / "f"))
        except OSError as exc:
            raise RuntimeError("the library's own wrapper") from exc
    except RuntimeError as wrapped:
        assert write_failure(wrapped, run) == f"Read-only file system ({run / 'f'})"
    # Permissions are the output's problem only under the run directory.
    assert write_failure(PermissionError(errno.EACCES, "Permission denied", str(run / "x")), run)
    assert write_failure(PermissionError(errno.EACCES, "Permission denied", "/etc/input"), run) is None
    assert write_failure(PermissionError(errno.EACCES, "Permission denied"), run) is None
    assert write_failure(OSError(errno.ENOENT, "No such file or directory"), run) is None
    assert write_failure(ValueError("something else"), run) is None
