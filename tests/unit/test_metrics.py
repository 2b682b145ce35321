"""Prometheus metrics of a run: every value read back from the written file (and from what
a Pushgateway received) with prometheus-client's own parser, so escaping is checked the way
a Prometheus server would read it."""

from __future__ import annotations

import base64
import errno
import logging
import os
import re
import socket
import threading
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from audit.config import OutputConfig
from audit.errors import OutputError
from audit.report import metrics
from audit.report.metrics import write_metrics

SRC, DST = "src-cluster-id", "dst-cluster-id"
PAIR = {"source_cluster": SRC, "destination_cluster": DST}
HOSTILE_TOPIC = 'or"ders\\eu\nline2'
FINISHED = "2026-11-25T12:00:00Z"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def unix(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def parse(text: str) -> Samples:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, job: str = "nightly", **labels: str) -> float:
    return samples[(name, frozenset({**PAIR, "job_kind": job, **labels}.items()))]


def names(samples: Samples) -> set[str]:
    return {name for name, _ in samples}


def run_info(**extra: Any) -> dict[str, Any]:
    return {
        "job": "nightly",
        "started_at": "2026-11-25T11:58:00Z",
        "finished_at": FINISHED,
        "duration_seconds": 120.5,
        "stage_seconds": {"snapshot": 30.25, "compare": 60.0, "validate": 25.0, "report": 5.25},
        "source_cluster_id": SRC,
        "destination_cluster_id": DST,
        "total_lag_records": 1500,
        "max_lag_seconds": 42.5,
        "expected_loss_records": None,
        "expected_reprocess_records": None,
        "min_epoch_headroom": 2,
        **extra,
    }


def failing_summary() -> dict[str, Any]:
    return {
        "verdict": "FAIL",
        "mode": "cluster-mirroring",
        "invariants": {
            "CM-OFFSET-1": {"status": "fail", "violations": 3, "evaluated": 200},
            "CM-GROUP-1": {"status": "fail", "violations": 7, "evaluated": 40},
            "CM-LAG-1": {"status": "warn", "violations": 1, "evaluated": 200},
            "CM-EPOCH-1": {"status": "pass", "violations": 0, "evaluated": 200},
            "CM-DATA-1": {"status": "skipped", "violations": 0, "evaluated": 0},
        },
        "run": run_info(),
        "lag_by_topic": [
            {"topic": "orders", "lag_records": 1000, "lag_seconds": 42.5},
            {"topic": HOSTILE_TOPIC, "lag_records": 500, "lag_seconds": None},
        ],
    }


def readiness_summary() -> dict[str, Any]:
    return {
        "verdict": "WARN",
        "mode": "cluster-mirroring",
        "readiness": "GO",
        "invariants": {"CM-LAG-1": {"status": "warn", "violations": 2, "evaluated": 10}},
        "run": run_info(
            job="readiness", expected_loss_records=10, expected_reprocess_records=25, min_epoch_headroom=0
        ),
    }


def earlier(
    verdict: str, finished_at: str | None, started_at: str = "2026-11-01T00:00:00Z"
) -> dict[str, Any]:
    run: dict[str, Any] = {"started_at": started_at, "source_cluster_id": SRC, "destination_cluster_id": DST}
    if finished_at is not None:
        run["finished_at"] = finished_at
    return {"verdict": verdict, "mode": "cluster-mirroring", "invariants": {}, "run": run, "dir": finished_at}


def written(tmp_path: Path, summary: dict[str, Any], history: list[dict[str, Any]] | None = None) -> Samples:
    path = write_metrics(tmp_path, summary, history or [], OutputConfig())
    assert path == tmp_path / "metrics.prom"
    return parse(path.read_text(encoding="utf-8"))


