"""The compare stage: two snapshot directories in, ``<run>/compare/*.parquet`` out."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from audit.compare.tables import (
    SnapshotFrames,
    compare_group_offsets,
    compare_groups,
    compare_partitions,
    compare_topics,
)
from audit.config import AuditConfig
from audit.errors import InputError
from audit.snapshot import Role, read_manifest, read_table

log = logging.getLogger(__name__)

TABLES = ("partitions", "topics", "group_offsets", "groups")
# Written only when the snapshots carry what they compare (record batches and markers
# from a segments scan or a fetch); absent, their invariants are skipped as not collected.
BATCH_TABLES = ("batch_diffs", "marker_diffs", "txn_closure", "scan_issues")
OPTIONAL_TABLES = (*BATCH_TABLES, "record_chunk_diffs")
MM2_TABLES = ("mm2_partitions", "mm2_syncs", "mm2_checkpoints", "mm2_group_offsets")

# "spark": the distributed jobs (nightly and offline audits, any cluster size).
# "local": pandas in this process (readiness: an answer in seconds, no JVM to start).
Engine = Literal["spark", "local"]
ENGINES: tuple[Engine, ...] = ("spark", "local")


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
    """One run's comparison tables: their files, and the engine's frames over them
    (Spark DataFrames read back from the files, or the pandas frames that were written)."""

    engine: Engine
    paths: dict[str, Path]
    frames: dict[str, Any]


def load_frames(spark: Any, directory: Path, role: Role) -> tuple[SnapshotFrames, dict[str, Any]]:
    manifest = read_manifest(directory, role)
    frames = SnapshotFrames(
        partitions=read_table(spark, directory, "partitions"),
        groups=read_table(spark, directory, "groups"),
        group_offsets=read_table(spark, directory, "group_offsets"),
        started_at_ms=started_ms(manifest, directory),
    )
    return frames, manifest


@contextmanager
def _compare_dir(run_dir: Path) -> Iterator[Path]:
    """A temporary directory that becomes ``<run>/compare`` only once every table is in it."""
    out = run_dir / "compare"
    tmp = run_dir / ".compare.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    yield tmp
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log.info("comparison tables written to %s", out)


def run_compare(spark: Any, source: Path, destination: Path, run_dir: Path, cfg: AuditConfig) -> Compared:
    """The Spark engine: one comparison table per concern, written as Parquet datasets."""
    src, _ = load_frames(spark, source, "source")
    dst, _ = load_frames(spark, destination, "destination")
    with _compare_dir(run_dir) as tmp:

        def write(name: str, df: Any) -> Any:
            """Write a table and read it back, so tables derived from it do not recompute its joins."""
            path = str(tmp / f"{name}.parquet")
            df.write.mode("overwrite").parquet(path)
            return spark.read.parquet(path)

        partitions = write("partitions", compare_partitions(src, dst, cfg))
        group_offsets = write("group_offsets", compare_group_offsets(src, dst, cfg))
        write("topics", compare_topics(partitions, cfg))
        write("groups", compare_groups(group_offsets, partitions, cfg))
        written = list(TABLES) + _compare_batches(spark, source, destination, src, dst, cfg, write)
        written += _compare_records(spark, source, destination, dst, cfg, write)
    paths = {name: run_dir / "compare" / f"{name}.parquet" for name in written}
    return Compared("spark", paths, {name: spark.read.parquet(str(p)) for name, p in paths.items()})


def _compare_records(
    spark: Any, source: Path, destination: Path, dst: SnapshotFrames, cfg: AuditConfig, write: Any
) -> list[str]:
    """The record chunk table, when both snapshots carry a record scan."""
    from audit.compare.record_tables import compare_record_chunks

    src_c = read_table(spark, source, "record_chunks")
    dst_c = read_table(spark, destination, "record_chunks")
    if src_c is None or dst_c is None:
        return []
    divergences = read_table(spark, destination, "record_divergences")
    write("record_chunk_diffs", compare_record_chunks(src_c, dst_c, divergences, dst.partitions, cfg))
    return ["record_chunk_diffs"]


def _compare_batches(
    spark: Any,
    source: Path,
    destination: Path,
    src: SnapshotFrames,
    dst: SnapshotFrames,
    cfg: AuditConfig,
    write: Any,
) -> list[str]:
    """The batch-level tables the snapshots allow: diffs need both sides' batches, the
    transaction closure either side's. Returns the names written."""
    from audit.compare.batch_tables import (
        compare_batches,
        compare_markers,
        compare_scan_issues,
        compare_transactions,
    )

    src_b = read_table(spark, source, "batches")
    dst_b = read_table(spark, destination, "batches")
    written = []
    if src_b is not None and dst_b is not None:
        src_m = read_table(spark, source, "markers")
        dst_m = read_table(spark, destination, "markers")
        if src_m is None or dst_m is None:
            raise InputError(
                f"{source if src_m is None else destination}: batches.parquet without markers.parquet "
                "(both come from the same scan: rerun it)"
            )
        write("batch_diffs", compare_batches(src_b, dst_b, dst.partitions, cfg))
        write("marker_diffs", compare_markers(src_m, dst_m, src_b, dst_b, cfg))
        src_i = read_table(spark, source, "batch_scan_issues")
        dst_i = read_table(spark, destination, "batch_scan_issues")
        if src_i is not None or dst_i is not None:
            write("scan_issues", compare_scan_issues(src_i, dst_i, cfg))
            written.append("scan_issues")
        written[:0] = ["batch_diffs", "marker_diffs"]
    if src_b is not None or dst_b is not None:
        write("txn_closure", compare_transactions(src_b, dst_b, src.partitions, dst.partitions, cfg))
        written.append("txn_closure")
    return written


