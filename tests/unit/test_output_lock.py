"""Overlapping runs on one output root: the jobs that write a run or record-verification.json
under it hold ``<root>/.mirror-audit.lock``; a second one exits 2 naming the holder;
readiness never waits; a lock file left by a crashed run stops nothing."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from audit.config_file import parse_config
from audit.errors import ConfigError, OutputError
from audit.output_lock import LOCK_FILE, output_lock
from tests.cli import run_in_process
from tests.output_roots import (
    audit_argv,
    copy_run,
    error_line,
    files_state,
    lock_held_elsewhere,
    make_previous_run,
    snapshot_pair,
)
from tests.snapshots import mirror, part, write_pair


@pytest.fixture(scope="module")
def previous_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_previous_run(tmp_path_factory.mktemp("previous"))


@pytest.fixture
def root(tmp_path: Path, previous_run: Path) -> Path:
    """An output root holding one finished run."""
    root = tmp_path / "runs"
    root.mkdir()
    copy_run(previous_run, root)
    return root


def test_a_second_process_cannot_take_a_held_lock_and_is_told_who_holds_it(tmp_path: Path) -> None:
    with lock_held_elsewhere(tmp_path) as holder:
        holder_says = json.loads((tmp_path / LOCK_FILE).read_text())
        started = time.monotonic()
        with pytest.raises(OutputError) as info, output_lock(tmp_path, job="audit"):
            pass
        assert time.monotonic() - started < 2  # lock_wait_seconds 0: at once
    message = str(info.value)
    assert f"(nightly, pid {holder.pid}, started {holder_says['started_at']})" in message
    assert f"holds the output root {tmp_path}: wait for it, or use another output root" in message
    assert "\n" not in message
    assert holder_says["argv"] == ["-c", str(tmp_path)]  # argv[0:2] only, never the whole command line


def test_the_lock_file_names_its_holder_while_held_and_nothing_after(tmp_path: Path) -> None:
    with output_lock(tmp_path, job="records scan") as path:
        holder = json.loads(path.read_text())
        assert holder["pid"] == os.getpid() and holder["job"] == "records scan"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", holder["started_at"])
        assert holder["argv"] == sys.argv[0:2]
    assert path.read_text().strip() == ""  # blanked, never truncated
    with output_lock(tmp_path):  # released: the next run takes it
        pass


def test_a_lock_file_left_by_a_crashed_run_is_harmless(root: Path) -> None:
    """The holder is killed (no cleanup runs): its lock file and content stay, the kernel
    dropped the lock, and the next audit proceeds."""
    with lock_held_elsewhere(root) as holder:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    assert json.loads((root / LOCK_FILE).read_text())["pid"] == holder.pid  # stale content
    src, dst = snapshot_pair(root.parent / "snaps")
    proc = run_in_process(*audit_argv(src, dst, root / "new"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (root / "new" / "summary.json").is_file()
    assert (root / LOCK_FILE).read_text().strip() == ""  # the run took the lock over, and released it


def test_a_run_waits_for_the_lock_up_to_lock_wait_seconds(tmp_path: Path) -> None:
    with lock_held_elsewhere(tmp_path, seconds=1.5):
        started = time.monotonic()
        with output_lock(tmp_path, wait_seconds=30, job="nightly"):
            waited = time.monotonic() - started
    assert 0.5 < waited < 20
    with lock_held_elsewhere(tmp_path) as holder:
        started = time.monotonic()
        pattern = rf"pid {holder.pid}.*\(waited 0\.5s, output\.lock_wait_seconds\)"
        with pytest.raises(OutputError, match=pattern), output_lock(tmp_path, wait_seconds=0.5):
            pass
        assert time.monotonic() - started >= 0.5


def test_lock_wait_seconds_is_read_from_the_configuration_and_checked(root: Path) -> None:
    assert parse_config("output:\n  lock_wait_seconds: 2.5\n").output.lock_wait_seconds == 2.5
    assert parse_config("").output.lock_wait_seconds == 0
    with pytest.raises(ConfigError, match=r"output\.lock_wait_seconds: must not be negative"):
        parse_config("output:\n  lock_wait_seconds: -1\n")
    # Through the CLI: an audit started while a nightly holds the root waits for it, then runs.
    cfg = root.parent / "wait.yaml"
    cfg.write_text("output:\n  lock_wait_seconds: 60\n")
    src, dst = snapshot_pair(root.parent / "snaps")
    with lock_held_elsewhere(root, seconds=1.5):
        proc = run_in_process(*audit_argv(src, dst, root / "new"), "--config", str(cfg))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (root / "new" / "summary.json").is_file()


def _argv(command: str, root: Path) -> list[str]:
    """Each other command that writes under an output root, aimed at ``root``. The lock comes
    before any cluster is asked or any table read: nightly's clusters never answer, and the
    failover runs' inputs are only complete enough for the checks made before it."""
    base = root.parent
    unreachable = "".join(
        f"{side}:\n  bootstrap_servers: 127.0.0.1:1\n" for side in ("source", "destination")
    )
    if command == "nightly":
        cfg = base / "nightly.yaml"
        cfg.write_text(f"{unreachable}output:\n  root: {root}\n")
        return ["nightly", "--config", str(cfg)]
    if command == "records scan":
        cfg = base / "records.yaml"
        cfg.write_text(unreachable)
        pair = root / "snapshots"  # its parent, the root, keeps record-verification.json
        write_pair(pair, [part("orders")], [part("orders")])
        return ["records", "scan", "--config", str(cfg), "--run", str(pair)]
    if command == "failover verify":
        before = base / "ready"
        write_pair(before, [part("orders")], [part("orders")])
        (before / "summary.json").write_text(json.dumps({"readiness": "GO", "expected_loss_records": 0}))
        _, after = write_pair(base / "after", [part("orders")], [part("orders")], dst_mirror=[mirror()])
        return [
            "failover",
            "verify",
            "--before",
            str(before),
            "--destination",
            str(after),
            "--out",
            str(root / "new"),
        ]
    if command == "failback readiness":
        s, d = write_pair(base / "stopped", [part("orders")], [part("orders")], dst_mirror=[mirror()])
        return ["failback", "readiness", "--source", str(s), "--destination", str(d), "--out", f"{root}/new"]
    raise AssertionError(command)


