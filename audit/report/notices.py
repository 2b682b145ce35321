"""Notices: tell a person when a run needs one (``notify`` in the configuration).

Metrics and Alertmanager reach a team that has wired them; a webhook reaches a channel
directly. The rule is the one on-call people expect of an alerting system: one notice for
every run that ends FAIL, NO-GO, not drained or in an error; one on recovery (the first
PASS or GO after a run that was not); none for a PASS after a PASS; a WARN when it is new
(``notify.on_warn``: change, always or never). What the run before ended with is kept per
job in the output root (``notices-<job>.json``, beside the runs), only where notices are
configured and only in a root of the user's own (``paths.private_root``: the lock's and the
history's rule), never in a directory other users may write.

A notice never changes the verdict, the exit code or what the run writes. It goes last,
after summary.json and the metrics are written (``pipeline._finish``), so a webhook that
hangs or answers garbage cannot cost the run its result; each webhook gets one wall-clock
deadline (``notify.timeout_seconds``) for all its attempts together, a redirect is a
failure (never followed: the POST would become a GET elsewhere), and any failure, of any
kind, is logged with the URL redacted (it is the webhook's credential) and counted in the
run directory's ``notices.json`` and, rewritten atomically, in its metrics.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import logging
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from audit.config import AuditConfig, NotifyConfig, WebhookConfig
from audit.display import visible
from audit.fsutil import atomic_write_json, json_loads
from audit.paths import others_may_write
from audit.redaction import REDACTED, split_url_credentials, webhook_secrets, webhook_shown

log = logging.getLogger(__name__)

BAD = frozenset({"FAIL", "NO-GO", "ERROR", "not drained"})
GOOD = frozenset({"PASS", "GO"})
Kind = Literal["alert", "recovery"]
# At most this many failing invariants and coverage gaps in one notice.
_LISTED = 10
# What became of a finished run's notices, in its run directory.
NOTICES_FILE = "notices.json"
# An error's text as logged and kept: one line, this long at most.
_REASON_CHARS = 200


def decide(outcome: str, previous: str | None, on_warn: str) -> Kind | None:
    """Whether a run that ended ``outcome`` after one that ended ``previous`` (None: no run
    before) sends a notice, and which."""
    if outcome in BAD:
        return "alert"
    if outcome == "WARN":
        if on_warn == "always" or (on_warn == "change" and previous != "WARN"):
            return "alert"
        return None
    if outcome in GOOD and previous is not None and previous not in GOOD:
        # After a WARN nobody was told of, there is nothing to recover from.
        return None if previous == "WARN" and on_warn == "never" else "recovery"
    return None


def outcome_of(summary: Mapping[str, Any]) -> str:
    """A run's one word: its GO / NO-GO where the job answers one, else its verdict."""
    return str(summary.get("readiness") or summary["verdict"])


@dataclass(frozen=True)
class Notice:
    kind: Kind
    job: str
    outcome: str
    previous: str | None
    source_cluster: str | None
    destination_cluster: str | None
    failing: tuple[Mapping[str, Any], ...] = ()
    gaps: tuple[Mapping[str, Any], ...] = ()
    unchecked_rows: int = 0
    report: str | None = None
    run_dir: str | None = None
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "source": "kafka-mirror-audit",
            "kind": self.kind,
            "job": self.job,
            "outcome": self.outcome,
            "previous": self.previous,
            "source_cluster": self.source_cluster,
            "destination_cluster": self.destination_cluster,
            "failing": [dict(f) for f in self.failing],
            "coverage": {"unchecked_rows": self.unchecked_rows, "gaps": [dict(g) for g in self.gaps]},
            "report": self.report,
            "run_dir": self.run_dir,
            "error": self.error,
        }

    def text(self) -> str:
        """One message a person reads in a channel: what, where, why, where to look."""
        pair = f"{self.source_cluster or '?'} -> {self.destination_cluster or '?'}"
        head = (
            f"mirror-audit {self.job}: {self.outcome} ({pair})"
            if self.kind == "alert"
            else f"mirror-audit {self.job}: recovered, {self.outcome} after {self.previous} ({pair})"
        )
        lines = [head]
        if self.error:
            lines.append(f"error: {self.error}")
        for f in self.failing:
            lines.append(f"{f['invariant']} {f['status']}: {f['violations']} of {f['evaluated']} rows")
        if self.unchecked_rows:
            lines.append(f"not checked: {self.unchecked_rows} rows (never counted as passed)")
        if self.report:
            lines.append(f"report: {self.report}")
        # Names from a cluster may carry control characters: escaped, inert in any channel.
        return "\n".join(visible(line) for line in lines)

    def body(self, fmt: str) -> dict[str, Any]:
        return {"text": slack_escaped(self.text())} if fmt == "slack" else self.as_json()