def test_a_failing_run_is_written_figure_for_figure(tmp_path: Path) -> None:
    summary = failing_summary()
    history = [earlier("PASS", "2026-11-23T12:00:00Z"), earlier("FAIL", "2026-11-24T12:00:00Z")]
    samples = written(tmp_path, summary, history)

    assert value(samples, "mirror_audit_verdict") == 2
    for inv_id, result in summary["invariants"].items():
        for status in ("pass", "warn", "fail", "skipped"):
            expected = 1 if status == result["status"] else 0
            assert (
                value(samples, "mirror_audit_invariant_status", invariant=inv_id, status=status) == expected
            )
        assert value(samples, "mirror_audit_invariant_violations", invariant=inv_id) == result["violations"]
        assert (
            value(samples, "mirror_audit_invariant_evaluated_rows", invariant=inv_id) == result["evaluated"]
        )
    failing = {
        dict(labels)["invariant"]
        for (name, labels), v in samples.items()
        if name == "mirror_audit_invariant_status" and dict(labels)["status"] == "fail" and v == 1
    }
    assert failing == {"CM-OFFSET-1", "CM-GROUP-1"}

    assert value(samples, "mirror_audit_lag_records") == 1500
    assert value(samples, "mirror_audit_max_lag_seconds") == 42.5
    assert value(samples, "mirror_audit_topic_lag_records", topic="orders") == 1000
    assert value(samples, "mirror_audit_topic_lag_records", topic=HOSTILE_TOPIC) == 500
    assert value(samples, "mirror_audit_topic_lag_seconds", topic="orders") == 42.5
    assert (
        "mirror_audit_topic_lag_seconds",
        frozenset({**PAIR, "job_kind": "nightly", "topic": HOSTILE_TOPIC}.items()),
    ) not in samples  # its lag in seconds is unknown: no series, not a 0

    assert value(samples, "mirror_audit_min_epoch_headroom") == 2
    assert value(samples, "mirror_audit_run_duration_seconds") == 120.5
    for stage, seconds in summary["run"]["stage_seconds"].items():
        assert value(samples, "mirror_audit_stage_duration_seconds", stage=stage) == seconds
    assert value(samples, "mirror_audit_last_run_timestamp_seconds") == unix(FINISHED)
    # This run and the newest earlier one failed: the last success is the PASS before them.
    assert value(samples, "mirror_audit_last_success_timestamp_seconds") == unix("2026-11-23T12:00:00Z")


def test_every_series_names_the_cluster_pair_and_the_job_and_no_partition_or_group(tmp_path: Path) -> None:
    """The job on every series (not only the verdict): a readiness check's invariant
    statuses and a nightly's are different series, never one replacing the other."""
    samples = written(tmp_path, failing_summary())
    for name, labels in samples:
        keys = dict(labels)
        assert name.startswith("mirror_audit_")
        assert keys["source_cluster"] == SRC and keys["destination_cluster"] == DST
        assert keys["job_kind"] == "nightly"
        assert not {"partition", "group", "job"} & keys.keys()


def test_a_hostile_topic_name_parses_back_to_itself(tmp_path: Path) -> None:
    samples = written(tmp_path, failing_summary())
    topics = {
        dict(labels).get("topic") for name, labels in samples if name == "mirror_audit_topic_lag_records"
    }
    assert topics == {"orders", HOSTILE_TOPIC}
    # One line per series: the newline inside the name is escaped, not written raw.
    lines = (tmp_path / "metrics.prom").read_text(encoding="utf-8").splitlines()
    assert [ln for ln in lines if ln.startswith("mirror_audit_topic_lag_records")][1].endswith(" 500.0")


def test_a_readiness_run_says_go_and_its_failover_figures(tmp_path: Path) -> None:
    samples = written(tmp_path, readiness_summary())
    assert value(samples, "mirror_audit_verdict", "readiness") == 1
    assert value(samples, "mirror_audit_readiness_go", "readiness") == 1
    assert value(samples, "mirror_audit_expected_loss_records", "readiness") == 10
    assert value(samples, "mirror_audit_expected_reprocess_records", "readiness") == 25
    assert value(samples, "mirror_audit_min_epoch_headroom", "readiness") == 0
    # No history, and this run did not fail: it is the last success.
    assert value(samples, "mirror_audit_last_success_timestamp_seconds", "readiness") == unix(FINISHED)


def test_no_go_is_0(tmp_path: Path) -> None:
    summary = {**readiness_summary(), "verdict": "FAIL", "readiness": "NO-GO"}
    samples = written(tmp_path, summary)
    assert value(samples, "mirror_audit_readiness_go", "readiness") == 0
    assert value(samples, "mirror_audit_verdict", "readiness") == 2


def test_the_last_success_is_0_when_no_run_ever_passed(tmp_path: Path) -> None:
    samples = written(tmp_path / "a", failing_summary(), [earlier("FAIL", "2026-11-24T12:00:00Z")])
    assert value(samples, "mirror_audit_last_success_timestamp_seconds") == 0
    samples = written(tmp_path / "b", failing_summary(), [])
    assert value(samples, "mirror_audit_last_success_timestamp_seconds") == 0