def test_while_a_nightly_holds_the_root_audit_exits_2_and_readiness_still_runs(
    root: Path, previous_run: Path
) -> None:
    """``mirror-audit audit`` through the CLI: exit 2 naming the holder, no new run
    directory, the previous run untouched. The pre-failover check runs meanwhile: it writes
    only its own run directory, never record-verification.json, and must never wait."""
    src, dst = snapshot_pair(root.parent / "snaps")
    before = files_state(root / previous_run.name)
    with lock_held_elsewhere(root) as holder:
        proc = run_in_process(*audit_argv(src, dst, root / "new"))
        ready = run_in_process(*audit_argv(src, dst, root / "ready", command="readiness"))
        assert holder.poll() is None  # held throughout
    line = error_line(proc.stderr)
    assert proc.returncode == 2, proc.stderr[-3000:]
    expected = (
        rf"mirror-audit: error: another mirror-audit run \(nightly, pid {holder.pid}, started "
        rf"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ\) holds the output root {re.escape(str(root))}: wait for "
        r"it, or use another output root \(output\.root, or --out in another directory\)"
    )
    assert re.fullmatch(expected, line), line
    assert not (root / "new").exists()
    assert files_state(root / previous_run.name) == before
    assert ready.returncode == 0, ready.stderr[-3000:]
    assert json.loads((root / "ready" / "summary.json").read_text())["readiness"] == "GO"


@pytest.mark.parametrize("command", ["nightly", "records scan", "failover verify", "failback readiness"])
def test_a_job_finding_the_output_root_locked_exits_2_naming_the_holder(
    command: str, root: Path, previous_run: Path
) -> None:
    argv = _argv(command, root)
    before = files_state(root / previous_run.name)
    with lock_held_elsewhere(root) as holder:
        entries = sorted(p.name for p in root.iterdir())
        proc = run_in_process(*argv)
    line = error_line(proc.stderr)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert f"pid {holder.pid}" in line and f"holds the output root {root}:" in line, line
    assert sorted(p.name for p in root.iterdir()) == entries  # no new run directory
    assert files_state(root / previous_run.name) == before  # the previous run untouched


def test_the_holder_process_helper_really_holds_an_flock(tmp_path: Path) -> None:
    """The check behind the tests above, from a third process with flock(1)-like Python."""
    probe = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept BlockingIOError:\n    sys.exit(3)\n"
    )
    with lock_held_elsewhere(tmp_path):
        held = subprocess.run([sys.executable, "-c", probe, str(tmp_path / LOCK_FILE)], check=False)
    free = subprocess.run([sys.executable, "-c", probe, str(tmp_path / LOCK_FILE)], check=False)
    assert (held.returncode, free.returncode) == (3, 0)


def test_a_symbolic_link_in_place_of_the_lock_file_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    """The reproduction: runs/.mirror-audit.lock -> victim.txt, and an audit emptied victim.txt."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    root = tmp_path / "runs"
    root.mkdir()
    (root / LOCK_FILE).symlink_to(victim)
    with pytest.raises(OutputError, match="is a symbolic link"), output_lock(root):
        pass
    src, dst = snapshot_pair(tmp_path / "snaps")
    proc = run_in_process(*audit_argv(src, dst, root / "r1"))
    assert proc.returncode == 2 and "symbolic link" in proc.stderr, proc.stderr[-2000:]
    assert victim.read_text() == "precious\n"


def test_a_hard_link_in_place_of_the_lock_file_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.txt"
    other.write_text("precious\n")
    root = tmp_path / "runs"
    root.mkdir()
    os.link(other, root / LOCK_FILE)
    with pytest.raises(OutputError, match="hard links"), output_lock(root):
        pass
    assert other.read_text() == "precious\n"