def slack_escaped(text: str) -> str:
    """``text`` as literal Slack text: ``&``, ``<`` and ``>`` as entities, Slack's rule for
    the three characters it reads as markup. A group or topic name is data: ``<!channel>``
    in one must not page a channel, ``<https://x|click>`` must not become a link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def notice_of_run(
    kind: Kind,
    summary: Mapping[str, Any],
    previous: str | None,
    report: Path,
    cfg: NotifyConfig,
    root: Path | None,
) -> Notice:
    run = summary.get("run") or {}
    failing = tuple(
        {"invariant": k, "status": v["status"], "violations": v["violations"], "evaluated": v["evaluated"]}
        for k, v in (summary.get("invariants") or {}).items()
        if v.get("status") in ("fail", "warn")
    )
    coverage = summary.get("coverage") or {}
    gaps = tuple(
        {"invariant": g["invariant"], "missing": g["missing"], "rows": g["rows"]}
        for g in coverage.get("gaps") or ()
    )
    return Notice(
        kind,
        str(run.get("job") or ""),
        outcome_of(summary),
        previous,
        run.get("source_cluster_id"),
        run.get("destination_cluster_id"),
        failing[:_LISTED],
        gaps[:_LISTED],
        int(coverage.get("unchecked_rows") or 0),
        _report_link(report, root, cfg),
        str(report.parent.parent),
    )


def _report_link(report: Path, root: Path | None, cfg: NotifyConfig) -> str:
    if cfg.report_base_url and root is not None:
        try:
            return cfg.report_base_url.rstrip("/") + "/" + report.relative_to(root).as_posix()
        except ValueError:
            pass
    return str(report)


# -- what the run before ended with -------------------------------------------------------


def state_file(root: Path, job: str) -> Path:
    """One file per job, so two jobs finishing at once (a readiness check beside a nightly
    run, which holds the lock) never write over each other's outcome."""
    return root / f"notices-{job.replace(' ', '-')}.json"


def state_root(root: Path | None) -> Path | None:
    """``root`` as the place for a job's notice state, or None where other users may write
    there (``--out /tmp/x`` makes /tmp the root): the rule the lock and the history follow
    (``paths.private_root``), for a run that never got as far as either."""
    return None if root is None or others_may_write(root) else root


def previous_outcome(root: Path | None, job: str) -> str | None:
    root = state_root(root)
    if root is None:
        return None
    try:
        data = json_loads(state_file(root, job).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    outcome = data.get("outcome") if isinstance(data, dict) else None
    return outcome if isinstance(outcome, str) else None


def record_outcome(root: Path | None, job: str, outcome: str) -> None:
    """Keep this run's outcome for the next one. Best effort: an output root that cannot
    take it costs the next run its recovery notice, never this run's result."""
    root = state_root(root)
    if root is None or not root.is_dir():
        return
    at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    try:
        atomic_write_json(state_file(root, job), {"job": job, "outcome": outcome, "at": at})
    except OSError as exc:
        log.warning("notices: could not keep this run's outcome in %s: %s", state_file(root, job), exc)


# -- sending ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Delivery:
    """What became of a notice at one webhook: its URL as it may be shown, sent or not,
    after how many attempts and seconds, and why not (one line, the URL masked)."""

    webhook: str
    sent: bool
    attempts: int
    seconds: float
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "webhook": self.webhook,
            "sent": self.sent,
            "attempts": self.attempts,
            "seconds": self.seconds,
            "error": self.error,
        }


@dataclass(frozen=True)
class Notified:
    """A run's notices: which one the rule sent (None: none was due) and what became of it
    at each webhook."""

    kind: Kind | None
    deliveries: tuple[Delivery, ...] = ()

    @property
    def sent(self) -> int:
        return sum(d.sent for d in self.deliveries)

    @property
    def failed(self) -> int:
        return sum(not d.sent for d in self.deliveries)

    def as_json(self) -> dict[str, Any]:
        """``notices.json``; the metrics read ``failed`` from it."""
        return {
            "kind": self.kind,
            "sent": self.sent,
            "failed": self.failed,
            "webhooks": [d.as_json() for d in self.deliveries],
        }


