"""Prometheus text-format metrics of a run: RUN_DIR/metrics.prom, a copy for the node
exporter's textfile collector, and an optional push to a Pushgateway.

summary.json answers "what did this run find"; alerting needs the same answer as numbers a
Prometheus server already scrapes, plus the one thing a single summary cannot say: when the
last run that did not fail finished (so "no good audit for a day" can page someone).

Each run gets a registry of its own, so nothing from an earlier run in the same process
(a test, a demo running several jobs) leaks into this run's file. Every series carries the
cluster pair (``source_cluster``, ``destination_cluster``), so one textfile directory or
one Pushgateway can hold several pairs, and the job (``job_kind``: nightly, audit,
readiness, failover verify, ...), so the jobs of one pair never erase one another: each
job writes a textfile of its own beside ``output.metrics_textfile`` (``mirror_audit.prom``
gives ``mirror_audit.nightly.prom``, ``mirror_audit.readiness.prom``, ...) and replaces a
Pushgateway group of its own (the pair and the job). A nightly then leaves the last
readiness answer where alerts and dashboards read it, and the readiness check leaves the
nightly's invariant statuses. Partitions and groups never become labels: their number is
unbounded, and the report already names them.

An earlier version wrote one file at ``output.metrics_textfile`` itself and one group per
pair, with the same series as a job's now: left there, they would stay stale forever and
collide with the job's own (a duplicate series fails the node exporter's textfile
collector, and the Pushgateway refuses a push that would make one). So that file is
removed (only if it is one this tool wrote) and that group deleted when a job writes its
own.
"""

from __future__ import annotations

import http.client
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.error import HTTPError, URLError

from prometheus_client import (
    CollectorRegistry,
    Gauge,
    delete_from_gateway,
    push_to_gateway,
    write_to_textfile,
)
from prometheus_client.exposition import basic_auth_handler, default_handler

from audit.config import OutputConfig
from audit.errors import OutputError
from audit.paths import check_writable, local_path, writable_directory
from audit.redaction import split_url_credentials
from audit.validate.figures import RUN_FIGURES, TOP_LEVEL, Figure

log = logging.getLogger(__name__)

METRICS_FILE = "metrics.prom"
TEXTFILE = "metrics textfile (output.metrics_textfile)"
PUSHGATEWAY_JOB = "mirror_audit"
# A Pushgateway that hangs must not hold the audit's result back for long.
PUSH_TIMEOUT_SECONDS = 10.0

VERDICT_CODES: dict[str, int] = {"PASS": 0, "WARN": 1, "FAIL": 2}
INVARIANT_STATUSES: tuple[str, ...] = ("pass", "warn", "fail", "skipped")
PAIR_LABELS: tuple[str, ...] = ("source_cluster", "destination_cluster")
# The job a series is of (summary.json's ``run.job``): "job" is the Pushgateway's and the
# scrape's own label.
JOB_LABEL = "job_kind"
SERIES_LABELS: tuple[str, ...] = (*PAIR_LABELS, JOB_LABEL)
# The start of every file this tool writes: what tells an earlier version's textfile from
# another program's file at the same path.
_OWN_FILE_START = b"# HELP mirror_audit_"

_Handler = Callable[[str, str, float | None, list[tuple[str, str]], bytes], Callable[[], None]]


def write_metrics(
    run_dir: Path, summary: dict[str, Any], history: list[dict[str, Any]], output: OutputConfig
) -> Path:
    """Write ``run_dir/metrics.prom`` (and the job's textfile beside
    ``output.metrics_textfile``, and push to the job's group at ``output.pushgateway_url``)
    for this run; returns the run directory's file.

    ``history`` holds earlier summaries of the same cluster pair, oldest first; it only
    feeds the last-success timestamp. A textfile that cannot be written is an
    ``OutputError``; a Pushgateway that does not answer is only a warning, because the
    audit's own result is in the run directory either way."""
    registry = build_registry(summary, history)
    labels = series_labels(summary)
    if output.metrics_textfile:
        configured = local_path(output.metrics_textfile)
        _write_textfile(configured, job_textfile(configured, labels[JOB_LABEL]), registry)
    # Errors writing into the run directory stay OSErrors: the run directory's handling
    # (audit.run_dirs) names it and removes the unfinished run.
    path = writable_directory(run_dir, "run directory") / METRICS_FILE
    write_to_textfile(str(path), registry)
    if output.pushgateway_url:
        push_metrics(output.pushgateway_url, registry, labels)
    return path


def job_textfile(configured: Path, job: str) -> Path:
    """The textfile of ``job``: ``output.metrics_textfile`` with the job before its suffix
    (``mirror_audit.prom``, ``failover verify``: ``mirror_audit.failover-verify.prom``), so
    a job replaces only its own series and the node exporter reads every job's."""
    slug = re.sub(r"[^A-Za-z0-9_]+", "-", job).strip("-") or "unknown-job"
    return configured.with_name(f"{configured.stem}.{slug}{configured.suffix}")


