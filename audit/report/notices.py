"""Notices: tell a person when a run needs one (``notify`` in the configuration).

Metrics and Alertmanager reach a team that has wired them; a webhook reaches a channel
directly. The rule is the one on-call people expect of an alerting system: one notice for
every run that ends FAIL, NO-GO, not drained or in an error; one on recovery (the first
PASS or GO after a run that was not); none for a PASS after a PASS; a WARN when it is new
(``notify.on_warn``: change, always or never). What the run before ended with is kept per
job in the output root (``notices-<job>.json``, beside the runs), only where notices are
configured.

A notice is best effort: bounded timeouts and retries, a failure logged (the URL redacted:
it is the webhook's credential) and counted in summary.json and the metrics, never a
change to the verdict or the exit code.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from audit.config import AuditConfig, NotifyConfig, WebhookConfig
from audit.display import visible
from audit.fsutil import atomic_write_json, json_loads
from audit.redaction import webhook_shown

log = logging.getLogger(__name__)

BAD = frozenset({"FAIL", "NO-GO", "ERROR", "not drained"})
GOOD = frozenset({"PASS", "GO"})
Kind = Literal["alert", "recovery"]
# At most this many failing invariants and coverage gaps in one notice.
_LISTED = 10


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
        return {"text": self.text()} if fmt == "slack" else self.as_json()


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


def previous_outcome(root: Path | None, job: str) -> str | None:
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
    if root is None or not root.is_dir():
        return
    at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    try:
        atomic_write_json(state_file(root, job), {"job": job, "outcome": outcome, "at": at})
    except OSError as exc:
        log.warning("notices: could not keep this run's outcome in %s: %s", state_file(root, job), exc)


# -- sending ------------------------------------------------------------------------------


def send(notice: Notice, cfg: NotifyConfig) -> tuple[int, int]:
    """POST the notice to every webhook; (sent, failed)."""
    sent = failed = 0
    for hook in cfg.webhooks:
        error = _post(hook, notice.body(hook.format), cfg)
        if error is None:
            sent += 1
        else:
            failed += 1
            log.warning("notice to %s failed: %s (the run's result stands)", webhook_shown(hook.url), error)
    return sent, failed


def _post(hook: WebhookConfig, body: dict[str, Any], cfg: NotifyConfig) -> str | None:
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    error = "not tried"
    for attempt in range(cfg.retries + 1):
        if attempt:
            time.sleep(min(0.5 * 2 ** (attempt - 1), 5.0))
        request = urllib.request.Request(
            hook.url, data=data, headers={"Content-Type": "application/json"}, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=cfg.timeout_seconds) as response:
                response.read()
            return None
        except urllib.error.HTTPError as exc:
            error = f"HTTP {exc.code}"
            if 400 <= exc.code < 500 and exc.code != 429:
                return error  # the request itself is refused: a retry gets the same answer
        except (urllib.error.URLError, OSError) as exc:
            error = str(getattr(exc, "reason", exc))
    return error


def notify_run(
    cfg: AuditConfig, summary: Mapping[str, Any], report: Path, root: Path | None
) -> dict[str, Any]:
    """A finished run's notice, if the rule says one; returns summary.json's ``notices``."""
    if not cfg.notify.webhooks:
        return {"kind": None, "sent": 0, "failed": 0}  # and nothing kept: no notices wanted
    job = str((summary.get("run") or {}).get("job") or "")
    outcome = outcome_of(summary)
    previous = previous_outcome(root, job)
    kind = decide(outcome, previous, cfg.notify.on_warn)
    sent = failed = 0
    if kind is not None:
        sent, failed = send(notice_of_run(kind, summary, previous, report, cfg.notify, root), cfg.notify)
    record_outcome(root, job, outcome)
    return {"kind": kind, "sent": sent, "failed": failed}


def notify_unfinished(
    cfg: AuditConfig, job: str, root: Path | None, outcome: str, error: str | None = None
) -> None:
    """A run that ended without a summary: in an error (``ERROR``), or not drained."""
    if not cfg.notify.webhooks:
        return
    previous = previous_outcome(root, job)
    kind = decide(outcome, previous, cfg.notify.on_warn)
    if kind is not None:
        send(Notice(kind, job, outcome, previous, None, None, error=error), cfg.notify)
    record_outcome(root, job, outcome)