def send(notice: Notice, cfg: NotifyConfig) -> tuple[Delivery, ...]:
    """POST the notice to every webhook, one after the other, each within its own deadline
    (``timeout_seconds`` for all its attempts): a notice to N webhooks takes at most N times
    that. Never raises: whatever goes wrong at a webhook is its delivery's error."""
    deliveries = []
    for hook in cfg.webhooks:
        shown = webhook_shown(hook.url)
        started = time.monotonic()
        try:
            delivery = _post(hook, notice.body(hook.format), cfg)
        except Exception as exc:  # a bug here must not cost the run its result either
            log.debug("notice to %s: unexpected error", shown, exc_info=True)
            delivery = Delivery(shown, False, 0, round(time.monotonic() - started, 3), _reason(exc, hook.url))
        if not delivery.sent:
            log.warning("notice to %s failed: %s (the run's result stands)", shown, delivery.error)
        deliveries.append(delivery)
    return tuple(deliveries)


def _post(hook: WebhookConfig, body: dict[str, Any], cfg: NotifyConfig) -> Delivery:
    """Attempts until one is answered 2xx, one is refused for good (a 3xx, a 4xx but 408
    and 429), the retries are spent or the deadline passes. The deadline is wall-clock
    time for every attempt and pause together: a server that answers one byte a second
    would keep a socket timeout from ever firing."""
    shown = webhook_shown(hook.url)
    started = time.monotonic()
    deadline = started + cfg.timeout_seconds
    target = _Target.of(hook.url)
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    error = "not tried"
    attempts = 0
    for attempt in range(cfg.retries + 1):
        if attempt:
            time.sleep(max(0.0, min(0.5 * 2 ** (attempt - 1), 5.0, deadline - time.monotonic())))
        budget = deadline - time.monotonic()
        if budget <= 0:
            break
        attempts += 1
        status, error = _Exchange(target, data, budget).run(cfg.timeout_seconds)
        if status is not None and 200 <= status < 300:
            return Delivery(shown, True, attempts, round(time.monotonic() - started, 3))
        if status is not None and not _worth_retrying(status):
            break
    return Delivery(shown, False, attempts, round(time.monotonic() - started, 3), _masked(error, hook.url))


def _worth_retrying(status: int) -> bool:
    """A 5xx, 408 or 429 may pass; a redirect or another 4xx is the same answer again."""
    return status >= 500 or status in (408, 429) or status < 200


@dataclass(frozen=True)
class _Target:
    """Where a webhook's POST goes: the URL taken apart once (its userinfo sent as basic
    auth, never on the request line; its fragment never sent)."""

    https: bool
    host: str
    port: int
    path: str
    authorization: str | None

    @classmethod
    def of(cls, url: str) -> _Target:
        public, user, password = split_url_credentials(url)
        parts = urlsplit(public)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("not an http:// or https:// URL with a host")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        auth = None
        if user is not None:
            token = base64.b64encode(f"{user}:{password or ''}".encode()).decode("ascii")
            auth = f"Basic {token}"
        # The port always given: http.client would read an IPv6 address's last group as one.
        port = parts.port or (443 if scheme == "https" else 80)
        return cls(scheme == "https", parts.hostname, port, path, auth)

    def connection(self, timeout: float) -> http.client.HTTPConnection:
        if self.https:
            return http.client.HTTPSConnection(
                self.host, self.port, timeout=timeout, context=ssl.create_default_context()
            )
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def headers(self, length: int) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Content-Length": str(length),
            "Connection": "close",
            "User-Agent": "kafka-mirror-audit",
        }
        if self.authorization:
            headers["Authorization"] = self.authorization
        return headers


