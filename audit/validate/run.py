"""The validate stage: ``<run>/compare/*.parquet`` in, one result per invariant out."""

from __future__ import annotations

import dataclasses
import logging
from collections import defaultdict
from pathlib import Path

from audit.compare.run import OPTIONAL_TABLES, Compared
from audit.config import AuditConfig
from audit.errors import ConfigError
from audit.fsutil import atomic_write_json
from audit.validate.catalogue import Invariant
from audit.validate.coverage import collect_gaps
from audit.validate.gx import GxRunner, SuiteFile, load_suites, plain
from audit.validate.gx import expectations_dir as find_expectations
from audit.validate.results import MAX_EXAMPLES, NOT_COLLECTED, CheckOutcome, InvariantResult, fold, skipped
from audit.validate.violations import KEY_COLUMNS

log = logging.getLogger(__name__)

# The columns that label each offending row in the examples: its key, then both sides'
# values a person needs to judge it without opening the Parquet files.
INDEX_COLUMNS = {
    "partitions": [
        "topic",
        "partition",
        "src_leader_epoch",
        "dst_leader_epoch",
        "src_log_start_offset",
        "src_high_watermark",
        "dst_high_watermark",
        "src_last_stable_offset",
    ],
    "topics": ["topic", "src_partition_count", "dst_partition_count", "src_topic_id", "dst_topic_id"],
    "group_offsets": [
        "group_id",
        "topic",
        "partition",
        "src_committed_offset",
        "dst_committed_offset",
        "expected_offset",
        "dst_log_start_offset",
        "dst_high_watermark",
        "dst_active",
    ],
    "groups": ["group_id", "classification", "src_state", "dst_state", "dst_member_count"],
    "batch_diffs": [
        "topic",
        "partition",
        "base_offset",
        "batch_status",
        "differing_fields",
        "src_last_offset",
        "dst_last_offset",
        "src_crc",
        "dst_crc",
        "src_producer_id",
        "dst_producer_id",
        "src_producer_epoch",
        "dst_producer_epoch",
        "src_attributes",
        "dst_attributes",
        "src_partition_leader_epoch",
        "dst_partition_leader_epoch",
        "dst_leader_epoch",
        "dst_file",
        "dst_position",
    ],
    "marker_diffs": [
        "topic",
        "partition",
        "offset",
        "marker_status",
        "src_marker",
        "dst_marker",
        "src_producer_id",
        "dst_producer_id",
        "dst_file",
        "dst_position",
    ],
    "txn_closure": [
        "side",
        "topic",
        "partition",
        "base_offset",
        "last_offset",
        "producer_id",
        "producer_epoch",
        "control_type",
        "last_stable_offset",
    ],
    "scan_issues": ["side", "topic", "partition", "file", "position", "kind", "severity", "detail"],
    "record_chunk_diffs": [
        "topic",
        "partition",
        "chunk_start",
        "chunk_end",
        "chunk_status",
        "divergence_offset",
        "divergence_kind",
        "source_record",
        "destination_record",
        "src_record_count",
        "dst_record_count",
        "src_gap_count",
        "dst_gap_count",
        "src_max_record_epoch",
        "dst_max_record_epoch",
        "dst_leader_epoch",
    ],
    "mirror_states": [
        "topic",
        "partition",
        "state",
        "error_message",
        "last_mirror_offset",
        "dst_high_watermark",
        "stop_control_records",
        "stop_control_bound",
        "stop_markers",
        "dst_last_stable_offset",
        "src_leader_epoch",
        "dst_leader_epoch",
        "last_mirror_epoch",
    ],
    "failover_partitions": [
        "topic",
        "partition",
        "predicted_loss_records",
        "realized_loss_records",
        "source_offset_at_stop",
        "source_offset_from",
        "last_mirror_offset",
        "mirror_state",
    ],
    "failover_groups": [
        "group_id",
        "topic",
        "partition",
        "src_committed_offset",
        "resume_offset",
        "dst_log_start_offset",
        "dst_high_watermark",
        "skipped_records",
        "reprocessed_records",
    ],
    "failback_partitions": [
        "topic",
        "partition",
        "truncate_records",
        "last_mirror_offset",
        "src_high_watermark",
        "src_last_stable_offset",
        "mirror_state",
        "groups_committed_past",
    ],
    "failback_groups": [
        "group_id",
        "topic",
        "partition",
        "src_committed_offset",
        "last_mirror_offset",
        "records_past_truncation",
    ],
    "mm2_partitions": [
        "topic",
        "partition",
        "src_high_watermark",
        "src_last_stable_offset",
        "dst_high_watermark",
        "sync_upstream_offset",
        "sync_downstream_offset",
        "unreplicated_records",
    ],
    "mm2_syncs": [
        "topic",
        "partition",
        "record_offset",
        "upstream_offset",
        "downstream_offset",
        "prev_upstream_offset",
        "prev_downstream_offset",
    ],
    "mm2_checkpoints": [
        "group_id",
        "topic",
        "partition",
        "record_offset",
        "upstream_offset",
        "downstream_offset",
        "prev_downstream_offset",
        "dst_log_start_offset",
        "dst_high_watermark",
        "max_downstream_offset",
    ],
    "mm2_group_offsets": [
        "group_id",
        "topic",
        "partition",
        "src_committed_offset",
        "first_sync_upstream_offset",
        "ckpt_upstream_offset",
        "ckpt_downstream_offset",
        "staleness_records",
        "dst_committed_offset",
        "dst_log_start_offset",
        "dst_high_watermark",
        "dst_active",
    ],
}


