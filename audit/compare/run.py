"""The compare stage: two snapshot directories in, ``<run>/compare/*.parquet`` out."""

from __future__ import annotations

import logging
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

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


def _started_ms(manifest: dict[str, Any], directory: Path) -> int:
    raw = manifest.get("started_at")
    try:
        return int(datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError as exc:
        raise InputError(
            f"{directory / 'manifest.json'}: started_at {raw!r} is not an ISO-8601 time"
        ) from exc


def load_frames(spark: Any, directory: Path, role: Role) -> tuple[SnapshotFrames, dict[str, Any]]:
    manifest = read_manifest(directory, role)
    frames = SnapshotFrames(
        partitions=read_table(spark, directory, "partitions"),
        groups=read_table(spark, directory, "groups"),
        group_offsets=read_table(spark, directory, "group_offsets"),
        started_at_ms=_started_ms(manifest, directory),
    )
    return frames, manifest


def run_compare(
    spark: Any, source: Path, destination: Path, run_dir: Path, cfg: AuditConfig
) -> dict[str, Path]:
    """Write one comparison table per concern; returns their paths by name."""
    src, _ = load_frames(spark, source, "source")
    dst, _ = load_frames(spark, destination, "destination")
    out = run_dir / "compare"
    tmp = run_dir / ".compare.partial"
    shutil.rmtree(tmp, ignore_errors=True)

    def write(name: str, df: Any) -> Any:
        """Write a table and read it back, so tables derived from it do not recompute its joins."""
        path = str(tmp / f"{name}.parquet")
        df.write.mode("overwrite").parquet(path)
        return spark.read.parquet(path)

    partitions = write("partitions", compare_partitions(src, dst, cfg))
    group_offsets = write("group_offsets", compare_group_offsets(src, dst, cfg))
    write("topics", compare_topics(partitions, cfg))
    write("groups", compare_groups(group_offsets, partitions, cfg))
    paths = {name: out / f"{name}.parquet" for name in TABLES}
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log.info("comparison tables written to %s", out)
    return paths
