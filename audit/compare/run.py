"""The compare stage: two snapshot directories in, ``<run>/compare/*.parquet`` out.

What is compared is the mode's (``audit.profiles``): its inputs, the verdicts on names both
engines join, and its comparisons in order; which engine computes them is the caller's
choice (``engines.py``). The tables are written into a temporary directory that becomes
``<run>/compare`` only once every one is there.
"""

from __future__ import annotations

import json
import logging
import shutil
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from audit.compare.engines import EngineName, Tables, data_level_engine
from audit.compare.scope import group_scope_rows, named_row, params_row, topic_name_rows, topic_scope_rows
from audit.compare.sql import Comparison
from audit.config import AuditConfig
from audit.errors import InputError
from audit.schemas import AUX_TABLES, COMPARISON_FORMATS_FILE, columns, comparison_format
from audit.snapshot import SnapshotPair, check_table, read_arrow, read_manifest, read_table

log = logging.getLogger(__name__)

SIDES = (("src_", "source"), ("dst_", "destination"))
SNAPSHOT_INPUTS = ("partitions", "groups", "group_offsets")


def started_ms(manifest: dict[str, Any], directory: Path) -> int:
    raw = manifest.get("started_at")
    try:
        return int(datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError as exc:
        raise InputError(
            f"{directory / 'manifest.json'}: started_at {raw!r} is not an ISO-8601 time"
        ) from exc


@dataclass(frozen=True)
class Compared:
    """One run's comparison tables: their files, and the engine that holds them, for the
    queries after the comparison (readiness figures, the report's slices) and the frames
    Great Expectations judges (Spark DataFrames, or pandas over DuckDB's Arrow)."""

    engine: EngineName
    paths: dict[str, Path]
    tables: Tables
    frames: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Inputs:
    """What a mode reads besides the snapshots' partitions, groups and group offsets, and
    how it names topics: ``prepare`` registers its extra inputs and returns the snapshot
    tables among them that name topics, as (side, directory, table)."""

    prepare: Callable[[Tables, Path, Path], list[tuple[str, Path, str]]]
    topic_in_scope: Callable[[AuditConfig], Callable[[str], bool]]
    replica_names: bool = False


def load_snapshot_table(tables: Tables, name: str, directory: Path, table: str) -> bool:
    """Register a snapshot table under ``name``: the file's, or an empty one of the declared
    columns when an optional table was not collected. Returns whether it was there."""
    present = check_table(directory, table)
    if present:
        tables.load(name, directory, table)
    else:
        tables.put(name, table, [])
    return present


def load_compared(
    tables: Tables, name: str, path: Path, table: str, needs: tuple[str, ...] | None = None
) -> None:
    """Register a comparison table another run wrote (``failover verify`` reads its
    readiness run's ``partitions``): its columns ``needs`` (all its declared ones if None).
    A run of another version is read where it holds them, and otherwise refused naming
    the table's format version it was written in and the one this version writes
    (``schemas.COMPARISON_FORMATS``), never with a bare missing-column error."""
    import pyarrow.parquet as pq

    from audit.schemas import arrow_schema

    wanted = needs if needs is not None else tuple(arrow_schema(table, "comparison").names)
    try:
        # Spark writes a directory of part files, the in-process engine one file.
        if path.is_dir():
            names: set[str] | None = set(pq.ParquetDataset(path).schema.names)
        else:
            names = set(pq.read_schema(path).names) if path.is_file() else None
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise InputError(f"{path} is not a readable Parquet file: {exc}") from exc
    if names is None:
        raise InputError(f"{path} is missing: the run it belongs to did not finish its comparison")
    missing = [c for c in wanted if c not in names]
    if missing:
        written = written_format(path.parent, table)
        raise InputError(
            f"{path} is format {written} of table '{table}' ({_format_origin(written)}); this version "
            f"writes format {comparison_format(table)} and needs its column{'s' * (len(missing) > 1)} "
            f"{', '.join(missing)}: give a run of this version (rerun it with this version of mirror-audit)"
        )
    tables.load_compared(name, path, table, wanted)


def write_formats(directory: Path, written: list[str]) -> None:
    """Record the format version of each table written into ``directory``."""
    from audit import __version__
    from audit.fsutil import atomic_write_text

    formats = {"tool_version": __version__, "tables": {t: comparison_format(t) for t in written}}
    text = json.dumps(formats, indent=1, sort_keys=True) + "\n"
    atomic_write_text(directory / COMPARISON_FORMATS_FILE, text)


def written_format(directory: Path, table: str) -> int:
    """The format version ``table`` was written in under ``directory``: 0 where the run
    recorded none (written before versions were), or its record cannot be read."""
    try:
        found = json.loads((directory / COMPARISON_FORMATS_FILE).read_text(encoding="utf-8"))
        version = found["tables"][table]
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    return version if isinstance(version, int) and not isinstance(version, bool) else 0


def _format_origin(version: int) -> str:
    return "written before format versions were recorded" if version == 0 else "written by another version"


def previous_partitions(previous_source: Path | None) -> list[tuple[Any, ...]]:
    """The source's partitions as the newest earlier run of the pair saw them (their topic
    id and log start, and when that snapshot began): empty where there is none, or its
    snapshot is gone or unreadable (the checks then have nothing to compare with: a topic
    id change is not seen, a rate not measured)."""
    if previous_source is None or not check_table(previous_source, "partitions"):
        return []
    try:
        wanted = ["topic", "partition", "topic_id", "log_start_offset"]
        found = read_arrow(previous_source, "partitions", wanted)
        taken_ms = started_ms(read_manifest(previous_source), previous_source)
    except InputError as exc:
        log.warning("the previous run's source snapshot is not read (%s): not compared with it", exc)
        return []
    return [
        named_row("previous_partitions", {**r, "snapshot_at_ms": taken_ms, "snapshot": str(previous_source)})
        for r in found.to_pylist()
    ]


def _load_previous(tables: Tables, name: str, path: Path | None, table: str) -> None:
    """What the newest earlier run that wrote ``table`` kept there, as the auxiliary table
    ``name`` (its declared columns): none where no earlier run wrote it, or its file cannot
    be read or lacks them (what it would carry then stays unchecked or unseen, never
    passed: the gaps it explains, the syncs the offset-syncs topic's cleaner removed)."""
    if path is not None:
        needs = tuple(c.name for c in AUX_TABLES[name])
        try:
            load_compared(tables, name, path, table, needs)
            return
        except InputError as exc:
            log.warning("%s of the earlier run is not used (%s)", table, exc)
    tables.put(name, name, [])


def run_compare(
    tables: Tables,
    comparisons: tuple[Comparison, ...],
    inputs: Inputs,
    pair: SnapshotPair,
    run_dir: Path,
    cfg: AuditConfig,
    extra: Callable[[Tables, Path, Path, AuditConfig, Path], list[str]] | None = None,
) -> Compared:
    """Register both snapshots and the name verdicts, run ``comparisons`` in order (each may
    read the ones before it), then ``extra`` (the Spark-only batch and record tables)."""
    source, destination = pair.source, pair.destination
    share_read = {}
    for prefix, role in SIDES:
        directory = source if role == "source" else destination
        for table in SNAPSHOT_INPUTS:
            load_snapshot_table(tables, prefix + table, directory, table)
        share_read[role] = load_snapshot_table(
            tables, prefix + "share_group_offsets", directory, "share_group_offsets"
        )
    named = inputs.prepare(tables, source, destination)
    names = _names(
        [
            *[
                (side, d, t)
                for side, d, role in (("src", source, "source"), ("dst", destination, "destination"))
                for t in ("partitions", "group_offsets", *(["share_group_offsets"] * share_read[role]))
            ],
            *named,
        ],
        [source, destination],
    )
    src_topics, dst_topics = names["src"], names["dst"]
    if inputs.replica_names:
        pairs = topic_name_rows(src_topics, dst_topics, cfg)
        tables.put("topic_names", "topic_names", pairs)
        src_topics.update(t for t, _ in pairs)  # a checkpoint's replica names its source topic
        topics = src_topics
    else:
        topics = src_topics | dst_topics
    tables.put("topic_scope", "topic_scope", topic_scope_rows(topics, inputs.topic_in_scope(cfg)))
    tables.put("group_scope", "group_scope", group_scope_rows(names["groups"], cfg))
    tables.put("accepted_loss", "accepted_loss", [(t,) for t in sorted(set(cfg.readiness.accept_lost))])
    tables.put("previous_partitions", "previous_partitions", previous_partitions(pair.previous_source))
    _load_previous(tables, "previous_source_reads", pair.previous_source_reads, "mm2_source_reads")
    _load_previous(tables, "previous_syncs", pair.previous_syncs, "mm2_syncs")
    markers = check_table(destination, "markers")
    src_started = started_ms(pair.src_manifest, source)
    tables.put("run_params", "run_params", params_row(cfg, src_started, markers, share_read))

    out, tmp = run_dir / "compare", run_dir / ".compare.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    chosen = [c for c in comparisons if all(tables.collected(name) for name in c.requires)]
    compute_all(tables, chosen, tmp)
    written = [c.table for c in chosen]
    if extra is not None:
        written += extra(tables, source, destination, cfg, tmp)
    write_formats(tmp, written)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log.info("comparison tables written to %s", out)
    paths = {name: out / f"{name}.parquet" for name in written}
    for name, path in paths.items():
        tables.reopen(name, path)
    return Compared(tables.engine, paths, tables, {name: tables.frame(name) for name in written})


def reads(comparison: Comparison) -> set[str]:
    """The tables ``comparison``'s queries name (their ``{name}`` placeholders)."""
    names: set[str] = set()
    for sql in (comparison.sql, *(step.sql for step in comparison.steps)):
        names.update(field for _, field, _, _ in string.Formatter().parse(sql) if field)
    return names


def compute_all(tables: Tables, comparisons: list[Comparison], directory: Path) -> None:
    """Compute ``comparisons`` into ``directory``, each after the ones it reads. Where the
    engine takes queries from several threads (Spark), comparisons that do not read each
    other run side by side. A Spark job over metadata is mostly the driver's planning and
    scheduling, and a Parquet commit, and those overlap. Measured on two cores, with the test
    suite's Spark settings: two compares of mode mm2's seven comparisons of a small pair took
    34-36 s one at a time and 26-33 s three at a time. DuckDB has one connection, so it
    computes them in order. The first failure stops what has not started and is raised."""
    paths = {c.table: directory / f"{c.table}.parquet" for c in comparisons}
    if tables.concurrent_queries < 2 or len(comparisons) < 2:
        for comparison in comparisons:
            tables.compute(comparison, paths[comparison.table])
        return
    from concurrent.futures import Future, ThreadPoolExecutor

    def compute(comparison: Comparison, after: list[Future[None]]) -> None:
        for earlier in after:
            earlier.result()
        tables.compute(comparison, paths[comparison.table])

    pool = ThreadPoolExecutor(max_workers=tables.concurrent_queries, thread_name_prefix="compare")
    try:
        done: dict[str, Future[None]] = {}
        for comparison in comparisons:
            after = [done[name] for name in sorted(reads(comparison)) if name in done]
            done[comparison.table] = pool.submit(compute, comparison, after)
        for future in done.values():
            future.result()
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


# --------------------------------------------------------------------------- mode inputs


def check_scope(inputs: Inputs, cfg: AuditConfig, pair: SnapshotPair) -> None:
    """A job over no in-scope source partition is an input error, offline as live (the
    snapshot refuses one): every invariant would be skipped and the run would say PASS
    (GO) having checked nothing. The names are metadata: read in this process."""
    source = pair.source
    topics = pair.arrow(source, "partitions").column("topic").unique().to_pylist()
    in_scope = inputs.topic_in_scope(cfg)
    if any(in_scope(t) for t in topics):
        return
    raise InputError(
        f"no in-scope source partition: the source snapshot {source} holds {len(topics)} topics and "
        f"none is in scope.topics ({cfg.scope.topics_shown()}); check the scope patterns, or give the "
        "snapshot of the cluster that holds the topics"
    )


# The largest offset, or timestamp in milliseconds, a snapshot table may hold: 2^53 - 1.
# No Kafka partition comes near it (ten million records a second for 28 years); the
# report's JavaScript holds integers exactly only up to it; and twice it, or the
# difference of two, stays far inside the 64 bits both engines compute in: 2^63 - 1
# overflowed ``lag_records * 2`` (DuckDB's OutOfRangeException, Spark's ARITHMETIC_OVERFLOW).
MAX_SNAPSHOT_INTEGER = 2**53 - 1

# The 64-bit columns of the metadata tables the comparisons compute with (offsets,
# timestamps, counts), each held to ``MAX_SNAPSHOT_INTEGER`` either way.
_BOUNDED: dict[str, tuple[str, ...]] = {
    "partitions": (
        "log_start_offset",
        "high_watermark",
        "last_stable_offset",
        "max_timestamp_ms",
        "open_txn_first_timestamp_ms",
    ),
    "group_offsets": ("committed_offset",),
    "share_group_offsets": ("start_offset", "lag"),
    "open_transactions": ("start_offset", "start_timestamp_ms"),
    "mirror_partitions": ("source_offset", "destination_offset", "last_mirror_offset"),
    "mm2_offset_syncs": ("upstream_offset", "downstream_offset", "record_offset", "timestamp_ms"),
    "mm2_checkpoints": ("upstream_offset", "downstream_offset", "record_offset", "timestamp_ms"),
}
# The offsets the comparisons read as positions: never negative.
_NEVER_NEGATIVE: dict[str, tuple[str, ...]] = {
    "partitions": ("log_start_offset", "high_watermark", "last_stable_offset"),
    "group_offsets": ("committed_offset",),
    "share_group_offsets": ("start_offset",),
}


def check_offsets(pair: SnapshotPair, directory: Path) -> None:
    """A snapshot holding a negative offset, or an offset or timestamp beyond
    ``MAX_SNAPSHOT_INTEGER``, is an input error naming the file, the column and the first
    partition, never a comparison that could say GO over it (an earlier version wrote the
    -1001 librdkafka answers for a partition without a leader as its high watermark) nor
    one that overflows in the middle of a run. The order between the offsets is not
    checked here: each is read by its own request, and a partition being written between
    two reads may have moved."""
    import pyarrow.compute as pc

    for table_name, bounded in _BOUNDED.items():
        if not check_table(directory, table_name):
            continue
        table = pair.arrow(directory, table_name)
        for column in bounded:
            if column not in table.column_names:
                continue  # a column added later, absent from an older snapshot: nulls
            values = table.column(column)
            never_negative = column in _NEVER_NEGATIVE.get(table_name, ())
            tests = [
                (pc.less(values, 0), "not an offset")
                if never_negative
                else (pc.less(values, -MAX_SNAPSHOT_INTEGER), f"below -{MAX_SNAPSHOT_INTEGER}"),
                (pc.greater(values, MAX_SNAPSHOT_INTEGER), f"beyond {MAX_SNAPSHOT_INTEGER} (2^53 - 1)"),
            ]
            for test, why in tests:
                bad = pc.fill_null(test, False)
                if pc.any(bad).as_py():
                    i = pc.index(bad, True).as_py()
                    raise InputError(
                        f"{directory / (table_name + '.parquet')}: {column} of {_where(table, i)} is "
                        f"{values[i].as_py()}, {why}: take the snapshot again"
                    )


# The 64-bit columns of the tables that grow with the data (a row per batch, record or
# chunk): held to the same bounds from their files' Parquet statistics, without reading
# the rows (a row group without statistics is read, that column alone).
_DATA_BOUNDED: dict[str, tuple[str, ...]] = {
    "batches": ("base_offset", "last_offset", "first_timestamp_ms", "max_timestamp_ms"),
    "markers": ("offset", "timestamp_ms"),
    "record_chunks": ("chunk_start", "chunk_end", "record_count", "first_offset", "last_offset", "gap_count"),
    "record_chunk_ranges": ("start_offset", "end_offset", "read_to"),
    "record_divergences": ("chunk_start", "chunk_end", "offset"),
    "record_digests": ("offset",),
    "record_digest_ranges": ("start_offset", "end_offset", "read_to"),
    "record_digest_runs": ("start_offset", "end_offset"),
    "record_digest_cuts": ("src_through", "dst_through", "verified_from"),
    "record_alignments": tuple(c.name for c in columns("record_alignments") if c.type == "int64"),
}


def check_data_offsets(directory: Path) -> None:
    """``check_offsets`` for the data-level tables, from the Parquet statistics of each
    row group (memory and time bounded by the number of row groups, whatever the rows):
    an offset beyond ``MAX_SNAPSHOT_INTEGER`` either way is an input error naming the file
    and the column, never an overflow in the middle of a Spark job."""
    import pyarrow.parquet as pq

    for table_name, bounded in _DATA_BOUNDED.items():
        if not check_table(directory, table_name):
            continue
        path = directory / f"{table_name}.parquet"
        files = sorted(path.rglob("*.parquet")) if path.is_dir() else [path]
        for file in files:
            reader = pq.ParquetFile(file)
            names = reader.schema_arrow.names
            for rg in range(reader.metadata.num_row_groups):
                group = reader.metadata.row_group(rg)
                for column in (c for c in bounded if c in names):
                    lo, hi = _column_range(reader, group, rg, names.index(column), column)
                    for value, bad in (
                        (lo, lo is not None and lo < -MAX_SNAPSHOT_INTEGER),
                        (hi, hi is not None and hi > MAX_SNAPSHOT_INTEGER),
                    ):
                        if bad:
                            raise InputError(
                                f"{file}: {column} holds {value}, beyond {MAX_SNAPSHOT_INTEGER} (2^53 - 1) "
                                "either way: no offset or time comes near it; take the scan again"
                            )


def _column_range(reader: Any, group: Any, rg: int, index: int, column: str) -> tuple[int | None, int | None]:
    """A row group's smallest and largest value of one column: its statistics, or the column
    read where the writer kept none."""
    import pyarrow.compute as pc

    stats = group.column(index).statistics
    if stats is not None and stats.has_min_max:
        return stats.min, stats.max
    values = reader.read_row_group(rg, columns=[column]).column(column)
    found = pc.min_max(values)
    return found["min"].as_py(), found["max"].as_py()


def _where(table: Any, i: int) -> str:
    """The row's partition (``orders-0``), or its topic alone, or its row number."""
    names = table.column_names
    topic = table.column("topic")[i].as_py() if "topic" in names else None
    partition = table.column("partition")[i].as_py() if "partition" in names else None
    if topic is None:
        return f"row {i}"
    return f"{topic}-{partition}" if partition is not None else str(topic)


def cluster_mirroring_inputs(tables: Tables, source: Path, destination: Path) -> list[tuple[str, Path, str]]:
    """Mode cluster-mirroring: each side's batch scan issues (small: a row per problem),
    whose topics are named too, since their rows are judged in scope like the batches';
    the mirror's own state (from the snapshot of the cluster it writes to: the
    destination's, or the source's for a mirror running back), the source's open
    transactions and the destination's markers (where batches were read), which judge a
    stop (CM-FAILOVER-1). Each absent one is an empty input."""
    named = []
    for side, prefix, directory in (("src", "src_", source), ("dst", "dst_", destination)):
        if load_snapshot_table(tables, f"{prefix}batch_scan_issues", directory, "batch_scan_issues"):
            named.append((side, directory, "batch_scan_issues"))
    # The mirror state's topics get scope verdicts of their own: a mirrored partition absent
    # from both snapshots is in scope by its name, its checks unchecked, never dropped.
    for state_dir in (destination, source):
        if load_snapshot_table(tables, "dst_mirror_partitions", state_dir, "mirror_partitions"):
            named.append(("dst", state_dir, "mirror_partitions"))
            break
    load_snapshot_table(tables, "src_open_transactions", source, "open_transactions")
    load_snapshot_table(tables, "dst_markers", destination, "markers")
    return named


def mm2_inputs(tables: Tables, source: Path, destination: Path) -> list[tuple[str, Path, str]]:
    """Mode mm2: MirrorMaker 2's offset syncs (they name source topics) and checkpoints
    (they name replicas), from whichever snapshot holds each; the source's open
    transactions (the report names them); each side's record digests and what its records
    scan read and matched as it read, where a nightly scan wrote them (a row per record:
    the engine that spreads work over a cluster takes them, the in-process one leaves them
    out)."""
    named = []
    load_snapshot_table(tables, "src_open_transactions", source, "open_transactions")
    load_snapshot_table(tables, "src_partition_traits", source, "partition_traits")
    scanned = [
        ("src_", source, "record_digest_cuts"),
        ("src_", source, "record_digest_runs"),
        ("src_", source, "record_alignments"),
    ] + [
        (prefix, directory, table)
        for prefix, directory in (("src_", source), ("dst_", destination))
        for table in ("record_digests", "record_digest_ranges")
    ]
    for prefix, directory, table in scanned:
        if tables.data_level:
            load_snapshot_table(tables, prefix + table, directory, table)
        else:
            tables.put(prefix + table, table, [])
    # The source's runs of offsets holding records come from its digests only where the
    # scan did not keep them (an older version's snapshot): otherwise none is read for them.
    if tables.data_level and not check_table(source, "record_digest_runs"):
        load_snapshot_table(tables, "src_digests_without_runs", source, "record_digests")
    else:
        tables.put("src_digests_without_runs", "record_digests", [])
    for name, table, side in (
        ("offset_syncs", "mm2_offset_syncs", "src"),
        ("checkpoints", "mm2_checkpoints", "dst"),
        ("positions", "mm2_positions", "src"),
    ):
        for directory in (source, destination):
            if load_snapshot_table(tables, name, directory, table):
                named.append((side, directory, table))
                break
        else:
            tables.put(name, table, [])
    return named


def _names(named: list[tuple[str, Path, str]], dirs: list[Path]) -> dict[str, set[str]]:
    """The distinct topic names of each side and every group id, read from the snapshot
    files on this machine (metadata: a few columns of small tables), not by a job."""
    out: dict[str, set[str]] = {"src": set(), "dst": set(), "groups": set()}
    for side, directory, table in named:
        out[side].update(_distinct(directory, table, "topic"))
    for directory in dirs:
        for table in ("groups", "group_offsets"):
            out["groups"].update(_distinct(directory, table, "group_id"))
    return out


def _distinct(directory: Path, table: str, column: str) -> set[str]:
    import pyarrow.compute as pc

    values = read_arrow(directory, table, [column]).column(column)
    return {v for v in pc.unique(values).to_pylist() if v is not None}


def data_level_tables(
    tables: Tables, source: Path, destination: Path, cfg: AuditConfig, out: Path
) -> list[str]:
    """Mode cluster-mirroring on Spark: the batch and record tables the snapshots allow
    (they grow with the data: a row per batch or chunk, so Spark only). Diffs need both
    sides' batches, the transaction closure either side's. Returns the names written."""
    spark_tables = data_level_engine(tables)
    if spark_tables is None:
        return []
    from audit.compare.batches import (
        compare_batches,
        compare_commit_epochs,
        compare_markers,
        compare_scan_issues,
        compare_transactions,
    )
    from audit.compare.records import compare_record_chunks

    def optional(role_dir: Path, table: str) -> Any:
        return read_table(spark_tables.spark, role_dir, table)

    def write(name: str, df: Any) -> str:
        spark_tables.write(name, df, out / f"{name}.parquet")
        return name

    scope = tables.frame("topic_scope")
    src_parts, dst_parts = tables.frame("src_partitions"), tables.frame("dst_partitions")
    written = []
    src_b, dst_b = optional(source, "batches"), optional(destination, "batches")
    if src_b is not None and dst_b is not None:
        src_m, dst_m = optional(source, "markers"), optional(destination, "markers")
        if src_m is None or dst_m is None:
            raise InputError(
                f"{source if src_m is None else destination}: batches.parquet without markers.parquet "
                "(both come from the same scan: rerun it)"
            )
        written.append(write("batch_diffs", compare_batches(src_b, dst_b, src_parts, dst_parts, scope, cfg)))
        markers = compare_markers(src_m, dst_m, src_b, dst_b, src_parts, dst_parts, scope)
        written.append(write("marker_diffs", markers))
        src_i, dst_i = optional(source, "batch_scan_issues"), optional(destination, "batch_scan_issues")
        if src_i is not None or dst_i is not None:
            written.append(write("scan_issues", compare_scan_issues(src_i, dst_i, scope)))
    if dst_b is not None and tables.has("group_offsets"):
        written.append(write("commit_epochs", compare_commit_epochs(tables.frame("group_offsets"), dst_b)))
    if src_b is not None or dst_b is not None:
        written.append(write("txn_closure", compare_transactions(src_b, dst_b, src_parts, dst_parts, scope)))
    src_c, dst_c = optional(source, "record_chunks"), optional(destination, "record_chunks")
    if src_c is not None and dst_c is not None:
        divergences = optional(destination, "record_divergences")
        src_r, dst_r = optional(source, "record_chunk_ranges"), optional(destination, "record_chunk_ranges")
        chunks = compare_record_chunks(src_c, dst_c, divergences, dst_parts, scope, cfg, src_r, dst_r)
        written.append(write("record_chunk_diffs", chunks))
    return written
