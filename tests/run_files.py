"""Checks of what a finished run wrote beside its summary: the metrics file read back with
Prometheus' own parser and held against summary.json, and the violation keys kept."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from audit.validate.violations import violations_dataset

VERDICT_CODES = {"PASS": 0, "WARN": 1, "FAIL": 2}


def metric_samples(path: Path) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = path.read_text(encoding="utf-8")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def assert_metrics_agree(run_dir: Path) -> dict[str, Any]:
    """Every metric in ``run_dir/metrics.prom`` against summary.json, value for value;
    returns the summary."""
    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    samples = metric_samples(run_dir / "metrics.prom")
    run = summary["run"]
    # The pair and the job: every series carries both.
    common = {
        "source_cluster": str(run.get("source_cluster_id") or ""),
        "destination_cluster": str(run.get("destination_cluster_id") or ""),
        "job_kind": run["job"],
    }

    def value(name: str, **labels: str) -> float:
        return samples[(name, frozenset({**common, **labels}.items()))]

    assert value("mirror_audit_verdict") == VERDICT_CODES[summary["verdict"]]
    for inv_id, inv in summary["invariants"].items():
        for status in ("pass", "warn", "fail", "skipped"):
            expected = 1.0 if inv["status"] == status else 0.0
            assert value("mirror_audit_invariant_status", invariant=inv_id, status=status) == expected, inv_id
        assert value("mirror_audit_invariant_violations", invariant=inv_id) == inv["violations"], inv_id
    if run["total_lag_records"] is None:  # unknown: no sample, never 0
        assert not [k for k in samples if k[0] == "mirror_audit_lag_records"]
    else:
        assert value("mirror_audit_lag_records") == run["total_lag_records"]
    for figure in ("expected_loss_records", "expected_reprocess_records", "min_epoch_headroom"):
        if run.get(figure) is not None:
            assert value(f"mirror_audit_{figure}") == run[figure], figure
    topics = summary["lag_by_topic"]
    known = [t["lag_records"] for t in topics if t["lag_records"] is not None]
    assert (sum(known) if len(known) == len(topics) else None) == run["total_lag_records"]
    # The most lagging topics by name, the rest summed as "(other)" (a bounded label set).
    from audit.report.metrics import topic_series

    for label, lag_records, _ in topic_series(topics):
        if lag_records is None:  # unknown: no sample, never 0
            series = frozenset({**common, "topic": label}.items())
            assert ("mirror_audit_topic_lag_records", series) not in samples
        else:
            assert value("mirror_audit_topic_lag_records", topic=label) == lag_records
    for stage, seconds in run["stage_seconds"].items():
        assert value("mirror_audit_stage_duration_seconds", stage=stage) == seconds
    assert value("mirror_audit_run_duration_seconds") == run["duration_seconds"]
    finished = datetime.fromisoformat(run["finished_at"].replace("Z", "+00:00")).timestamp()
    assert value("mirror_audit_last_run_timestamp_seconds") == finished
    assert not any("partition" in dict(labels) or "group_id" in dict(labels) for _, labels in samples)
    return summary


def kept_keys(run_dir: Path) -> dict[str, set[str]]:
    """A run's violation keys per invariant."""
    dataset = violations_dataset(run_dir)
    assert dataset is not None, f"{run_dir} kept no violation keys"
    table = dataset.to_table()
    out: dict[str, set[str]] = {}
    for inv, key in zip(table.column("invariant").to_pylist(), table.column("key").to_pylist(), strict=True):
        out.setdefault(inv, set()).add(key)
    return out


def unchecked_keys(run_dir: Path) -> dict[str, set[tuple[str, str]]]:
    """A run's unchecked rows per invariant, as (key, missing input); {} when none were kept."""
    import pyarrow.dataset as ds

    from audit.validate.coverage import UNCHECKED_FILE

    path = run_dir / UNCHECKED_FILE
    files = sorted(path.glob("*.parquet")) if path.is_dir() else ([path] if path.is_file() else [])
    if not files:
        return {}
    table = ds.dataset([str(f) for f in files], format="parquet").to_table()
    out: dict[str, set[tuple[str, str]]] = {}
    for inv, key, missing in zip(
        table.column("invariant").to_pylist(),
        table.column("key").to_pylist(),
        table.column("missing").to_pylist(),
        strict=True,
    ):
        out.setdefault(inv, set()).add((key, missing))
    return out
