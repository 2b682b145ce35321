"""The ``mirror-audit-snapshot/1`` directory: records, writer and checked reader.

A snapshot is written whole into a temporary directory and renamed into place, so a
directory with a ``manifest.json`` is complete by construction. Readers check the manifest
and every required column, and its type, before Spark sees a file, so a bad input fails
with the file and column named instead of a stack trace from deep inside a join.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from audit.errors import InputError
from audit.fsutil import atomic_directory, atomic_write_json, json_loads
from audit.schemas import (
    REQUIRED_TABLES,
    SNAPSHOT_FORMAT,
    SNAPSHOT_TABLES,
    arrow_schema,
    spark_schema,
)

Role = Literal["source", "destination"]


@dataclass(frozen=True)
class PartitionRecord:
    topic: str
    partition: int
    topic_id: str | None
    leader: int | None
    leader_epoch: int | None
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int
    max_timestamp_ms: int | None
    open_txn_first_timestamp_ms: int | None = None
    # Tiered storage (schemas.py says what each means); None: not read, tier_detail says why.
    remote_storage: bool | None = None
    local_log_start_offset: int | None = None
    local_retention_ms: int | None = None
    local_retention_bytes: int | None = None
    tier_detail: str | None = None


@dataclass(frozen=True)
class GroupRecord:
    group_id: str
    group_type: str  # consumer | classic | share | streams | unknown
    # STABLE, EMPTY, DEAD, PREPARING_REBALANCING, COMPLETING_REBALANCING, ASSIGNING,
    # RECONCILING, NOT_READY (a streams group), UNKNOWN
    state: str
    member_count: int | None  # None: the group could not be described (a streams group)


@dataclass(frozen=True)
class GroupOffsetRecord:
    group_id: str
    topic: str
    partition: int
    committed_offset: int
    committed_leader_epoch: int | None
    metadata: str | None = None


@dataclass(frozen=True)
class ShareGroupOffsetRecord:
    group_id: str
    topic: str
    partition: int
    start_offset: int
    leader_epoch: int | None
    lag: int | None


@dataclass(frozen=True)
class OpenTransactionRecord:
    side: str  # coordinator | partition
    transactional_id: str | None
    producer_id: int
    producer_epoch: int | None
    state: str | None
    topic: str | None
    partition: int | None
    start_offset: int | None
    start_timestamp_ms: int | None


@dataclass(frozen=True)
class PartitionTraitRecord:
    topic: str
    partition: int
    compacted: bool | None
    transactional_producers: int | None
    detail: str | None = None


@dataclass(frozen=True)
class Mm2PositionRecord:
    topic: str
    partition: int
    committed_offset: int | None
    record_partition: int
    record_offset: int
    timestamp_ms: int | None


@dataclass(frozen=True)
class Mm2OffsetSyncRecord:
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    record_partition: int
    record_offset: int
    timestamp_ms: int | None


@dataclass(frozen=True)
class Mm2CheckpointRecord:
    group_id: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str | None
    record_partition: int
    record_offset: int
    timestamp_ms: int | None


@dataclass(frozen=True)
class ReadRangeRecord:
    """What a records scan read of one range it planned: ``record_digest_ranges`` (mode
    mm2) and ``record_chunk_ranges`` (mode cluster-mirroring) share these columns."""

    topic: str
    partition: int
    start_offset: int
    end_offset: int
    read_to: int
    complete: bool
    isolation: str
    compacted: bool
    detail: str | None


@dataclass(frozen=True)
class RecordDigestCutRecord:
    """Where earlier scans left a partition verified (``record_digest_cuts``)."""

    topic: str
    partition: int
    src_through: int
    dst_through: int
    verified_from: int


@dataclass(frozen=True)
class Snapshot:
    """One cluster's state. ``open_transactions`` is None when it could not be collected."""

    manifest: dict[str, Any]
    partitions: tuple[PartitionRecord, ...]
    groups: tuple[GroupRecord, ...] = ()
    group_offsets: tuple[GroupOffsetRecord, ...] = ()
    open_transactions: tuple[OpenTransactionRecord, ...] | None = None
    # None when share groups' start offsets were not read (no Kafka Java client here).
    share_group_offsets: tuple[ShareGroupOffsetRecord, ...] | None = None
    # mode mm2, on the cluster that holds the topic: None when not collected here.
    mm2_offset_syncs: tuple[Mm2OffsetSyncRecord, ...] | None = None
    mm2_checkpoints: tuple[Mm2CheckpointRecord, ...] | None = None
    partition_traits: tuple[PartitionTraitRecord, ...] | None = None
    mm2_positions: tuple[Mm2PositionRecord, ...] | None = None
    # The mirror's own state per partition (records of mirror_state.MirrorPartitionRecord's
    # shape), in the snapshot of the cluster it writes to: None when not imported.
    mirror_partitions: tuple[Any, ...] | None = None


