"""Runs that share an output root: started together they get a run directory each, a
snapshot pair is used only whole, and a root other users may write keeps no lock or history."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from audit.errors import InputError
from audit.output_lock import LOCK_FILE
from tests.cli import run_in_process
from tests.output_roots import audit_argv, snapshot_pair


def _start(args: list[str], config: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "audit.cli", *args, "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_jobs_started_together_under_one_root_each_finish_in_a_run_directory_of_their_own(
    tmp_path: Path,
) -> None:
    """Two readiness checks (no --out: each names its run by the second it started in) and
    two audits (their --out in the same root) at once: four runs, none sharing a directory;
    the audits take the root's lock in turn."""
    src, dst = snapshot_pair(tmp_path / "snap")
    root = tmp_path / "reports"
    config = tmp_path / "audit.yaml"
    config.write_text(f"output:\n  root: {root}\n  lock_wait_seconds: 300\n")
    offline = ["--source", str(src), "--destination", str(dst), "--engine", "local"]
    commands = [
        ["readiness", *offline],
        ["audit", *offline, "--out", str(root / "audit-1")],
        ["readiness", *offline],
        ["audit", *offline, "--out", str(root / "audit-2")],
    ]
    procs = [_start(args, config) for args in commands]
    results = [(p.wait(timeout=600), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    for p in procs:
        for stream in (p.stdout, p.stderr):
            if stream is not None:
                stream.close()
    assert [code for code, _, _ in results] == [0, 0, 0, 0], [err[-1500:] for _, _, err in results]
    runs = sorted(d for d in root.iterdir() if d.is_dir())
    assert len(runs) == 4, runs
    jobs = sorted(json.loads((d / "summary.json").read_text())["run"]["job"] for d in runs)
    assert jobs == ["audit", "audit", "readiness", "readiness"]


def test_a_new_out_directory_is_reserved_by_one_run(tmp_path: Path) -> None:
    from audit.errors import OutputError
    from audit.run_dirs import claim_run_dir, reserve

    out = tmp_path / "run"
    claim = claim_run_dir(out)
    assert out.is_dir() and not claim.existed  # reserved at once
    with pytest.raises(OutputError, match="just made by another run"):
        reserve(out)


def test_halves_of_two_snapshot_runs_are_refused_as_a_pair(tmp_path: Path) -> None:
    """A crash between the two halves of ``snapshot --out DIR`` leaves a new destination
    beside the old source: their manifests name different pairs."""
    from audit.config import AuditConfig
    from audit.pipeline import audit_snapshots

    src, dst = snapshot_pair(tmp_path / "snap")
    for side, pair in ((src, "a" * 32), (dst, "b" * 32)):
        manifest = json.loads((side / "manifest.json").read_text())
        (side / "manifest.json").write_text(json.dumps({**manifest, "pair": pair}))
    with pytest.raises(InputError, match="not one snapshot pair"):
        audit_snapshots(src, dst, tmp_path / "run", AuditConfig(), engine="local")
    # The same pair id: one snapshot, audited.
    manifest = json.loads((dst / "manifest.json").read_text())
    (dst / "manifest.json").write_text(json.dumps({**manifest, "pair": "a" * 32}))
    assert audit_snapshots(src, dst, tmp_path / "run2", AuditConfig(), engine="local").exit_code == 0


def test_a_root_other_users_may_write_keeps_no_lock_and_no_history(tmp_path: Path) -> None:
    """``--out /tmp/x`` made /tmp the output root: the lock file and the history scan landed
    where any user can plant a file. There, the run takes no lock and reads no history."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    assert shared.stat().st_mode & stat.S_IWOTH
    planted = shared / "planted"
    planted.mkdir()
    (planted / "summary.json").write_text(json.dumps({"run": "x", "verdict": "FAIL"}))
    src, dst = snapshot_pair(tmp_path / "snap")
    proc = run_in_process(*audit_argv(src, dst, shared / "r1"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "writable by other users" in proc.stderr
    assert not (shared / LOCK_FILE).exists()
    summary = json.loads((shared / "r1" / "summary.json").read_text())
    assert summary["changes"].get("previous_run") is None  # no history read from the shared root


def test_files_the_run_writes_follow_the_umask(tmp_path: Path) -> None:
    """summary.json and the report were 0600 (mkstemp) beside Parquet files at 0644."""
    src, dst = snapshot_pair(tmp_path / "snap")
    old = os.umask(0o022)
    try:
        proc = run_in_process(*audit_argv(src, dst, tmp_path / "run"))
    finally:
        os.umask(old)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = tmp_path / "run"
    for f in (run / "summary.json", run / "report" / "index.html", run / "metrics.prom"):
        assert stat.S_IMODE(f.stat().st_mode) == 0o644, f


def test_a_snapshot_stopped_between_its_halves_is_never_audited_as_a_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``snapshot --out DIR`` over an earlier snapshot, the process dying after the new
    destination is in place and before the source: the old source and the new destination
    are refused together."""
    from audit.collect.metadata import snapshot as collect
    from audit.config_file import parse_config
    from audit.pipeline import audit_snapshots
    from audit.profiles import profile
    from audit.snapshot import Snapshot, make_manifest
    from tests.snapshots import part

    cfg = parse_config("source:\n  bootstrap_servers: a:1\ndestination:\n  bootstrap_servers: b:1\n", env={})

    def fake_collect(_cfg: object, role: Any, _plan: object) -> Snapshot:
        epoch = 5 if role == "source" else 8
        manifest = make_manifest(role, f"{role}-id", "2026-11-26T00:00:00Z", "2026-11-26T00:00:01Z", {}, {})
        return Snapshot(manifest, (part("orders", leader_epoch=epoch),))

    monkeypatch.setattr(collect, "collect_snapshot", fake_collect)
    out = tmp_path / "snap"
    src, dst = collect.take_snapshots(cfg, out, profile("cluster-mirroring").snapshot)
    assert audit_snapshots(src, dst, tmp_path / "run1", cfg, engine="local").exit_code == 0
    real_write = collect.write_snapshot  # type: ignore[attr-defined]

    def dies_before_the_source(directory: Path, snap: Snapshot) -> Path:
        if Path(directory).name == "source":
            raise KeyboardInterrupt  # the process killed between the two halves
        return real_write(directory, snap)

    monkeypatch.setattr(collect, "write_snapshot", dies_before_the_source)
    with pytest.raises(KeyboardInterrupt):
        collect.take_snapshots(cfg, out, profile("cluster-mirroring").snapshot)
    with pytest.raises(InputError, match="not one snapshot pair"):
        audit_snapshots(src, dst, tmp_path / "run2", cfg, engine="local")


def test_a_python_caller_gets_the_configuration_s_secrets_masked_in_its_own_log_handler(
    tmp_path: Path,
) -> None:
    """Masking was registered by the CLI only: a caller of the library with its own logging
    got the secret in clear. Every job now registers its configuration's secrets."""
    import io
    import logging

    from audit.config_file import parse_config
    from audit.pipeline import audit_snapshots

    marker = "MARKER-py-caller-7f3a"
    cfg = parse_config(f"spark:\n  conf:\n    spark.hadoop.fs.s3a.secret.key: {marker}\n", env={})
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("a.callers.own.logger")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        src, dst = snapshot_pair(tmp_path / "snap")
        audit_snapshots(src, dst, tmp_path / "run", cfg, engine="local")
        logger.info("the caller's own line quoting %s", marker)
        try:
            raise RuntimeError(f"an error naming {marker}")
        except RuntimeError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "the caller's own line quoting ***" in text and "an error naming ***" in text
    assert marker not in text