def _with_examples(compared: Compared, outcome: CheckOutcome, index_columns: list[str]) -> CheckOutcome:
    """A failing check's first rows (in key order, at most MAX_EXAMPLES), selected by the
    engine that holds the table with the check's own SQL: only those rows reach this
    process, however many fail. A check GX listed itself (no SQL form) keeps its list."""
    if outcome.success or outcome.examples or outcome.unexpected_sql is None or not index_columns:
        return outcome
    key = KEY_COLUMNS.get(outcome.table) or tuple(index_columns[:1])
    # As GX listed them: the table's index columns, then the value(s) the check rejected.
    shown = list(dict.fromkeys([*index_columns, *outcome.columns]))
    sql = (
        f"SELECT {', '.join(shown)} FROM {{{outcome.table}}} WHERE {outcome.unexpected_sql} "
        f"ORDER BY {', '.join(f'{k} NULLS FIRST' for k in key)} LIMIT {MAX_EXAMPLES}"
    )
    rows = tuple(plain(r) for r in compared.tables.rows(sql))
    return dataclasses.replace(outcome, examples=rows)


def mode_suites(
    cfg: AuditConfig, patterns: tuple[str, ...], expectations_dir: Path | None = None
) -> list[SuiteFile]:
    """The suites of a profile (file name globs such as ``cm_*.json``), read and checked:
    called before any work, so a missing or broken suite directory costs no snapshot or
    Spark job."""
    if expectations_dir is not None:
        directory, origin = expectations_dir, "given"
    else:
        directory, origin = find_expectations(cfg.validation.expectations_dir)
    suites = load_suites(directory, patterns, origin)
    if not suites:
        raise ConfigError(
            f"no expectation suites for mode {cfg.mode} ({', '.join(patterns)}) in {directory} ({origin})"
        )
    return suites


def run_validation(
    compared: Compared,
    run_dir: Path,
    cfg: AuditConfig,
    suites: list[SuiteFile],
    catalogue: tuple[Invariant, ...],
) -> list[InvariantResult]:
    """The same suites judge either engine's tables (GX runs on Spark and on pandas); every
    invariant of the mode's ``catalogue`` gets a result, skipped where nothing checked it."""
    parameters = dataclasses.asdict(cfg.thresholds)
    runner = GxRunner(run_dir / "validation" / "data_docs", compared.tables)
    by_invariant: dict[str, list[CheckOutcome]] = defaultdict(list)
    for suite in suites:
        df = compared.frames.get(suite.table)
        if df is None and suite.table in OPTIONAL_TABLES:
            log.debug(
                "suite %s skipped: %s was not computed (its data was not collected)", suite.name, suite.table
            )
            continue
        if df is None:
            raise ConfigError(
                f"expectation suite {suite.path}: meta.comparison_table {suite.table!r} is not one of "
                f"the comparison tables ({', '.join(sorted(compared.frames))})"
            )
        index_columns = INDEX_COLUMNS.get(suite.table, [])
        for outcome in runner.run(suite, df, index_columns, parameters):
            by_invariant[outcome.invariant].append(_with_examples(compared, outcome, index_columns))
    runner.finish()
    gaps = collect_gaps(compared.tables, by_invariant, run_dir)
    accepted = set(cfg.readiness.accept_unchecked)
    results = []
    for inv in catalogue:
        checks = by_invariant.pop(inv.id, [])
        if checks:
            inv_gaps = gaps.get(inv.id, ())
            is_accepted = bool(inv_gaps) and inv.id in accepted
            results.append(fold(inv.id, inv.statement, checks, inv_gaps, is_accepted))
        else:
            reason = f"{NOT_COLLECTED}: needs {inv.needs}"
            if inv.spark_only and not compared.tables.data_level:
                reason = (
                    f"{NOT_COLLECTED} by this engine: checked by the Spark engine only (--engine spark): "
                    f"needs {inv.needs}"
                )
            reason = inv.not_applicable or reason
            results.append(skipped(inv.id, inv.statement, reason))
    for unknown, checks in by_invariant.items():  # an operator's own invariant IDs are kept, not dropped
        results.append(fold(unknown, checks[0].description, checks, gaps.get(unknown, ())))
    atomic_write_json(run_dir / "validation" / "results.json", {r.id: r.to_json() for r in results})
    return results