def make_manifest(
    role: Role,
    cluster_id: str | None,
    started_at: str,
    finished_at: str,
    scope: dict[str, Any],
    client: dict[str, Any],
    notes: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from audit import __version__

    return {
        "format": SNAPSHOT_FORMAT,
        "role": role,
        "cluster_id": cluster_id,
        "started_at": started_at,
        "finished_at": finished_at,
        "tool_version": __version__,
        "scope": scope,
        "client": client,
        "notes": notes or {},
    }


def write_table(path: Path, table: str, rows: tuple[Any, ...]) -> None:
    """One table of the contract into ``path`` (a directory), from its records; the file
    appears whole or not at all (written beside, then renamed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(table)
    columns = {c.name: [getattr(r, c.name) for r in rows] for c in SNAPSHOT_TABLES[table]}
    target = path / f"{table}.parquet"
    partial = path / f".{table}.parquet.partial"
    pq.write_table(pa.Table.from_pydict(columns, schema=schema), partial)
    partial.replace(target)


def write_snapshot(directory: str | Path, snap: Snapshot) -> Path:
    """Write the snapshot atomically: the directory appears only once complete."""
    target = Path(directory)
    with atomic_directory(target) as tmp:
        write_table(tmp, "partitions", snap.partitions)
        write_table(tmp, "groups", snap.groups)
        write_table(tmp, "group_offsets", snap.group_offsets)
        for table, rows in (
            ("open_transactions", snap.open_transactions),
            ("share_group_offsets", snap.share_group_offsets),
            ("mm2_offset_syncs", snap.mm2_offset_syncs),
            ("mm2_checkpoints", snap.mm2_checkpoints),
            ("partition_traits", snap.partition_traits),
            ("mm2_positions", snap.mm2_positions),
            ("mirror_partitions", snap.mirror_partitions),
        ):
            if rows is not None:
                write_table(tmp, table, rows)
        atomic_write_json(tmp / "manifest.json", snap.manifest)
    return target


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class SnapshotPair:
    """Two snapshot directories a job compares, with their manifests, read once
    (``read_pair``) and passed on: every stage after it takes the manifests from here, and
    the metadata tables (``arrow``) it reads in this process: the checks before the
    comparison and the in-process engine share one read of each file."""

    source: Path
    destination: Path
    src_manifest: dict[str, Any]
    dst_manifest: dict[str, Any]
    # The source snapshot of the newest earlier run of this pair (its history under the
    # output root), where one is there: what the source looked like last time (topic ids).
    previous_source: Path | None = None
    # The source reads (``mm2_source_reads``) the newest earlier run of this pair that kept
    # them wrote: what earlier records scans read of offsets the source may no longer hold.
    previous_source_reads: Path | None = None
    # The offset syncs as the newest earlier run of this pair that compared them wrote them
    # (``mm2_syncs``): the syncs its offset-syncs topic's cleaner may have removed since.
    previous_syncs: Path | None = None
    _read: dict[tuple[Path, str], Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def arrow(self, directory: Path, table: str) -> Any:
        """``read_arrow(directory, table)``, read once per pair: the metadata tables are
        small (a row per partition or group partition), the data-level ones are never
        read here."""
        key = (directory, table)
        if key not in self._read:
            self._read[key] = read_arrow(directory, table)
        return self._read[key]


def read_pair(source: Path, destination: Path) -> SnapshotPair:
    """Both manifests, checked to be a source's and a destination's of one pair."""
    src_manifest = read_manifest(source, "source")
    dst_manifest = read_manifest(destination, "destination")
    check_pair(source, destination, src_manifest, dst_manifest)
    return SnapshotPair(source, destination, src_manifest, dst_manifest)


def check_pair(
    source: Path, destination: Path, src_manifest: dict[str, Any], dst_manifest: dict[str, Any]
) -> None:
    """The two halves of one ``snapshot --out DIR`` (siblings in one directory) must be of
    the same snapshot: each manifest names its pair, and a crash between writing the two
    would leave a new half beside an old one. Snapshots from different places (failover
    verify's readiness source beside a later destination) are not one pair and pass."""
    src_pair, dst_pair = src_manifest.get("pair"), dst_manifest.get("pair")
    if source.parent == destination.parent and src_pair and dst_pair and src_pair != dst_pair:
        raise InputError(
            f"{source} and {destination} are not one snapshot pair (their manifests name different "
            "pairs: a snapshot that stopped between its two halves?): take the snapshot again"
        )


def read_manifest(directory: str | Path, expected_role: Role | None = None) -> dict[str, Any]:
    d = Path(directory)
    path = d / "manifest.json"
    if not d.is_dir():
        raise InputError(f"snapshot directory {d} does not exist")
    if not path.exists():
        raise InputError(f"{path} is missing: {d} is not a complete snapshot")
    try:
        manifest = json_loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != SNAPSHOT_FORMAT:
        got = manifest.get("format") if isinstance(manifest, dict) else None
        raise InputError(f"{path}: format is {got!r}, expected {SNAPSHOT_FORMAT!r}")
    role = manifest.get("role")
    if expected_role is not None and role != expected_role:
        raise InputError(f"{path}: role is {role!r} but the snapshot was given as the {expected_role}")
    _check_notes(manifest.get("notes"), path)
    return manifest


def _check_notes(notes: Any, path: Path) -> None:
    """The manifest's notes have the shape their readers take them in (the report's details,
    a records scan adding its own): an object, and its records note an object whose
    issues are objects. A crafted or damaged manifest is an input error naming the key,
    never a traceback in the middle of a run."""
    if notes is None:
        return
    if not isinstance(notes, dict):
        raise InputError(f"{path}: notes is {_json_kind(notes)}, expected an object: take the snapshot again")
    records = notes.get("records")
    if records is None:
        return
    if not isinstance(records, dict):
        raise InputError(
            f"{path}: notes.records is {_json_kind(records)}, expected an object: take the snapshot again"
        )
    issues = records.get("issues")
    if issues is not None and not (isinstance(issues, list) and all(isinstance(i, dict) for i in issues)):
        raise InputError(f"{path}: notes.records.issues is not a list of objects: take the snapshot again")
    ranges = records.get("unreadable_ranges")
    if ranges is not None and (isinstance(ranges, bool) or not isinstance(ranges, int)):
        raise InputError(
            f"{path}: notes.records.unreadable_ranges is {_json_kind(ranges)}, expected an integer: "
            "take the snapshot again"
        )


def _json_kind(value: Any) -> str:
    """What a JSON value is, as an error names it."""
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer"}
    return kinds.get(type(value), "a number" if isinstance(value, float) else "null")


def check_table(directory: str | Path, table: str) -> bool:
    """True if the table's file exists with every required column; False if an optional one is absent."""

    path = Path(directory) / f"{table}.parquet"
    if not path.exists():
        if table in REQUIRED_TABLES:
            raise InputError(f"{path} is missing from the snapshot")
        return False
    try:
        schema = _stored_schema(path)
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise InputError(f"{path} is not a readable Parquet file: {exc}") from exc
    names = set(schema.names)
    declared = arrow_schema(table)
    for column in SNAPSHOT_TABLES[table]:
        if column.name not in names and column.added_later:
            continue  # written before the column existed: it reads as nulls
        if column.name not in names:
            raise InputError(f"{path} has no column '{column.name}'")
        found, wanted = schema.field(column.name).type, declared.field(column.name).type
        if not _stands_for(found, wanted, column.nullable):
            raise InputError(
                f"{path}: column '{column.name}' is {found}, expected {wanted} ({SNAPSHOT_FORMAT}): "
                "write the file with the contract's types, or take the snapshot again"
            )
    return True


def _stored_schema(path: Path) -> Any:
    """The Arrow schema of a table's file, or of a directory of part files (Spark's)."""
    import pyarrow.parquet as pq

    if path.is_dir():  # written by Spark (the batch tables): a directory of part files
        import pyarrow.dataset as ds

        return ds.dataset(path, format="parquet").schema
    return pq.read_schema(path)


def _stored_names(path: Path) -> set[str]:
    return set(_stored_schema(path).names)


def _stands_for(found: Any, wanted: Any, nullable: bool = True) -> bool:
    """Whether a column stored as Arrow type ``found`` holds what the contract's ``wanted``
    does, so that both engines' casts keep every value: the same kind of value (any integer
    width for an integer column, any string encoding for a string one, Spark's list element
    names), or only nulls in a nullable column. A string where an offset belongs is refused
    here: the engines would otherwise cast it each its own way (Spark into a traceback, a
    numeric string silently into an offset)."""
    import pyarrow.types as pat

    if pat.is_null(found):
        return nullable
    if pat.is_dictionary(found):
        found = found.value_type
    if pat.is_integer(wanted):
        return bool(pat.is_integer(found))
    if pat.is_floating(wanted):
        return bool(pat.is_floating(found) or pat.is_integer(found))
    if pat.is_string(wanted):
        return bool(pat.is_string(found) or pat.is_large_string(found) or pat.is_string_view(found))
    if pat.is_list(wanted):
        return bool(pat.is_list(found) or pat.is_large_list(found)) and _stands_for(
            found.value_type, wanted.value_type
        )
    if pat.is_struct(wanted):
        return bool(pat.is_struct(found)) and all(
            found.get_field_index(f.name) >= 0 and _stands_for(found.field(f.name).type, f.type)
            for f in wanted
        )
    return bool(found.equals(wanted))


def read_table(spark: Any, directory: str | Path, table: str) -> Any:
    """A Spark DataFrame with exactly the contract's columns and types, or None if an
    optional table was not collected. Extra columns in the file are ignored."""
    from pyspark.sql import functions as F

    if not check_table(directory, table):
        return None
    schema = spark_schema(table)
    df = spark.read.parquet(str(Path(directory) / f"{table}.parquet"))
    present = set(df.columns)
    return df.select(
        [
            (F.col(f.name) if f.name in present else F.lit(None)).cast(f.dataType).alias(f.name)
            for f in schema.fields
        ]
    )


def read_arrow(directory: str | Path, table: str, columns: list[str] | None = None) -> Any:
    """The in-process twin of :func:`read_table`: an Arrow table with exactly the
    contract's columns and types (extra columns ignored, missing ones refused), or only
    ``columns`` of them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not check_table(directory, table):
        raise InputError(f"{Path(directory) / f'{table}.parquet'} is missing from the snapshot")
    path = Path(directory) / f"{table}.parquet"
    schema = arrow_schema(table)
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns])
    try:
        stored = _stored_names(path)
        if all(name in stored for name in schema.names):
            return pq.read_table(path, columns=schema.names).cast(schema)
        # Written before a column was added (``Column.added_later``): nulls in its place.
        found = pq.read_table(path, columns=[n for n in schema.names if n in stored])
        arrays = [
            found.column(f.name) if f.name in stored else pa.nulls(found.num_rows, f.type) for f in schema
        ]
        return pa.Table.from_arrays(arrays, names=schema.names).cast(schema)
    except Exception as exc:  # pyarrow raises several types for corrupt or mistyped files
        raise InputError(f"{path} cannot be read as the {table} table: {exc}") from exc


def read_records(directory: str | Path, table: str, record_type: type[Any]) -> list[Any]:
    """Small tables as records (tests, the report): never used for data that grows."""
    import pyarrow.parquet as pq

    if not check_table(directory, table):
        return []
    names = [f.name for f in dataclasses.fields(record_type)]
    data = pq.read_table(Path(directory) / f"{table}.parquet", columns=names).to_pylist()
    return [record_type(**row) for row in data]