def test_the_last_success_falls_back_to_its_start_time(tmp_path: Path) -> None:
    history = [
        earlier("WARN", None, started_at="2026-11-20T06:30:00Z"),
        earlier("FAIL", "2026-11-24T12:00:00Z"),
    ]
    samples = written(tmp_path, failing_summary(), history)
    assert value(samples, "mirror_audit_last_success_timestamp_seconds") == unix("2026-11-20T06:30:00Z")


def test_a_missing_optional_figure_gives_no_series(tmp_path: Path) -> None:
    run = run_info(max_lag_seconds=None, min_epoch_headroom=None, source_cluster_id=None)
    del run["stage_seconds"], run["destination_cluster_id"], run["duration_seconds"]
    summary = {
        "verdict": "PASS",
        "mode": "mm2",
        "invariants": {"MM2-LAG-1": {"status": "pass"}},
        "run": run,
    }
    path = write_metrics(tmp_path, summary, [], OutputConfig())
    text = path.read_text(encoding="utf-8")
    samples = parse(text)
    absent = {
        "mirror_audit_readiness_go",
        "mirror_audit_max_lag_seconds",
        "mirror_audit_min_epoch_headroom",
        "mirror_audit_expected_loss_records",
        "mirror_audit_expected_reprocess_records",
        "mirror_audit_topic_lag_records",
        "mirror_audit_topic_lag_seconds",
        "mirror_audit_stage_duration_seconds",
        "mirror_audit_run_duration_seconds",
        "mirror_audit_invariant_violations",
        "mirror_audit_invariant_evaluated_rows",
        "mirror_audit_invariant_unchecked_rows",
    }
    assert not absent & names(samples)
    for name in absent:
        assert name not in text  # not even a HELP line
    unknown_pair = frozenset({"source_cluster": "", "destination_cluster": "", "job_kind": "nightly"}.items())
    assert samples[("mirror_audit_lag_records", unknown_pair)] == 1500
    assert samples[("mirror_audit_verdict", unknown_pair)] == 0


def test_each_job_writes_a_textfile_copy_of_its_own_identical_to_its_run(tmp_path: Path) -> None:
    textfile = tmp_path / "node_exporter" / "textfile" / "mirror_audit.prom"
    nightly = textfile.with_name("mirror_audit.nightly.prom")
    output = OutputConfig(metrics_textfile=str(textfile))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    path = write_metrics(run_dir, failing_summary(), [], output)
    assert nightly.read_bytes() == path.read_bytes()
    # Written by rename: no temporary file is left next to either.
    assert sorted(p.name for p in textfile.parent.iterdir()) == ["mirror_audit.nightly.prom"]
    assert sorted(p.name for p in run_dir.iterdir()) == ["metrics.prom"]
    # Another job's run leaves the nightly's file as it was; the nightly's next run replaces it whole.
    before = nightly.read_bytes()
    write_metrics(tmp_path / "ready", readiness_summary(), [], output)
    ready = parse(textfile.with_name("mirror_audit.readiness.prom").read_text(encoding="utf-8"))
    assert value(ready, "mirror_audit_readiness_go", "readiness") == 1
    assert nightly.read_bytes() == before
    again = {**failing_summary(), "verdict": "PASS"}
    write_metrics(tmp_path / "again", again, [], output)
    assert value(parse(nightly.read_text(encoding="utf-8")), "mirror_audit_verdict") == 0
    names = sorted(p.name for p in textfile.parent.iterdir())
    assert names == ["mirror_audit.nightly.prom", "mirror_audit.readiness.prom"]


def test_a_job_name_with_a_space_gives_a_file_name_without_one(tmp_path: Path) -> None:
    configured = tmp_path / "mirror_audit.prom"
    assert metrics.job_textfile(configured, "failover verify").name == "mirror_audit.failover-verify.prom"
    assert metrics.job_textfile(configured, "").name == "mirror_audit.unknown-job.prom"