def build_registry(
    summary: Mapping[str, Any], history: Iterable[Mapping[str, Any]] = ()
) -> CollectorRegistry:
    """The run's metrics in a registry of their own. A figure the summary does not have
    gives no series at all: an absent series is honest, a made-up 0 would hide a gap."""
    metrics = _Metrics(series_labels(summary))
    run: Mapping[str, Any] = summary.get("run") or {}
    _add_verdict(metrics, summary)
    _add_invariants(metrics, summary.get("invariants") or {})
    _add_lag(metrics, run, summary.get("lag_by_topic") or [])
    _add_durations(metrics, run)
    _add_timestamps(metrics, summary, run, history)
    notices = summary.get("notices")
    if isinstance(notices, Mapping) and notices.get("kind"):
        metrics.set(
            "mirror_audit_notices_failed",
            "Notices of this run that no webhook took (logged; the verdict stands).",
            _number(notices.get("failed")),
        )
    return metrics.registry


def pair_labels(summary: Mapping[str, Any]) -> dict[str, str]:
    """The cluster pair's ids ("" when a snapshot did not record one), the labels that keep
    several pairs apart in one textfile directory or Pushgateway."""
    run: Mapping[str, Any] = summary.get("run") or {}
    return {
        "source_cluster": str(run.get("source_cluster_id") or ""),
        "destination_cluster": str(run.get("destination_cluster_id") or ""),
    }


def series_labels(summary: Mapping[str, Any]) -> dict[str, str]:
    """The labels every series of the run carries, and its Pushgateway grouping key: the
    cluster pair and the job (``""`` when the summary names none)."""
    run: Mapping[str, Any] = summary.get("run") or {}
    return {**pair_labels(summary), JOB_LABEL: str(run.get("job") or "")}


@dataclass(frozen=True)
class _Metrics:
    """Gauges made on first use, so a metric with nothing to report is not even declared
    (no HELP line promising a series that never comes)."""

    common: dict[str, str]
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    _gauges: dict[str, Gauge] = field(default_factory=dict)

    def set(self, name: str, doc: str, value: float | None, **labels: str) -> None:
        if value is None:
            return
        gauge = self._gauges.get(name)
        if gauge is None:
            gauge = Gauge(name, doc, [*SERIES_LABELS, *labels], registry=self.registry)
            self._gauges[name] = gauge
        gauge.labels(**self.common, **labels).set(value)


def _add_verdict(metrics: _Metrics, summary: Mapping[str, Any]) -> None:
    verdict = summary.get("verdict")
    code = VERDICT_CODES.get(verdict) if isinstance(verdict, str) else None
    if code is None:
        log.warning("summary has no known verdict (%r): mirror_audit_verdict not written", verdict)
    metrics.set("mirror_audit_verdict", "Verdict of the last run: 0 PASS, 1 WARN, 2 FAIL.", code)
    readiness = summary.get("readiness")
    go = {"GO": 1, "NO-GO": 0}.get(readiness) if isinstance(readiness, str) else None
    metrics.set("mirror_audit_readiness_go", "Readiness answer of the last readiness run: 1 GO, 0 NO-GO.", go)


def _add_invariants(metrics: _Metrics, invariants: Mapping[str, Any]) -> None:
    for inv_id, result in invariants.items():
        if not isinstance(result, Mapping):
            continue
        status = result.get("status")
        if isinstance(status, str):
            # The enum pattern: one series per status, so `== 1` selects and a change of
            # status is a change of value, not a series appearing from nowhere.
            statuses = INVARIANT_STATUSES if status in INVARIANT_STATUSES else (*INVARIANT_STATUSES, status)
            for candidate in statuses:
                metrics.set(
                    "mirror_audit_invariant_status",
                    "1 for the invariant's status in the last run, 0 for the other statuses.",
                    1 if candidate == status else 0,
                    invariant=str(inv_id),
                    status=candidate,
                )
        metrics.set(
            "mirror_audit_invariant_violations",
            "Rows violating the invariant in the last run.",
            _number(result.get("violations")),
            invariant=str(inv_id),
        )
        metrics.set(
            "mirror_audit_invariant_evaluated_rows",
            "Rows the invariant was evaluated on in the last run.",
            _number(result.get("evaluated")),
            invariant=str(inv_id),
        )
        metrics.set(
            "mirror_audit_invariant_unchecked_rows",
            "In-scope rows the invariant could not check in the last run (an input was missing).",
            _number(result.get("unchecked")),
            invariant=str(inv_id),
        )