class _Exchange:
    """One POST on a daemon thread of its own, so that the caller's wall clock bounds all
    of it: the name lookup, the connect, the TLS handshake, the request and the answer's
    status line and headers (a socket timeout bounds each read, never their sum). At the
    deadline the caller shuts the socket down, which ends a blocked read at once; a name
    lookup that hangs is left to end on its own thread. Only the status is read: the body
    of a webhook's answer says nothing the status does not, and is never waited for."""

    def __init__(self, target: _Target, data: bytes, budget: float) -> None:
        self._target = target
        self._data = data
        self._budget = budget
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._aborted = False
        self._conn: http.client.HTTPConnection | None = None
        self._status: int | None = None
        self._error = "no answer"

    def run(self, timeout_seconds: float) -> tuple[int | None, str]:
        """(the HTTP status, or None, and the error of an attempt that got no 2xx)."""
        threading.Thread(target=self._exchange, name="notice", daemon=True).start()
        if not self._done.wait(self._budget):
            self._abort()
            return None, f"no answer within {timeout_seconds:g}s (notify.timeout_seconds, all attempts)"
        return self._status, self._error

    def _exchange(self) -> None:
        conn = None
        try:
            conn = self._target.connection(self._budget)
            conn.connect()
            with self._lock:
                if self._aborted:
                    return  # the caller gave up: nothing is sent after the deadline
                self._conn = conn
            conn.request("POST", self._target.path, self._data, self._target.headers(len(self._data)))
            status = conn.getresponse().status
            self._status = status
            if 300 <= status < 400:
                self._error = f"HTTP {status}: a redirect, not followed"
            elif not 200 <= status < 300:
                self._error = f"HTTP {status}"
        except Exception as exc:  # any failure is the webhook's, reported, never raised
            self._error = _reason(exc)
        finally:
            if conn is not None:
                conn.close()
            self._done.set()

    def _abort(self) -> None:
        with self._lock:
            self._aborted = True
            conn = self._conn
        sock = conn.sock if conn is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):  # closed meanwhile: the exchange ended by itself
                sock.shutdown(socket.SHUT_RDWR)


def _reason(exc: BaseException, url: str | None = None) -> str:
    """An error as one line: what kind and what it says, without the URL's secrets."""
    if isinstance(exc, TimeoutError):
        text = "timed out"
    elif isinstance(exc, http.client.BadStatusLine) and not isinstance(exc, http.client.RemoteDisconnected):
        text = f"not an HTTP answer: {str(exc)[:80]}"
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return _masked(text, url)


def _masked(text: str, url: str | None) -> str:
    if url is not None:
        for secret in sorted(webhook_secrets(url), key=len, reverse=True):
            text = text.replace(secret, REDACTED)
    return visible(" ".join(text.split()))[:_REASON_CHARS]


def notify_run(
    cfg: AuditConfig, summary: Mapping[str, Any], report: Path, root: Path | None, run_dir: Path
) -> Notified:
    """A finished run's notice, if the rule says one, sent once the run is on disk
    (summary.json and the metrics written); what became of it is kept in ``run_dir``'s
    ``notices.json``. Never raises: nothing a webhook (or a bug here) does reaches the
    verdict, the exit code or the run's files."""
    if not cfg.notify.webhooks:
        return Notified(None)  # and nothing kept: no notices wanted
    try:
        notified = _notify_run(cfg, summary, report, root)
    except Exception:
        log.exception("notices: not sent (a bug; the run's result stands)")
        return Notified(None)
    try:
        atomic_write_json(run_dir / NOTICES_FILE, notified.as_json())
    except OSError as exc:
        log.warning("notices: could not keep what became of them in %s: %s", run_dir / NOTICES_FILE, exc)
    return notified


def _notify_run(cfg: AuditConfig, summary: Mapping[str, Any], report: Path, root: Path | None) -> Notified:
    job = str((summary.get("run") or {}).get("job") or "")
    outcome = outcome_of(summary)
    previous = previous_outcome(root, job)
    kind = decide(outcome, previous, cfg.notify.on_warn)
    deliveries: tuple[Delivery, ...] = ()
    if kind is not None:
        deliveries = send(notice_of_run(kind, summary, previous, report, cfg.notify, root), cfg.notify)
    record_outcome(root, job, outcome)
    return Notified(kind, deliveries)


def notify_unfinished(
    cfg: AuditConfig, job: str, root: Path | None, outcome: str, error: str | None = None
) -> Notified:
    """A run that ended without a summary: in an error (``ERROR``), or not drained. There
    is no run directory to count a failure in: it is logged. Never raises: the caller's
    error (or answer) goes on as it was."""
    if not cfg.notify.webhooks:
        return Notified(None)
    try:
        previous = previous_outcome(root, job)
        kind = decide(outcome, previous, cfg.notify.on_warn)
        deliveries: tuple[Delivery, ...] = ()
        if kind is not None:
            deliveries = send(Notice(kind, job, outcome, previous, None, None, error=error), cfg.notify)
        record_outcome(root, job, outcome)
        return Notified(kind, deliveries)
    except Exception:
        log.exception("notices: not sent (a bug; the run's result stands)")
        return Notified(None)