def test_the_shared_textfile_of_an_earlier_version_is_removed_and_no_other_file(tmp_path: Path) -> None:
    """An earlier version wrote every job's series to the configured path: left there, they
    would go stale and duplicate a job's own (the node exporter fails on a duplicate)."""
    textfile = tmp_path / "mirror_audit.prom"
    textfile.write_text(
        '# HELP mirror_audit_verdict Verdict of the last run\nmirror_audit_verdict{job_kind="x"} 2.0\n'
    )
    write_metrics(tmp_path / "run", failing_summary(), [], OutputConfig(metrics_textfile=str(textfile)))
    assert not textfile.exists() and textfile.with_name("mirror_audit.nightly.prom").is_file()
    # A file that is not one this tool wrote is left alone.
    textfile.write_text("# HELP other_metric someone else's\n")
    write_metrics(tmp_path / "run2", failing_summary(), [], OutputConfig(metrics_textfile=str(textfile)))
    assert textfile.read_text() == "# HELP other_metric someone else's\n"


def test_a_textfile_directory_that_cannot_be_made_is_an_output_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    output = OutputConfig(metrics_textfile=str(blocker / "mirror_audit.prom"))
    with pytest.raises(
        OutputError,
        match=r"directory of the metrics textfile \(output.metrics_textfile\) .*not-a-dir is not a directory",
    ):
        write_metrics(tmp_path, failing_summary(), [], output)


@pytest.mark.parametrize("name", ["mirror_audit.prom", "mirror_audit.nightly.prom"])
def test_a_textfile_path_that_is_a_directory_is_an_output_error(tmp_path: Path, name: str) -> None:
    (tmp_path / name).mkdir()
    output = OutputConfig(metrics_textfile=str(tmp_path / "mirror_audit.prom"))
    with pytest.raises(OutputError, match=rf"{re.escape(name)} is a directory"):
        write_metrics(tmp_path / "run", failing_summary(), [], output)


