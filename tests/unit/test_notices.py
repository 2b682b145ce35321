"""Notices (audit/report/notices.py) over sequences of real runs (offline audits on the
in-process engine) to a local HTTP server: when a notice goes, what it says, and that a
webhook that fails changes nothing but a count."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from audit import api
from audit.config import AuditConfig
from audit.config_file import parse_config
from audit.report.notices import Notice, decide
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


def _notices(run_dir: Path) -> dict[str, Any]:
    """What became of a run's notices: its notices.json."""
    data: dict[str, Any] = json.loads((run_dir / "notices.json").read_text())
    return data


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
        assert _notices(result.run_dir)["failed"] == 0
        assert "notices" not in result.summary  # summary.json says nothing of them
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
    # Slack's three markup characters as entities (Slack shows "->").
    assert lines[0] == "mirror-audit audit: WARN (cluster-source -&gt; cluster-destination)"
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
    notices = _notices(result.run_dir)
    assert {k: notices[k] for k in ("kind", "sent", "failed")} == {"kind": "alert", "sent": 0, "failed": 1}
    assert notices["webhooks"][0]["error"] == "HTTP 500" and notices["webhooks"][0]["attempts"] == 2
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


# -- webhooks that misbehave: the run's result, exit code and files as without notices ----


@dataclass
class RawServer:
    """A webhook at the socket level: ``answer`` writes what it likes (perhaps slowly) after
    reading a request (given its head), for what http.server would not send."""

    url: str
    requests: list[bytes] = field(default_factory=list)


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head


@contextlib.contextmanager
def raw_server(answer: Callable[[socket.socket, bytes], None]) -> Iterator[RawServer]:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    got = RawServer(f"http://127.0.0.1:{listener.getsockname()[1]}/hooks/T0/B0/s3cretpath?token=s3cretquery")
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            head = _read_request(conn)
            got.requests.append(head)
            answer(conn, head)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        stop.set()
        thread.join()
        listener.close()


def _garbage(conn: socket.socket, _head: bytes) -> None:
    conn.sendall(b"garbage, not HTTP\r\n\r\n")


def _closes_mid_body(conn: socket.socket, _head: bytes) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nonly this")


def _over_long_status_line(conn: socket.socket, _head: bytes) -> None:
    conn.sendall(b"HTTP/1.1 200 " + b"x" * 70_000 + b"\r\n\r\n")


def _redirect(conn: socket.socket, head: bytes) -> None:
    """A 302 to a page that answers 200: a client following it would call that sent."""
    if head.startswith(b"POST /hooks/"):
        conn.sendall(b"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n")
    else:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")


def _drips(conn: socket.socket, _head: bytes) -> None:
    """Headers, then one byte a second: no read ever waits longer than a second. Ends
    after 12 s, so that code without a deadline fails this test instead of hanging it."""
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    for _ in range(12):
        time.sleep(1)
        conn.sendall(b"X")


