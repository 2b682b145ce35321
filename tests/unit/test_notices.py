"""Notices (audit/report/notices.py) over sequences of real runs (offline audits on the
in-process engine) to a local HTTP server: when a notice goes, what it says, and that a
webhook that fails changes nothing but a count."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from audit import api
from audit.config import AuditConfig
from audit.config_file import parse_config
from audit.report.notices import decide
from tests.snapshots import faulty_pair, part, write_pair


@dataclass
class Receiver:
    url: str
    bodies: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    got = Receiver("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(got.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    got.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/T0/B0/s3cretpath"
    try:
        yield got
    finally:
        server.shutdown()
        server.server_close()


def _cfg(url: str, extra: str = "", fmt: str = "json") -> AuditConfig:
    hooks = f"notify:\n  webhooks:\n    - url: {url}\n      format: {fmt}\n"
    return parse_config(f"{hooks}  timeout_seconds: 5\n  retries: 1\n{extra}", env={})


def _healthy(root: Path, dst_epoch: int = 8) -> tuple[Path, Path]:
    return write_pair(root, [part("orders")], [part("orders", leader_epoch=dst_epoch)])


@pytest.mark.parametrize(
    ("outcome", "previous", "on_warn", "kind"),
    [
        ("FAIL", None, "change", "alert"),
        ("FAIL", "FAIL", "change", "alert"),
        ("NO-GO", "GO", "change", "alert"),
        ("ERROR", "PASS", "never", "alert"),
        ("not drained", None, "change", "alert"),
        ("PASS", None, "change", None),
        ("PASS", "PASS", "change", None),
        ("PASS", "FAIL", "change", "recovery"),
        ("GO", "ERROR", "change", "recovery"),
        ("PASS", "WARN", "change", "recovery"),
        ("PASS", "WARN", "never", None),
        ("WARN", "PASS", "change", "alert"),
        ("WARN", "WARN", "change", None),
        ("WARN", "WARN", "always", "alert"),
        ("WARN", "PASS", "never", None),
    ],
)
def test_when_a_notice_goes(outcome: str, previous: str | None, on_warn: str, kind: str | None) -> None:
    assert decide(outcome, previous, on_warn) == kind


def test_fail_fail_pass_pass_sends_three_notices_the_last_a_recovery(
    receiver: Receiver, tmp_path: Path
) -> None:
    cfg = _cfg(receiver.url)
    faulty = faulty_pair(tmp_path / "faulty")
    healthy = _healthy(tmp_path / "healthy")
    root = tmp_path / "root"
    verdicts = []
    for i, (src, dst) in enumerate((faulty, faulty, healthy, healthy)):
        result = api.audit(src, dst, cfg, out=root / f"run{i}", engine="local")
        verdicts.append(result.verdict)
        assert result.summary["notices"]["failed"] == 0
    assert verdicts == ["FAIL", "FAIL", "PASS", "PASS"]
    assert [(b["kind"], b["outcome"], b["previous"]) for b in receiver.bodies] == [
        ("alert", "FAIL", None),
        ("alert", "FAIL", "FAIL"),
        ("recovery", "PASS", "FAIL"),
    ]
    first = receiver.bodies[0]
    assert first["job"] == "audit" and first["source_cluster"] == "cluster-source"
    assert {f["invariant"] for f in first["failing"]} >= {"CM-EPOCH-1", "CM-TOPIC-1", "CM-GROUP-1"}
    assert first["report"] == str(root / "run0" / "report" / "index.html")
    assert first["coverage"]["unchecked_rows"] >= 0


def test_slack_gets_one_readable_text_and_warn_goes_on_change_only(
    receiver: Receiver, tmp_path: Path
) -> None:
    """A destination epoch only one above the source's: CM-EPOCH-2 warns (headroom 3)."""
    cfg = _cfg(receiver.url, fmt="slack")
    src, dst = _healthy(tmp_path / "warn", dst_epoch=6)
    for i in range(2):
        assert api.audit(src, dst, cfg, out=tmp_path / "root" / f"run{i}", engine="local").verdict == "WARN"
    (body,) = receiver.bodies
    assert set(body) == {"text"}
    lines = body["text"].splitlines()
    assert lines[0] == "mirror-audit audit: WARN (cluster-source -> cluster-destination)"
    assert "CM-EPOCH-2 warn: 1 of 1 rows" in lines