# Figures of the whole run, as summary.json's run section holds them: the declared ones
# that have a metric (audit.validate.figures).
EXPORTED_FIGURES: tuple[Figure, ...] = tuple(f for f in (*RUN_FIGURES, *TOP_LEVEL) if f.metric is not None)


def _add_lag(metrics: _Metrics, run: Mapping[str, Any], lag_by_topic: Iterable[Any]) -> None:
    for figure in EXPORTED_FIGURES:
        assert figure.metric is not None
        metrics.set(figure.metric, figure.metric_help, _number(run.get(figure.name)))
    for topic, lag_records, lag_seconds in topic_series(lag_by_topic):
        metrics.set(
            "mirror_audit_topic_lag_records",
            "Records the destination is behind the source, per topic (the most lagging "
            f'{TOPIC_SERIES}, the rest summed under topic="{OTHER_TOPICS}").',
            lag_records,
            topic=topic,
        )
        metrics.set(
            "mirror_audit_topic_lag_seconds",
            "Largest lag of the topic's partitions in seconds (the rest: their largest).",
            lag_seconds,
            topic=topic,
        )


def _label(name: str) -> str:
    """A label value with its control characters escaped (``\\x1b``): the exposition format
    escapes only backslash, quote and newline, and a topic name is not trusted text."""
    return "".join(c if c == "\n" or (" " <= c != "\x7f") else f"\\x{ord(c):02x}" for c in name)


# Per-topic series are bounded: a cluster of 10,000 topics must not make 20,000 series.
TOPIC_SERIES = 50
OTHER_TOPICS = "(other)"


def topic_series(
    lag_by_topic: Iterable[Any], limit: int = TOPIC_SERIES
) -> list[tuple[str, float | None, float | None]]:
    """(topic label, lag records, lag seconds): the ``limit`` topics most behind by name as
    a label (control characters escaped: a topic name is not trusted text), then one
    ``(other)`` series for the rest (records summed, seconds the largest)."""
    rows = [
        (row["topic"], _number(row.get("lag_records")), _number(row.get("lag_seconds")))
        for row in lag_by_topic
        if isinstance(row, Mapping) and isinstance(row.get("topic"), str)
    ]
    rows.sort(key=lambda r: (-(r[1] or 0), -(r[2] or 0), r[0]))
    out = [(_label(t), records, seconds) for t, records, seconds in rows[:limit]]
    rest = rows[limit:]
    if rest:
        records = [r[1] for r in rest if r[1] is not None]
        seconds = [r[2] for r in rest if r[2] is not None]
        # Unknown where one topic's lag is: the known ones alone would understate it.
        total = sum(records) if records and len(records) == len(rest) else None
        out.append((OTHER_TOPICS, total, max(seconds) if seconds else None))
    return out


def _add_durations(metrics: _Metrics, run: Mapping[str, Any]) -> None:
    metrics.set(
        "mirror_audit_run_duration_seconds",
        "Wall-clock duration of the last run.",
        _number(run.get("duration_seconds")),
    )
    stages = run.get("stage_seconds")
    if not isinstance(stages, Mapping):
        return
    for stage, seconds in stages.items():
        metrics.set(
            "mirror_audit_stage_duration_seconds",
            "Wall-clock duration of a stage of the last run.",
            _number(seconds),
            stage=str(stage),
        )


def _add_timestamps(
    metrics: _Metrics,
    summary: Mapping[str, Any],
    run: Mapping[str, Any],
    history: Iterable[Mapping[str, Any]],
) -> None:
    metrics.set(
        "mirror_audit_last_run_timestamp_seconds",
        "When the last run finished, Unix time.",
        _unix_time(run.get("finished_at")),
    )
    metrics.set(
        "mirror_audit_last_success_timestamp_seconds",
        "When the newest run that did not fail finished, Unix time; 0 if none has.",
        last_success_timestamp([*history, summary]),
    )


def last_success_timestamp(summaries: Iterable[Mapping[str, Any]]) -> float:
    """When the newest run with a verdict other than FAIL finished (started, if it has no
    finish time); 0 when there is none, so ``time() - x > N`` fires rather than staying
    silent for a pair that never passed."""
    times = [
        _run_time(s.get("run"))
        for s in summaries
        if isinstance(s.get("verdict"), str) and s["verdict"] != "FAIL"
    ]
    return max((t for t in times if t is not None), default=0.0)


def _run_time(run: Any) -> float | None:
    if not isinstance(run, Mapping):
        return None
    finished = _unix_time(run.get("finished_at"))
    return finished if finished is not None else _unix_time(run.get("started_at"))