def _stable(summary: dict[str, Any]) -> dict[str, Any]:
    """summary.json without what two runs of the same pair never share: their times."""
    run = dict(summary["run"])
    for key in ("stage_seconds", "duration_seconds"):
        run.pop(key)
    text = json.dumps({**summary, "run": run}, sort_keys=True)
    stable: dict[str, Any] = json.loads(re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", text))
    return stable


@pytest.fixture(scope="module")
def without_notices(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """The faulty pair, and its run's summary.json without notices configured."""
    root = tmp_path_factory.mktemp("without-notices")
    src, dst = faulty_pair(root / "pair")
    result = api.audit(src, dst, parse_config("", env={}), out=root / "runs" / "run", engine="local")
    assert (result.verdict, result.exit_code) == ("FAIL", 1)
    return src, dst, json.loads((result.run_dir / "summary.json").read_text())


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (_garbage, "not an HTTP answer"),
        (_over_long_status_line, "LineTooLong"),
        (_redirect, "HTTP 302: a redirect, not followed"),
    ],
    ids=["garbage", "over-long-status-line", "redirect"],
)
def test_a_webhook_answering_garbage_or_a_redirect_fails_the_notice_and_changes_nothing_else(
    answer: Callable[[socket.socket, bytes], None],
    error: str,
    without_notices: tuple[Path, Path, dict[str, Any]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before: an http.client error escaped (an internal error, exit 2, no summary.json and
    no metrics), and a redirect was followed, the POST a GET elsewhere, counted sent."""
    src, dst, expected = without_notices
    with raw_server(answer) as server, caplog.at_level(logging.WARNING, logger="audit.report.notices"):
        result = api.audit(src, dst, _cfg(server.url), out=tmp_path / "root" / "run", engine="local")
    assert (result.verdict, result.exit_code) == ("FAIL", 1)
    assert _stable(json.loads((result.run_dir / "summary.json").read_text())) == _stable(expected)
    notices = _notices(result.run_dir)
    assert (notices["kind"], notices["sent"], notices["failed"]) == ("alert", 0, 1)
    assert error in notices["webhooks"][0]["error"]
    # A redirect is the same answer again: not retried, and never followed.
    assert len(server.requests) == (1 if answer is _redirect else 2)
    assert all(r.startswith(b"POST /hooks/") for r in server.requests)
    metrics = (result.run_dir / "metrics.prom").read_text()
    assert "} 1.0" in metrics.split("mirror_audit_notices_failed{")[1].splitlines()[0]
    assert "notice to http://127.0.0.1:" in caplog.text
    written = "".join(p.read_text(errors="replace") for p in result.run_dir.rglob("*") if p.is_file())
    for secret in ("s3cretpath", "s3cretquery"):
        assert secret not in caplog.text and secret not in written


def test_a_webhook_that_closes_mid_body_after_a_200_took_the_notice(tmp_path: Path) -> None:
    """The status decides: the answer's body is never waited for. Before: IncompleteRead
    escaped, an internal error."""
    src, dst = faulty_pair(tmp_path / "faulty")
    with raw_server(_closes_mid_body) as server:
        result = api.audit(src, dst, _cfg(server.url), out=tmp_path / "root" / "run", engine="local")
    assert (result.verdict, result.exit_code) == ("FAIL", 1)
    assert (result.run_dir / "summary.json").is_file()
    assert (_notices(result.run_dir)["sent"], len(server.requests)) == (1, 1)


def test_a_webhook_dripping_its_answer_holds_the_run_no_longer_than_the_timeout(tmp_path: Path) -> None:
    """One deadline for every attempt together (timeout 2 s, retries 2): a read never
    waits a second, so only a wall clock stops it. Before: the run waited as long as the
    server dripped, holding the output root's lock, without a summary.json meanwhile."""
    src, dst = faulty_pair(tmp_path / "faulty")
    hooks = "notify:\n  webhooks:\n    - url: {}\n  timeout_seconds: 2\n  retries: 2\n"
    with raw_server(_drips) as server:
        cfg = parse_config(hooks.format(server.url), env={})
        started = time.monotonic()
        result = api.audit(src, dst, cfg, out=tmp_path / "root" / "run", engine="local")
        elapsed = time.monotonic() - started
    assert (result.verdict, result.exit_code) == ("FAIL", 1)
    assert (result.run_dir / "summary.json").is_file()
    # The run's own time is measured before the notices: what is left is theirs.
    assert elapsed - result.summary["run"]["duration_seconds"] < 2 + 1.5
    notices = _notices(result.run_dir)
    assert (notices["sent"], notices["failed"]) == (0, 1)
    assert "no answer within 2s" in notices["webhooks"][0]["error"]


# -- what a notice says, where its state goes, what the configuration refuses -------------


def test_slack_text_escapes_markup_in_names_from_the_clusters() -> None:
    """Before: ``<!channel>`` in a cluster id paged the channel, and a link in an error was
    a link. The JSON format carries the names as they are."""
    notice = Notice(
        "alert",
        "audit",
        "FAIL",
        None,
        "<!channel>",
        "a&b",
        failing=(
            {"invariant": "<https://evil.example|click>", "status": "fail", "violations": 1, "evaluated": 2},
        ),
        error="topic <!here> missing",
    )
    text = notice.body("slack")["text"]
    assert "<" not in text and ">" not in text
    assert "&lt;!channel&gt;" in text and "a&amp;b" in text and "&lt;!here&gt;" in text
    assert "&lt;https://evil.example|click&gt; fail" in text
    assert notice.body("json")["source_cluster"] == "<!channel>"


def test_an_unfinished_runs_notice_state_stays_out_of_a_directory_others_may_write(
    receiver: Receiver, tmp_path: Path
) -> None:
    """A run that ends in an error keeps its outcome in the output root it would have had,
    by the rule the lock and the history follow: not in a directory like /tmp. Before:
    notices-readiness.json was written into ``--out``'s parent whatever it was."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    cfg = _cfg(receiver.url)
    with pytest.raises(api.InputError):
        api.readiness(
            cfg, source=tmp_path / "absent-src", destination=tmp_path / "absent-dst", out=shared / "r0"
        )
    assert [b["outcome"] for b in receiver.bodies] == ["ERROR"]  # the notice still goes
    assert list(shared.iterdir()) == []


def test_a_webhook_urls_userinfo_path_query_and_fragment_never_show() -> None:
    """Before: a URL without a path showed its query (``https://host?token=...``) and
    fragment in the report's configuration view."""
    shown = {
        "https://hooks.example.com?token=abcdefgh": "https://hooks.example.com/***",
        "https://hooks.example.com#s3cretfragment": "https://hooks.example.com/***",
        "https://user:pa55word@hooks.example.com:8443/x?token=abcdefgh": "https://hooks.example.com:8443/***",
    }
    for url, expected in shown.items():
        cfg = _cfg(url)
        assert cfg.redacted()["notify"]["webhooks"] == [{"url": expected, "format": "json"}]
        secrets = cfg.secret_values()
        assert url in secrets
    assert "token=abcdefgh" in _cfg("https://h.example.com/?token=abcdefgh").secret_values()


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
    with pytest.raises(api.ConfigError, match=r"notify\.timeout_seconds: expected a finite number"):
        parse_config(text, env={})