def run_compare_mm2(spark: Any, source: Path, destination: Path, run_dir: Path, cfg: AuditConfig) -> Compared:
    """Mode mm2 (Spark): MirrorMaker 2's syncs and checkpoints against both clusters. A table
    whose input was not collected is written empty, so its invariants come out skipped."""
    from audit.compare.mm2_tables import (
        compare_checkpoints,
        compare_group_offsets,
        compare_partitions,
        compare_syncs,
    )
    from audit.schemas import spark_schema

    src, _ = load_frames(spark, source, "source")
    dst, _ = load_frames(spark, destination, "destination")

    def optional(table: str) -> Any:
        found = read_table(spark, source, table)
        if found is None:
            found = read_table(spark, destination, table)
        return found

    syncs = optional("mm2_offset_syncs")
    checkpoints = optional("mm2_checkpoints")
    if checkpoints is None:
        checkpoints = spark.createDataFrame([], spark_schema("mm2_checkpoints"))
    with _compare_dir(run_dir) as tmp:

        def write(name: str, df: Any) -> Any:
            path = str(tmp / f"{name}.parquet")
            df.write.mode("overwrite").parquet(path)
            return spark.read.parquet(path)

        write("mm2_partitions", compare_partitions(src.partitions, dst.partitions, syncs, cfg))
        no_syncs = spark.createDataFrame([], spark_schema("mm2_offset_syncs"))
        write("mm2_syncs", compare_syncs(no_syncs if syncs is None else syncs, cfg))
        ckpts = write("mm2_checkpoints", compare_checkpoints(checkpoints, syncs, dst.partitions, cfg))
        write(
            "mm2_group_offsets",
            compare_group_offsets(
                src.group_offsets, dst.group_offsets, dst.groups, ckpts, dst.partitions, syncs, cfg
            ),
        )
    paths = {name: run_dir / "compare" / f"{name}.parquet" for name in MM2_TABLES}
    return Compared("spark", paths, {name: spark.read.parquet(str(p)) for name, p in paths.items()})


def run_compare_local(source: Path, destination: Path, run_dir: Path, cfg: AuditConfig) -> Compared:
    """The in-process engine (``local.py``): the same tables, written as Parquet files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from audit.compare.local import compare_all

    frames = compare_all(source, destination, cfg)
    with _compare_dir(run_dir) as tmp:
        for name, df in frames.items():
            pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp / f"{name}.parquet")
    paths = {name: run_dir / "compare" / f"{name}.parquet" for name in TABLES}
    return Compared("local", paths, frames)