def test_a_run_that_ends_in_an_error_is_a_notice_and_the_next_pass_a_recovery(
    receiver: Receiver, tmp_path: Path
) -> None:
    cfg = _cfg(receiver.url)
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(api.InputError):
        api.readiness(
            cfg, source=tmp_path / "absent-src", destination=tmp_path / "absent-dst", out=root / "r0"
        )
    src, dst = _healthy(tmp_path / "snaps")
    assert api.readiness(cfg, source=src, destination=dst, out=root / "r1").readiness == "GO"
    assert [(b["kind"], b["outcome"], b["job"]) for b in receiver.bodies] == [
        ("alert", "ERROR", "readiness"),
        ("recovery", "GO", "readiness"),
    ]
    assert "absent-src" in receiver.bodies[0]["error"]


def test_a_webhook_that_fails_is_logged_redacted_and_counted_and_the_verdict_stands(
    receiver: Receiver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    receiver.status = 500
    cfg = _cfg(receiver.url)
    src, dst = faulty_pair(tmp_path / "faulty")
    with caplog.at_level(logging.WARNING, logger="audit.report.notices"):
        result = api.audit(src, dst, cfg, out=tmp_path / "root" / "run", engine="local")
    assert (result.verdict, result.exit_code) == ("FAIL", 1)
    assert result.summary["notices"] == {"kind": "alert", "sent": 0, "failed": 1}
    assert len(receiver.bodies) == 2  # retries: 1
    assert "notice to http://127.0.0.1:" in caplog.text and "HTTP 500" in caplog.text
    assert "s3cretpath" not in caplog.text
    metrics = (result.run_dir / "metrics.prom").read_text()
    assert (
        "mirror_audit_notices_failed{" in metrics
        and "} 1.0" in metrics.split("mirror_audit_notices_failed{")[1]
    )
    # The URL is a secret everywhere the configuration is shown.
    written = "".join(p.read_text(errors="replace") for p in result.run_dir.rglob("*") if p.is_file())
    assert "s3cretpath" not in written


def test_webhook_urls_are_redacted_and_a_bad_one_is_a_config_error() -> None:
    cfg = _cfg("https://hooks.slack.com/services/T0/B0/abcdefgh")
    assert cfg.redacted()["notify"]["webhooks"] == [{"url": "https://hooks.slack.com/***", "format": "json"}]
    assert "https://hooks.slack.com/services/T0/B0/abcdefgh" in cfg.secret_values()
    with pytest.raises(api.ConfigError, match=r"notify\.webhooks\[0\]\.url: must be an http"):
        _cfg("ftp://x/y")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://hooks.example.com:99999/x/s3cret", "has a port that is not a number from 1 to 65535"),
        ("https://hooks.example.com:https/x/s3cret", "has a port that is not a number from 1 to 65535"),
        ("https://hooks.example.com:0/x/s3cret", "has a port that is not a number from 1 to 65535"),
        ("https:///x/s3cret", "has no host"),
        ('"https://hooks.example.com/x s3cret"', "must not contain spaces or control characters"),
    ],
)
def test_a_webhook_url_no_request_could_use_is_refused_when_the_config_loads(url: str, problem: str) -> None:
    """Before: accepted, then an internal error at the end of the run (http.client's
    InvalidURL). The message names the key and the problem, never the URL (a secret)."""
    with pytest.raises(api.ConfigError, match=rf"notify\.webhooks\[0\]\.url: {re.escape(problem)}") as err:
        _cfg(url)
    assert "s3cret" not in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("timeout", [".nan", ".inf"])
def test_a_notice_timeout_that_is_no_positive_number_is_refused_when_the_config_loads(timeout: str) -> None:
    """Before: accepted (NaN <= 0 is false), and the run failed at its end; infinity
    waited for ever. Zero and below were refused already."""
    text = f"notify:\n  webhooks:\n    - url: https://hooks.example.com/x\n  timeout_seconds: {timeout}\n"
    with pytest.raises(
        api.ConfigError, match=r"notify\.timeout_seconds: must be a positive number of seconds"
    ):
        parse_config(text, env={})