def test_a_full_disk_under_the_textfile_is_an_output_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_space(path: str, registry: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    monkeypatch.setattr(metrics, "write_to_textfile", no_space)
    textfile = tmp_path / "textfile" / "mirror_audit.prom"
    with pytest.raises(
        OutputError, match=r"mirror_audit\.nightly\.prom cannot be written: No space left on device"
    ):
        write_metrics(tmp_path / "run", failing_summary(), [], OutputConfig(metrics_textfile=str(textfile)))


# --------------------------------------------------------------------------- Pushgateway


class _Gateway(BaseHTTPRequestHandler):
    received: list[dict[str, Any]]
    status: int

    def _record(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.received.append(
            {
                "method": self.command,
                "path": self.path,
                "body": body,
                "auth": self.headers.get("Authorization"),
            }
        )
        self.send_response(self.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_PUT = do_POST = do_DELETE = _record

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve(status: int) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []
    handler = type("Gateway", (_Gateway,), {"received": received, "status": status})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def gateway() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    yield from serve(200)


@pytest.fixture
def broken_gateway() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    yield from serve(503)


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def assert_no_credentials(caplog: pytest.LogCaptureFixture, *secrets: str) -> None:
    for record in caplog.records:
        shown = f"{record.getMessage()} {record.msg} {record.args}"
        for secret in secrets:
            assert secret not in shown, shown


def test_a_pushgateway_that_accepts_gets_the_same_metrics(
    tmp_path: Path, gateway: tuple[str, list[dict[str, Any]]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    address, received = gateway
    output = OutputConfig(pushgateway_url=f"http://auditor:pa%3Ass-w0rd@{address}")
    path = write_metrics(tmp_path, failing_summary(), [], output)

    assert len(received) == 2
    # The pair's group of an earlier version (every job's series in one) deleted, then the job's own.
    delete, push = received
    assert delete["method"] == "DELETE"
    assert delete["path"] == f"/metrics/job/mirror_audit/destination_cluster/{DST}/source_cluster/{SRC}"
    assert push["method"] == "PUT"
    assert push["path"] == (
        f"/metrics/job/mirror_audit/destination_cluster/{DST}/job_kind/nightly/source_cluster/{SRC}"
    )
    auth = "Basic " + base64.b64encode(b"auditor:pa:ss-w0rd").decode()
    assert push["auth"] == delete["auth"] == auth
    assert parse(push["body"].decode("utf-8")) == parse(path.read_text(encoding="utf-8"))
    assert any(f"http://{address}" in r.getMessage() for r in caplog.records)
    assert_no_credentials(caplog, "pa%3Ass-w0rd", "pa:ss-w0rd", "auditor:")


def test_a_pushgateway_that_refuses_is_a_warning_and_the_file_is_still_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    port = unused_port()
    output = OutputConfig(pushgateway_url=f"http://auditor:s3cr3t-pw@127.0.0.1:{port}/")
    path = write_metrics(tmp_path, failing_summary(), [], output)

    assert value(parse(path.read_text(encoding="utf-8")), "mirror_audit_verdict") == 2
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and f"http://127.0.0.1:{port}" in warnings[0].getMessage()
    assert_no_credentials(caplog, "s3cr3t-pw", "auditor:")


def test_a_pushgateway_answering_with_an_error_is_a_warning(
    tmp_path: Path, broken_gateway: tuple[str, list[dict[str, Any]]], caplog: pytest.LogCaptureFixture
) -> None:
    address, received = broken_gateway
    path = write_metrics(tmp_path, failing_summary(), [], OutputConfig(pushgateway_url=f"http://{address}"))
    assert path.is_file() and [r["method"] for r in received] == ["DELETE", "PUT"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and address in warnings[0] and "503" in warnings[0]


def test_a_textfile_that_can_never_be_written_stops_the_job_before_its_work(tmp_path: Path) -> None:
    """The check runs before the snapshot or the audit: an hour's nightly is not lost to it."""
    from audit.config import AuditConfig
    from audit.run_dirs import run_directory

    blocker = tmp_path / "file"
    blocker.write_text("")
    root = str(tmp_path / "runs")
    cfg = AuditConfig(output=OutputConfig(root=root, metrics_textfile=str(blocker / "m.prom")))
    with pytest.raises(OutputError, match=r"output\.metrics_textfile"), run_directory(cfg, None, "nightly"):
        pass
    assert not (tmp_path / "runs").exists()
    cfg = AuditConfig(output=OutputConfig(root=root, metrics_textfile=str(tmp_path)))
    with pytest.raises(OutputError, match="is a directory"), run_directory(cfg, None, "nightly"):
        pass


def test_topic_series_are_bounded_and_their_labels_escaped() -> None:
    from audit.report.metrics import OTHER_TOPICS, TOPIC_SERIES, topic_series

    rows = [{"topic": f"t{i:05d}", "lag_records": i, "lag_seconds": float(i)} for i in range(10_000)]
    rows.append({"topic": "evil\x1b[31m\rname", "lag_records": 10**9, "lag_seconds": 1.0})
    series = topic_series(rows)
    assert len(series) == TOPIC_SERIES + 1
    assert series[0][0] == "evil\\x1b[31m\\x0dname" and series[0][1] == 10**9  # most behind first, escaped
    assert all(not any(ord(c) < 32 for c in label) for label, _, _ in series)
    other = series[-1]
    kept = {int(label[1:]) for label, _, _ in series[1:-1]}
    assert other[0] == OTHER_TOPICS
    assert other[1] == sum(i for i in range(10_000) if i not in kept)
    assert other[2] == float(max(i for i in range(10_000) if i not in kept))
    assert topic_series(rows[:3]) == [("t00002", 2.0, 2.0), ("t00001", 1.0, 1.0), ("t00000", 0.0, 0.0)]


# --------------------------------------------------------------------------- jobs side by side


def _groups(received: list[dict[str, Any]]) -> dict[str, Samples]:
    """What a Pushgateway holds after ``received``: a PUT replaces its group, a DELETE
    removes it."""
    held: dict[str, Samples] = {}
    for request in received:
        if request["method"] == "DELETE":
            held.pop(request["path"], None)
        else:
            held[request["path"]] = parse(request["body"].decode("utf-8"))
    return held


def test_each_jobs_series_survive_the_other_jobs_runs(
    tmp_path: Path, gateway: tuple[str, list[dict[str, Any]]]
) -> None:
    """Issue 53, 4: an audit, a readiness check and a failover verify of one pair under one
    output root, one metrics textfile and one Pushgateway (in-process engine, snapshots).
    Afterwards the node exporter's directory and the Pushgateway hold every job's series as
    its own run wrote them, none twice: the readiness answer survives the verify, the
    audit's invariant statuses the readiness check."""
    from audit import api
    from audit.config import AuditConfig
    from tests.snapshots import after_stop_without_last_mirrored_offset, before_stop_pair

    address, received = gateway
    textfile = tmp_path / "textfile" / "mirror_audit.prom"
    root = tmp_path / "runs"
    cfg = AuditConfig(
        output=OutputConfig(
            root=str(root), metrics_textfile=str(textfile), pushgateway_url=f"http://{address}"
        )
    )
    src, dst = before_stop_pair(tmp_path / "before")
    audit = api.audit(src, dst, cfg, out=root / "audit", engine="local")
    readiness = api.readiness(cfg, source=src, destination=dst, out=root / "readiness")
    after = after_stop_without_last_mirrored_offset(tmp_path / "after")
    verify = api.failover_verify(cfg, readiness.run_dir, destination=after, out=root / "verify")
    runs = [audit, readiness, verify]
    assert [r.job for r in runs] == ["audit", "readiness", "failover verify"]
    each = {r.job: parse((r.run_dir / "metrics.prom").read_text(encoding="utf-8")) for r in runs}

    files = sorted(textfile.parent.glob("*.prom"))
    assert [f.name for f in files] == [
        "mirror_audit.audit.prom",
        "mirror_audit.failover-verify.prom",
        "mirror_audit.readiness.prom",
    ]
    in_files = [parse(f.read_text(encoding="utf-8")) for f in files]
    on_gateway = list(_groups(received).values())
    for where, held in (("textfiles", in_files), ("Pushgateway", on_gateway)):
        series = [key for samples in held for key in samples]
        assert len(series) == len(set(series)), f"{where}: a series twice"
        merged = {key: v for samples in held for key, v in samples.items()}
        for job, samples in each.items():
            missing = sorted(name for name, labels in samples if (name, labels) not in merged)
            assert not missing, (where, job, missing[:5])
            assert all(merged[key] == v for key, v in samples.items()), (where, job)
        verdicts = {dict(labels)["job_kind"] for name, labels in merged if name == "mirror_audit_verdict"}
        assert verdicts == {"audit", "readiness", "failover verify"}, where
        ready = {
            dict(labels)["job_kind"]: v
            for (name, labels), v in merged.items()
            if name == "mirror_audit_readiness_go"
        }
        assert ready == {"readiness": 1, "failover verify": 0}, where
        statuses = {
            dict(labels)["job_kind"] for name, labels in merged if name == "mirror_audit_invariant_status"
        }
        assert statuses == {"audit", "readiness", "failover verify"}, where


def test_the_shipped_rules_and_dashboard_select_labels_and_jobs_that_exist() -> None:
    """Every label the alert rules and the dashboard name is one a run writes (or the
    dashboard's own variable), and every job they select by ``job_kind`` is a job: a renamed
    job would leave ``job_kind="readiness"`` matching nothing, silently."""
    import json

    import yaml
    from prometheus_client import generate_latest

    from audit.jobs import JOBS

    deploy = Path(__file__).resolve().parents[2] / "deploy"
    rules = yaml.safe_load((deploy / "prometheus" / "mirror-audit-rules.yaml").read_text())
    dashboard = json.loads((deploy / "grafana" / "mirror-audit-dashboard.json").read_text())
    rule_list = [r for g in rules["spec"]["groups"] for r in g["rules"]]
    exprs = [r["expr"] for r in rule_list] + [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    shown = [a for r in rule_list for a in r["annotations"].values()]
    shown += [t["legendFormat"] for p in dashboard["panels"] for t in p["targets"]]

    text = generate_latest(metrics.build_registry(failing_summary())).decode("utf-8")
    written = {k for _, labels in parse(text) for k, _ in labels}
    named = {m for e in exprs for m in re.findall(r"([a-z_]+)\s*(?:=~|!=|=)\s*\"", e)}
    named |= {m for e in exprs for m in re.findall(r"without \(([a-z_]+)\)", e)}
    named |= {m for s in shown for m in re.findall(r"\{\{\s*(?:\$labels\.)?([a-z_]+)\s*\}\}", s)}
    assert "job_kind" in named and named <= written, sorted(named - written)

    jobs = {job.name for job in JOBS}
    selected = {
        name
        for e in exprs
        for op, value in re.findall(r"job_kind\s*(=~|=)\s*\"([^\"$]+)\"", e)
        for name in (value.split("|") if op == "=~" else [value])
    }
    assert selected and selected <= jobs, sorted(selected - jobs)