def _unix_time(text: Any) -> float | None:
    """An ISO 8601 time as Unix seconds (no zone: UTC, as summary.json writes it); None for
    anything else."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _number(value: Any) -> float | None:
    """A figure as a float, or None when it is missing or not a number (a bool is not a
    figure, though Python counts it as an int)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def check_textfile(output: OutputConfig) -> None:
    """Before a job's work: a textfile path that could never be written is an error now,
    not after an hour's audit (creates nothing). The configured path names the jobs' files
    (``job_textfile``): a directory there is a mistake too."""
    if not output.metrics_textfile:
        return
    path = local_path(output.metrics_textfile)
    check_writable(path.parent, f"directory of the {TEXTFILE}")
    if path.is_dir():
        raise OutputError(f"{TEXTFILE} {path} is a directory, not a file")


def _write_textfile(configured: Path, path: Path, registry: CollectorRegistry) -> None:
    """The job's copy outside the run directory, for the node exporter: written via a
    temporary sibling and a rename (``write_to_textfile``), so it never reads half a file;
    then the earlier version's file at ``configured`` is retired. Any failure is an error
    naming the path: the run directory's own handling would blame the run directory."""
    writable_directory(path.parent, f"directory of the {TEXTFILE}")
    for candidate in (configured, path):
        if candidate.is_dir():
            raise OutputError(f"{TEXTFILE} {candidate} is a directory, not a file")
    try:
        write_to_textfile(str(path), registry)
    except OSError as exc:
        raise OutputError(f"{TEXTFILE} {path} cannot be written: {exc.strerror or exc}") from None
    _retire_shared_textfile(configured)


def _retire_shared_textfile(configured: Path) -> None:
    """Remove the file an earlier version wrote at ``configured`` for every job (its
    series would go stale, and duplicate the job's own); a file that does not start as
    this tool's files do, or a link, is left alone."""
    try:
        if configured.is_symlink() or not configured.is_file():
            return
        with configured.open("rb") as handle:
            if handle.read(len(_OWN_FILE_START)) != _OWN_FILE_START:
                return
        configured.unlink()
    except OSError as exc:
        log.warning("%s %s, an earlier version's, cannot be removed: %s", TEXTFILE, configured, exc)
        return
    log.info(
        "removed %s, an earlier version's %s: each job writes a file of its own now", configured, TEXTFILE
    )


def push_metrics(url: str, registry: CollectorRegistry, grouping_key: Mapping[str, str]) -> bool:
    """Push to a Pushgateway (PUT: the group of the pair and the job replaced as a whole),
    once the pair's group of an earlier version is deleted. False, with a warning, when it
    fails: the Pushgateway is a convenience, the run directory is the record. Credentials
    in the URL go in an Authorization header and never into a log."""
    public, username, password = split_url_credentials(url)
    handler = _auth_handler(username, password) if username is not None else default_handler
    try:
        _delete_shared_group(public, grouping_key, handler)
        push_to_gateway(
            public,
            job=PUSHGATEWAY_JOB,
            registry=registry,
            grouping_key=dict(grouping_key),
            timeout=PUSH_TIMEOUT_SECONDS,
            handler=handler,
        )
    except (OSError, http.client.HTTPException, ValueError) as exc:
        log.warning("Pushgateway %s did not take the metrics (%s); the audit goes on", public, _reason(exc))
        return False
    log.info("metrics pushed to Pushgateway %s", public)
    return True


def _delete_shared_group(public: str, grouping_key: Mapping[str, str], handler: _Handler) -> None:
    """Delete the pair's group an earlier version pushed for every job: it holds series
    equal to a job's own, and the Pushgateway refuses a push that would duplicate them
    (deleting a group that is not there is no error). A refusal (a proxy allowing only
    PUT) is logged and the push still tried; a Pushgateway that does not answer raises,
    so it is not waited for twice."""
    try:
        delete_from_gateway(
            public,
            job=PUSHGATEWAY_JOB,
            grouping_key={k: v for k, v in grouping_key.items() if k in PAIR_LABELS},
            timeout=PUSH_TIMEOUT_SECONDS,
            handler=handler,
        )
    except HTTPError as exc:
        log.info("Pushgateway %s did not delete the pair's group of an earlier version (%s)", public, exc)


def _reason(exc: Exception) -> object:
    """urllib's connection errors wrap the useful part ("Connection refused"); an HTTP
    error's own text already says the status ("HTTP Error 503: Service Unavailable")."""
    if isinstance(exc, URLError) and not isinstance(exc, HTTPError):
        return exc.reason
    return exc


def _auth_handler(username: str, password: str | None) -> _Handler:
    """prometheus-client's basic-auth handler with the URL's credentials bound: urllib
    would not send a URL's ``user:password@`` itself, and they stay out of the URL that
    errors and log lines quote."""

    def handler(
        url: str, method: str, timeout: float | None, headers: list[tuple[str, str]], data: bytes
    ) -> Callable[[], None]:
        return basic_auth_handler(url, method, timeout, headers, data, username, password or "")

    return handler
