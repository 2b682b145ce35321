"""Output roots in trouble, for the tests of overlapping runs and output failures: a run
holding the lock in another process, small or read-only filesystems, a finished earlier run
whose files must come through untouched."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Another mirror-audit process holding an output root's lock, through the module's own function.
_HOLDER = """
import sys, time
from pathlib import Path
from audit.output_lock import output_lock
with output_lock(Path(sys.argv[1]), job="nightly"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


@contextlib.contextmanager
def lock_held_elsewhere(root: Path, seconds: float = 120.0) -> Iterator[subprocess.Popen[str]]:
    """A second process holds ``root``'s lock for ``seconds`` (or until the block ends)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(root), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "held", "the holder process did not take the lock"
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


def snapshot_pair(root: Path) -> tuple[Path, Path]:
    """A healthy snapshot pair (its audit passes: exit 0)."""
    from tests.snapshots import part, write_pair

    return write_pair(root, [part("orders")], [part("orders", leader_epoch=8)])


def audit_argv(src: Path, dst: Path, out: Path, command: str = "audit") -> list[str]:
    """An offline audit (or readiness) on the in-process engine: no JVM."""
    return [command, "--source", str(src), "--destination", str(dst), "--out", str(out), "--engine", "local"]


def make_previous_run(where: Path) -> Path:
    """A finished run (summary.json, report, validation, compare) made by the CLI."""
    from audit.cli import main

    src, dst = snapshot_pair(where / "snaps")
    run = where / "runs" / "20261124T000000Z"
    assert main(audit_argv(src, dst, run)) == 0
    assert (run / "summary.json").is_file()
    return run


def copy_run(run: Path, root: Path) -> Path:
    """``run`` copied into ``root`` with its modification times."""
    return Path(shutil.copytree(run, root / run.name, copy_function=shutil.copy2))


def files_state(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``directory``: its bytes and modification time."""
    return {
        str(p.relative_to(directory)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def tree_size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


@contextlib.contextmanager
def tmpfs(path: Path, size_bytes: int) -> Iterator[Path]:
    """A tmpfs of ``size_bytes`` mounted at ``path`` for the block: a disk that can fill up
    or be made read-only. Needs root (tests run as root here); skipped, saying why, where
    mounting is refused (each such test has an injected variant that always runs)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the injected variant of this test runs instead)")
    path.mkdir(parents=True, exist_ok=True)
    size_kib = max(4, size_bytes // 1024)
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"mount -t tmpfs refused here ({proc.stderr.strip()}); the injected variant runs instead")
    try:
        yield path
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True, check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def remount_read_only(path: Path) -> None:
    """The filesystem at ``path`` turned read-only, as the kernel does after an I/O error."""
    subprocess.run(["mount", "-o", "remount,ro", str(path)], capture_output=True, text=True, check=True)


def error_line(err: str) -> str:
    """The command's one error line, checked to be the only one and no traceback of ours
    (Great Expectations logs the tracebacks of the Data Docs pages it skips, quoted, inside
    its own log lines)."""
    assert not any(line.startswith("Traceback (most recent call last)") for line in err.splitlines()), err
    lines = [line for line in err.splitlines() if line.startswith("mirror-audit: error:")]
    assert len(lines) == 1, err[-3000:]
    assert "internal error" not in lines[0], err[-3000:]
    return lines[0]
