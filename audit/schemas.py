"""Every table's columns, declared once: Arrow schemas for writers, Spark schemas for jobs,
pandas dtypes for the in-process engine.

The snapshot tables follow the ``mirror-audit-snapshot/1`` contract; other tools
read these files, so a column is added here or nowhere. The comparison tables are declared
beside them (a derived column is declared here and computed in its comparison's query,
nowhere else). The module is long because it is the declaration of every table the
auditor writes, kept in one place on purpose; it holds no logic beyond the type mappings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

SNAPSHOT_FORMAT = "mirror-audit-snapshot/1"


@dataclass(frozen=True)
class Column:
    name: str
    # "string" | "int32" | "int64" | "double" | "boolean" | "ranges" (list of [start, end])
    # | "epoch_runs" (list of [start offset, leader epoch])
    type: str
    nullable: bool = True
    # Added to the contract after its first release: a file written before it lacks the
    # column and reads as if it held nulls there (the column must be nullable).
    added_later: bool = False


def _c(name: str, type_: str, nullable: bool = True, added_later: bool = False) -> Column:
    if added_later and not nullable:
        raise ValueError(f"{name}: a column added later must be nullable")
    return Column(name, type_, nullable, added_later)


# What a records scan read of one range it planned, [start_offset, read_to); ``complete``
# false where it stopped short of end_offset (``detail`` says why: refused, failed, no task).
# A scan's account of its own reading: an input like the records (never "read, empty").
_READ_RANGE = (
    _c("topic", "string", False),
    _c("partition", "int32", False),
    _c("start_offset", "int64", False),
    _c("end_offset", "int64", False),
    _c("read_to", "int64", False),
    _c("complete", "boolean", False),
    _c("isolation", "string", False),  # read_uncommitted | read_committed
    _c("compacted", "boolean", False),  # the topic's cleanup.policy includes compact
    _c("detail", "string"),
)

# Mode mm2: what records scans read of each source partition, kept from run to run
# (``mm2_source_reads``, audit/compare/mm2_reads.py): ``kind`` "read" is a range the scan read
# whole, "records" a run of consecutive offsets holding records it read there (at
# MirrorMaker 2's isolation: what it copies). Offsets read and holding no record are markers,
# aborted records or compacted away: what tells them from lost records in a gap between
# offset syncs (MM2-SKIP-1) once the source no longer holds the range.
_SOURCE_READS = (
    _c("topic", "string", False),
    _c("partition", "int32", False),
    _c("topic_id", "string"),  # the topic's id when read: evidence of another topic is not used
    _c("kind", "string", False),  # read | records
    _c("start_offset", "int64", False),
    _c("end_offset", "int64", False),  # exclusive
    _c("read_committed", "boolean", False),
)

# A partition's records matched by the aligner (audit/compare/mm2_alignment.py): why it
# could not (``fallback``: matched row by row instead), else where its range starts and
# what it found there; the aligner answers each column exactly as the row-by-row query does.
_ALIGNMENT = (
    _c("fallback", "string"),
    *(
        _c(name, "int64")
        for name in (
            "compared_src_start",
            "compared_dst_start",
            "compared_src_records",
            "compared_dst_records",
            "missing_records",
            "first_missing_offset",
            "duplicate_records",
            "first_duplicate_offset",
            "unexplained_records",
            "first_unexplained_offset",
            "order_breaks",
            "first_order_break_offset",
            "clean_src_through",
            "clean_dst_through",
        )
    ),
)

SNAPSHOT_TABLES: dict[str, tuple[Column, ...]] = {
    "partitions": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("topic_id", "string"),
        _c("leader", "int32"),
        _c("leader_epoch", "int32"),
        _c("log_start_offset", "int64", False),
        _c("high_watermark", "int64", False),
        _c("last_stable_offset", "int64", False),
        _c("max_timestamp_ms", "int64"),
        _c("open_txn_first_timestamp_ms", "int64"),
        # Tiered storage (KIP-405), from the topic's config (DescribeConfigs) and ListOffsets'
        # earliest-local spec: whether the topic keeps a remote tier, where its local log
        # starts (records below it are read from the remote tier), and how long/much the
        # brokers keep locally (local.retention.*; -2: as retention.*). Null where not read,
        # ``tier_detail`` says why: never taken as "not tiered". A topic without a remote
        # tier has its local log start at its log start, by definition.
        _c("remote_storage", "boolean", added_later=True),
        _c("local_log_start_offset", "int64", added_later=True),
        _c("local_retention_ms", "int64", added_later=True),
        _c("local_retention_bytes", "int64", added_later=True),
        _c("tier_detail", "string", added_later=True),
    ),
    "groups": (
        _c("group_id", "string", False),
        _c("group_type", "string", False),
        _c("state", "string", False),
        # Null where no client here can describe the group (a streams group).
        _c("member_count", "int32"),
    ),
    "group_offsets": (
        _c("group_id", "string", False),
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("committed_offset", "int64", False),
        _c("committed_leader_epoch", "int32"),
        _c("metadata", "string"),
    ),
    # Optional: share groups' start offsets (KIP-932: the share-partition start offset, below
    # which every record is acknowledged), read with Kafka's Java Admin where the cluster
    # lists share groups (audit/collect/metadata/java_admin.py); the groups themselves are
    # rows of ``groups`` (group_type "share"). Absent where they could not be read.
    "share_group_offsets": (
        _c("group_id", "string", False),
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("start_offset", "int64", False),
        _c("leader_epoch", "int32"),  # the share partition's, as the share coordinator stored it
        _c("lag", "int64"),  # as the broker computes it (kafka-share-groups --describe --offsets)
    ),
    # Optional: open transactions as the transaction coordinator and the partition leaders
    # describe them (kafka-python admin calls), where the cluster allows them.
    "open_transactions": (
        _c("side", "string", False),  # "coordinator" | "partition"
        _c("transactional_id", "string"),
        _c("producer_id", "int64", False),
        _c("producer_epoch", "int32"),
        _c("state", "string"),
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("start_offset", "int64"),
        _c("start_timestamp_ms", "int64"),
    ),
    # Optional, mode mm2: MirrorMaker 2's offset syncs as read from its offset-syncs topic,
    # every record kept (record_offset, timestamp_ms), so history and monotonicity show.
    "mm2_offset_syncs": (
        _c("topic", "string", False),  # the source topic (offset syncs name the upstream side)
        _c("partition", "int32", False),
        _c("upstream_offset", "int64", False),
        _c("downstream_offset", "int64", False),
        _c("record_partition", "int32", False),
        _c("record_offset", "int64", False),
        _c("timestamp_ms", "int64"),
    ),
    # Optional, mode mm2, the source's: what tells a source offset MirrorMaker 2 passed over
    # without a copy (MM2-SKIP-1) from a lost record, per source partition its offset syncs
    # name: whether its topic is compacted (cleanup.policy; a compacted-away offset has no
    # record to copy) and how many transactional producers write it (DescribeProducers:
    # active producers with a coordinator epoch, i.e. that have ended a transaction there,
    # or with one open; a transaction marker is never copied). Null where it could not be
    # read (``detail`` says why): never taken as "plain".
    "partition_traits": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("compacted", "boolean"),
        _c("transactional_producers", "int32"),
        _c("detail", "string"),
    ),
    # Optional, mode mm2: MirrorSourceConnector's committed positions, as Kafka Connect's
    # offsets topic keeps them (the offset of the last record copied per source partition;
    # null: a tombstone), every record kept in its order.
    "mm2_positions": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("committed_offset", "int64"),
        _c("record_partition", "int32", False),
        _c("record_offset", "int64", False),
        _c("timestamp_ms", "int64"),
    ),
    # Optional, mode mm2: the checkpoints topic on the target, every record kept.
    "mm2_checkpoints": (
        _c("group_id", "string", False),
        _c("topic", "string", False),  # as MM2 writes it: the replica's name on the target
        _c("partition", "int32", False),
        _c("upstream_offset", "int64", False),
        _c("downstream_offset", "int64", False),
        _c("metadata", "string"),
        _c("record_partition", "int32", False),
        _c("record_offset", "int64", False),
        _c("timestamp_ms", "int64"),
    ),
    # Optional: record batch headers, from log segment files or from Fetch responses
    # (audit/collect/segments.py, audit/collect/wire.py). One row per batch, control
    # batches included; ``file``/``position`` are null for batches read over the wire.
    "batches": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("base_offset", "int64", False),
        _c("last_offset", "int64", False),
        _c("partition_leader_epoch", "int32", False),
        _c("magic", "int32", False),
        _c("crc", "int64", False),  # the stored CRC-32C (unsigned 32 bits)
        _c("attributes", "int32", False),
        _c("compression", "string", False),  # none | gzip | snappy | lz4 | zstd
        _c("timestamp_type", "string", False),  # CreateTime | LogAppendTime
        _c("is_transactional", "boolean", False),
        _c("is_control", "boolean", False),
        _c("producer_id", "int64", False),
        _c("producer_epoch", "int32", False),
        _c("base_sequence", "int32", False),
        _c("record_count", "int32", False),
        _c("size_bytes", "int32", False),
        _c("first_timestamp_ms", "int64", False),
        _c("max_timestamp_ms", "int64", False),
        _c("crc_valid", "boolean"),  # deep scans only: the CRC-32C recomputed over the bytes
        _c("control_type", "int32"),  # control batches: 0 ABORT, 1 COMMIT, other codes kept
        _c("control_version", "int32"),
        _c("coordinator_epoch", "int32"),
        _c("file", "string"),
        _c("position", "int64"),
    ),
    # Optional: the control records (transaction markers), one per control batch.
    "markers": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("offset", "int64", False),
        _c("marker", "string"),  # ABORT | COMMIT | PID_RESET | UNKNOWN(n); null if undecodable
        _c("control_type", "int32"),
        _c("control_version", "int32"),
        _c("coordinator_epoch", "int32"),
        _c("producer_id", "int64", False),
        _c("producer_epoch", "int32", False),
        _c("partition_leader_epoch", "int32", False),
        _c("timestamp_ms", "int64", False),
        _c("file", "string"),
        _c("position", "int64"),
    ),
    # Optional: what a batch scan could not read (truncated, garbage, CRC mismatch, old
    # format, empty segment, missing index, fetch errors), with file and byte position.
    "batch_scan_issues": (
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("file", "string"),
        _c("position", "int64"),
        _c("kind", "string", False),
        _c("severity", "string", False),  # error | warn | info
        _c("detail", "string", False),
        # Where the bytes the issue covers end (exclusive): every byte of a segment is in
        # a batch row or in an issue's [position, end_position). Null for issues not
        # about bytes (a missing index, a failed fetch).
        _c("end_position", "int64", added_later=True),
    ),
    # Optional: record-level range checksums (audit/collect/records.py), one row per chunk
    # of offsets [chunk_start, chunk_end), aligned on multiples of the chunk size and
    # clipped to the range verified; the same chunks on both sides of a run.
    "record_chunks": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("chunk_start", "int64", False),
        _c("chunk_end", "int64", False),
        _c("record_count", "int64", False),
        _c("first_offset", "int64"),
        _c("last_offset", "int64"),
        _c("checksum", "string", False),  # xxHash3-128 of the framed records in offset order
        _c("min_record_epoch", "int32"),
        _c("max_record_epoch", "int32"),
        # Where the record leader epoch changes: (first offset, epoch) per run of equal
        # epochs, so two chunks holding the same offsets agree on every offset's epoch
        # exactly when their runs are equal.
        _c("epoch_runs", "epoch_runs", False),
        _c("gap_count", "int64", False),  # offsets in the chunk with no record
        _c("gaps_checksum", "string", False),  # xxHash3-64 of every gap range
        _c("gaps", "ranges"),  # the first 100 gap ranges, [start, end] inclusive
        _c("gaps_truncated", "boolean", False),
        _c("isolation", "string", False),  # read_uncommitted | read_committed
        _c("compacted", "boolean", False),  # the topic's cleanup.policy includes compact
    ),
    # Optional, in the destination's snapshot: each mismatching chunk narrowed to its first
    # divergent record by re-reading both clusters (at most records.narrow_max_chunks).
    "record_divergences": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("chunk_start", "int64", False),
        _c("chunk_end", "int64", False),
        _c("offset", "int64"),  # null: no divergent record found (see kind)
        _c("kind", "string", False),
        _c("source_record", "string"),  # abbreviated: key, value (48 bytes), timestamp, headers
        _c("destination_record", "string"),
        _c("detail", "string"),
    ),
    # Optional, mode mm2: one row per record read by a records scan, its content without its
    # offset (MirrorMaker 2 copies content, not offsets), so a source record and its copy on
    # the replica compare equal (audit/compare/mm2_records.py).
    "record_digests": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("offset", "int64", False),
        # xxHash3-64 of the framed key, value, headers in order and timestamp (signed).
        _c("digest", "int64", False),
    ),
    # Optional, beside record_digests: what the scan read of each partition (_READ_RANGE).
    "record_digest_ranges": _READ_RANGE,
    # Optional, beside record_digests: the runs of consecutive offsets holding records the
    # scan read (audit/collect/records/offset_runs.py), [start_offset, end_offset): what
    # MM2-SKIP-1 counts a gap's records from (mm2_source_reads).
    "record_digest_runs": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("start_offset", "int64", False),
        _c("end_offset", "int64", False),
    ),
    # Optional, beside record_chunks (mode cluster-mirroring): what the scan read of each
    # range it planned (_READ_RANGE); a range not read whole left no chunks on that side.
    "record_chunk_ranges": _READ_RANGE,
    # Optional, mode mm2, in the source snapshot: per source partition the scan read, its
    # records matched as they were read (audit/collect/records/digests.py), over the range
    # the scan expected the comparison to judge (the first nine columns after partition:
    # mm2_record_ranges as the scan planned its reads); a comparison takes the tally where
    # its own range is that one, and otherwise matches the partition's digests, which the
    # scan kept (``digests_kept``) wherever its tally may not serve: a read that stopped
    # short, a fallback, records.mm2_keep_digests. No range (no offset sync within the
    # reads): the tally columns are null.
    "record_alignments": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("remote_topic", "string"),
        _c("end_u", "int64"),
        _c("end_d", "int64"),
        _c("src_read_start", "int64"),
        _c("dst_read_start", "int64"),
        _c("first_sync_u", "int64"),
        _c("first_sync_d", "int64"),
        _c("cut_u", "int64"),
        _c("cut_d", "int64"),
        _c("digests_kept", "boolean", False),
        *_ALIGNMENT,
    ),
    # Optional, mode mm2, in the source snapshot: per source partition, where earlier nightly
    # scans left every record verified (audit/collect/records/digest_history.py): the
    # source records through ``src_through`` matched one to one to the replica's through
    # ``dst_through``, verified since ``verified_from``. This scan judged from past them.
    "record_digest_cuts": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("src_through", "int64", False),
        _c("dst_through", "int64", False),
        _c("verified_from", "int64", False),
    ),
    # Optional, in the snapshot of the cluster a mirror writes to: the mirror's own state per
    # partition (KIP-1279's DescribeClusterMirrors), imported from JSON
    # (audit/collect/metadata/mirror_state.py); -1 in the source is null here.
    "mirror_partitions": (
        _c("mirror", "string"),
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("state", "string", False),
        _c("source_offset", "int64"),  # the source's high watermark as the mirror saw it
        _c("destination_offset", "int64"),  # the destination's LEO
        _c("last_mirror_epoch", "int32"),
        _c("last_mirror_offset", "int64"),  # where mirroring stopped: the destination's LEO then
        _c("error_message", "string"),
    ),
}

REQUIRED_TABLES = ("partitions", "groups", "group_offsets")


def _side(prefix: str, table: str, skip: tuple[str, ...] = ()) -> tuple[Column, ...]:
    """A snapshot table's columns as one side of a comparison: ``src_topic_id`` and so on."""
    return tuple(_c(prefix + c.name, c.type) for c in SNAPSHOT_TABLES[table] if c.name not in skip)


def _pick(prefix: str, table: str, names: tuple[str, ...]) -> tuple[Column, ...]:
    """Some of a snapshot table's columns, in the order given, under a side's prefix."""
    by_name = {c.name: c for c in SNAPSHOT_TABLES[table]}
    return tuple(_c(prefix + n, by_name[n].type) for n in names)


_PARTITION_KEY = ("topic", "partition")
_GROUP_OFFSET_KEY = ("group_id", "topic", "partition")
# What the batch comparison keeps of each side's batch (compare/batches.py): the fields a
# byte-for-byte copy keeps, then the ones shown beside them, then the kind of batch.
BATCH_SIDE = (
    "last_offset",
    "crc",
    "producer_id",
    "producer_epoch",
    "attributes",
    "partition_leader_epoch",
    "record_count",
    "size_bytes",
    "base_sequence",
    "file",
    "position",
    "is_control",
    "is_transactional",
    "compression",
    "control_type",
)
MARKER_SIDE = (
    "marker",
    "control_type",
    "coordinator_epoch",
    "producer_id",
    "producer_epoch",
    "file",
    "position",
)
CHUNK_SIDE = (
    "record_count",
    "first_offset",
    "last_offset",
    "checksum",
    "min_record_epoch",
    "max_record_epoch",
    "epoch_runs",
    "gap_count",
    "gaps_checksum",
    "compacted",
)

# The comparison tables (``<run>/compare/*.parquet``): both engines cast their results to
# these columns, in this order, so the files are the same whoever computed them. A derived
# column is declared here and computed in its comparison's definition (audit/compare/),
# nowhere else.
COMPARISON_TABLES: dict[str, tuple[Column, ...]] = {
    "partitions": (
        _c("topic", "string"),
        _c("partition", "int32"),
        *_side("src_", "partitions", _PARTITION_KEY),
        _c("src_present", "boolean"),
        *_side("dst_", "partitions", _PARTITION_KEY),
        _c("dst_present", "boolean"),
        _c("in_scope", "boolean"),
        _c("lag_records", "int64"),
        _c("lag_seconds", "double"),
        _c("epoch_headroom", "int32"),
        _c("src_retained_records", "int64"),
        _c("backlog_within_half_retention", "boolean"),
        _c("src_open_txn", "boolean"),
        _c("open_txn_age_seconds", "double"),
        _c("streams_internal_topic", "boolean"),
        # The mirror's state where it was collected (mirror_partitions): after a stop, the
        # destination holds the stop's control records past the last mirrored offset.
        _c("mirror_state", "string"),
        _c("last_mirror_offset", "int64"),
        _c("last_mirror_epoch", "int32"),
        _c("src_open_txn_count", "int64"),
        _c("stop_control_records", "int64"),
        _c("stop_control_bound", "int64"),
        _c("data_lag_records", "int64"),
        # Tiered storage: CM-TIER-1 fails (or warns, mirror.tiered_destination) a tiered
        # destination; CM-TIER-2 warns where the destination's end is below the source's
        # local log start: the records between them the mirror reads from the remote tier.
        _c("tiered_destination_fails", "boolean"),
        _c("remote_tier_records", "int64"),
    ),
    "topics": (
        _c("topic", "string"),
        _c("in_scope", "boolean"),
        _c("src_partition_count", "int64"),
        _c("dst_partition_count", "int64"),
        _c("src_topic_id", "string"),
        _c("dst_topic_id", "string"),
        _c("dst_present", "boolean"),
        _c("topic_mirrored", "boolean"),
    ),
    "group_offsets": (
        _c("group_id", "string"),
        _c("topic", "string"),
        _c("partition", "int32"),
        *_side("src_", "group_offsets", _GROUP_OFFSET_KEY),
        *_side("dst_", "group_offsets", _GROUP_OFFSET_KEY),
        _c("dst_log_start_offset", "int64"),
        _c("dst_high_watermark", "int64"),
        _c("dst_leader_epoch", "int32"),
        *_side("src_", "groups", ("group_id",)),
        *_side("dst_", "groups", ("group_id",)),
        _c("topic_in_scope", "boolean"),
        _c("group_in_scope", "boolean"),
        _c("group_excluded", "boolean"),
        _c("dst_active", "boolean"),
        _c("dst_partition_known", "boolean"),
        _c("expected_offset", "int64"),
        _c("sync_delta", "int64"),
        _c("sync_behind", "int64"),
        _c("dst_offset_in_range", "boolean"),
        _c("commit_epoch_headroom", "int32"),
        _c("sync_candidate", "boolean"),
        _c("src_log_start_offset", "int64"),
        _c("unseen_records", "int64"),
    ),
    "groups": (
        _c("group_id", "string"),
        _c("group_in_scope", "boolean"),
        _c("group_excluded", "boolean"),
        _c("dst_active", "boolean"),
        _c("src_group_type", "string"),
        _c("src_state", "string"),
        _c("dst_state", "string"),
        _c("dst_member_count", "int32"),
        _c("src_committed_partitions", "int64"),
        _c("dst_committed_partitions", "int64"),
        # Null for a share group whose start offsets a side could not give.
        _c("offsets_compared", "boolean"),
        _c("streams_application", "boolean"),
        _c("classification", "string"),
        _c("excluded_but_synced", "boolean"),
    ),
    "mm2_partitions": (
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("remote_topic", "string"),
        _c("src_log_start_offset", "int64"),
        _c("src_high_watermark", "int64"),
        _c("src_last_stable_offset", "int64"),
        _c("in_scope", "boolean"),
        _c("dst_log_start_offset", "int64"),
        _c("dst_high_watermark", "int64"),
        _c("dst_present", "boolean"),
        _c("sync_upstream_offset", "int64"),
        _c("sync_downstream_offset", "int64"),
        _c("has_sync", "boolean"),
        _c("unreplicated_records", "int64"),
        _c("fully_replicated", "boolean"),
        _c("only_mirror_writes", "boolean"),
        _c("src_quiet", "boolean"),
        # MM2-SKIP-2: the source topic's id now and as the newest earlier run saw it; a
        # different one means the topic was deleted and recreated under the mirror.
        _c("src_topic_id", "string"),
        _c("previous_src_topic_id", "string"),
        _c("recreated", "boolean"),
    ),
    # Mode mm2, from a records scan of both sides: per source partition, its records
    # matched to their copies on the replica by content over the compared range.
    "mm2_record_partitions": (
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("remote_topic", "string"),
        _c("in_scope", "boolean"),
        _c("src_log_start_offset", "int64"),
        _c("src_high_watermark", "int64"),
        _c("dst_log_start_offset", "int64"),
        _c("dst_high_watermark", "int64"),
        _c("dst_present", "boolean"),
        _c("compacted", "boolean"),
        _c("src_read_start", "int64"),
        _c("src_read_end", "int64"),
        _c("dst_read_start", "int64"),
        _c("dst_read_end", "int64"),
        # Every range of the side read to its end; false where a read stopped short (its
        # detail says why); a range contradicting itself leaves the partition unjudged.
        _c("src_read_whole", "boolean"),
        _c("dst_read_whole", "boolean"),
        _c("read_impossible", "boolean"),
        _c("src_read_detail", "string"),
        _c("dst_read_detail", "string"),
        _c("sync_upstream_offset", "int64"),
        _c("sync_downstream_offset", "int64"),
        _c("compared_src_start", "int64"),
        _c("compared_src_end", "int64"),
        _c("compared_dst_start", "int64"),
        _c("compared_dst_end", "int64"),
        _c("compared_src_records", "int64"),
        _c("compared_dst_records", "int64"),
        _c("verified_src_offsets", "int64"),  # retained, verified by earlier runs (incremental)
        _c("uncompared_src_offsets", "int64"),
        _c("missing_records", "int64"),
        _c("first_missing_offset", "int64"),
        _c("unexplained_records", "int64"),
        _c("first_unexplained_offset", "int64"),
        _c("duplicate_records", "int64"),
        _c("first_duplicate_offset", "int64"),
        _c("order_breaks", "int64"),
        _c("first_order_break_offset", "int64"),
        # Where the next incremental run judges from (audit/collect/records/digest_history.py).
        _c("clean_src_through", "int64"),
        _c("clean_dst_through", "int64"),
        _c("verified_from", "int64"),
        # How the range's records were matched: "aligned" as they streamed, or "row by row:"
        # and why the aligner could not (audit/compare/mm2_alignment.py); null without a range.
        _c("matching", "string"),
        _c("none_missing", "boolean"),
        _c("none_unexplained", "boolean"),
        _c("no_duplicates", "boolean"),
        _c("in_order", "boolean"),
        _c("duplicates_fail", "boolean"),
    ),
    "mm2_source_reads": _SOURCE_READS,
    "mm2_syncs": (
        *_side("", "mm2_offset_syncs"),
        # Read by an earlier run and cleaned from the offset-syncs topic since: the row as it
        # was computed then, kept while its gap is lost or unknown.
        _c("carried", "boolean"),
        _c("src_topic_id", "string"),
        _c("in_scope", "boolean"),
        _c("prev_upstream_offset", "int64"),
        _c("prev_downstream_offset", "int64"),
        _c("monotonic", "boolean"),
        # MM2-SKIP-1: the source offsets between the previous sync and this one that have no
        # copy, [skipped_from_offset, upstream_offset): (u2 - u1) - (d2 - d1) where positive.
        _c("prev_timestamp_ms", "int64"),
        _c("skipped_records", "int64"),
        _c("skipped_from_offset", "int64"),
        _c("src_log_start_offset", "int64"),
        _c("src_high_watermark", "int64"),
        _c("compacted", "boolean"),
        _c("transactional_producers", "int32"),
        # Whether records scans (this run's or kept from earlier runs: mm2_source_reads) read
        # every offset of the gap, so that its records are counted, not inferred.
        _c("gap_scanned", "boolean"),
        # Of the skipped offsets, those no marker, aborted record or compaction explains:
        # lost. Null where that cannot be told (its cause says why): never 0 for unknown.
        _c("lost_records", "int64"),
        # The sync names an upstream offset past the source partition's end: the topic was
        # truncated or deleted and recreated under the mirror.
        _c("past_source_end", "boolean"),
        # Its topic is in readiness.accept_lost: a loss warns instead of failing.
        _c("loss_accepted", "boolean"),
    ),
    "mm2_positions": (
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("in_scope", "boolean"),
        _c("committed_offset", "int64"),
        _c("timestamp_ms", "int64"),
        _c("next_offset", "int64"),
        _c("src_log_start_offset", "int64"),
        _c("src_high_watermark", "int64"),
        _c("margin_records", "int64"),
        # The pace the source's log start moved at between the newest earlier run and this
        # one (records a second retention deleted), and the margin at that pace: null where
        # it did not move or there was no earlier run (unknown, never taken as safe).
        _c("log_start_rate", "double"),
        _c("margin_seconds", "double"),
        _c("below_log_start", "boolean"),
        _c("past_end", "boolean"),
        _c("behind", "boolean"),
        # MM2-TIER-1: the next offset below the source's local log start (tiered storage):
        # the records before the local log, which MirrorMaker 2 reads from the remote tier,
        # and what the source keeps locally.
        _c("src_remote_storage", "boolean"),
        _c("src_local_log_start_offset", "int64"),
        _c("src_local_retention_ms", "int64"),
        _c("remote_tier_records", "int64"),
    ),
    "mm2_checkpoints": (
        _c("group_id", "string"),
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("record_partition", "int32"),
        _c("record_offset", "int64"),
        _c("upstream_offset", "int64"),
        _c("downstream_offset", "int64"),
        _c("metadata", "string"),
        _c("timestamp_ms", "int64"),
        _c("source_topic", "string"),
        _c("in_scope", "boolean"),
        _c("prev_upstream_offset", "int64"),
        _c("prev_downstream_offset", "int64"),
        _c("not_backwards", "boolean"),
        _c("is_latest", "boolean"),
        _c("dst_log_start_offset", "int64"),
        _c("dst_high_watermark", "int64"),
        _c("dst_partition_known", "boolean"),
        _c("in_target_range", "boolean"),
        _c("sync_upstream_offset", "int64"),
        _c("sync_downstream_offset", "int64"),
        _c("max_downstream_offset", "int64"),
        _c("over_translated", "boolean"),
    ),
    "mm2_group_offsets": (
        _c("group_id", "string"),
        _c("remote_topic", "string"),
        _c("partition", "int32"),
        _c("topic", "string"),
        _c("src_committed_offset", "int64"),
        _c("first_sync_upstream_offset", "int64"),
        _c("in_scope", "boolean"),
        _c("mirrored", "boolean"),
        _c("ckpt_upstream_offset", "int64"),
        _c("ckpt_downstream_offset", "int64"),
        _c("ckpt_timestamp_ms", "int64"),
        _c("ckpt_max_downstream_offset", "int64"),
        _c("dst_committed_offset", "int64"),
        _c("dst_log_start_offset", "int64"),
        _c("dst_high_watermark", "int64"),
        _c("dst_state", "string"),
        _c("dst_member_count", "int32"),
        _c("dst_active", "boolean"),
        _c("has_checkpoint", "boolean"),
        _c("staleness_records", "int64"),
        _c("fresh", "boolean"),
        _c("reprocess_records", "int64"),
        _c("skip_records", "int64"),
        _c("sync_expected", "boolean"),
        _c("synced_matches", "boolean"),
        _c("dst_offset_in_range", "boolean"),
    ),
    # A mirror's state per partition, judged after a stop (CM-FAILOVER-1).
    "mirror_states": (
        *_side("", "mirror_partitions"),
        _c("in_scope", "boolean"),
        _c("src_high_watermark", "int64"),
        _c("src_leader_epoch", "int32"),
        _c("dst_high_watermark", "int64"),
        _c("dst_last_stable_offset", "int64"),
        _c("dst_leader_epoch", "int32"),
        _c("stop_control_bound", "int64"),
        _c("stop_control_records", "int64"),
        _c("stopped", "boolean"),
        _c("failed", "boolean"),
        _c("stop_markers", "int64"),
        _c("control_records_ok", "boolean"),
        _c("dst_transactions_closed", "boolean"),
        _c("epoch_bumped", "boolean"),
    ),
    # failover verify: predicted against realized, per partition and per group partition.
    "failover_partitions": (
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("in_scope", "boolean"),
        _c("predicted_loss_records", "int64"),
        _c("mirror_state", "string"),
        _c("last_mirror_offset", "int64"),
        _c("source_offset_at_stop", "int64"),
        _c("source_offset_from", "string"),
        _c("readiness_src_high_watermark", "int64"),
        _c("readiness_dst_high_watermark", "int64"),
        _c("realized_loss_records", "int64"),
        _c("loss_within_prediction", "boolean"),
    ),
    "failover_groups": (
        _c("group_id", "string"),
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("in_scope", "boolean"),
        _c("src_committed_offset", "int64"),
        _c("resume_offset", "int64"),
        _c("dst_log_start_offset", "int64"),
        _c("dst_high_watermark", "int64"),
        _c("mirrored_end", "int64"),
        _c("resume_in_range", "boolean"),
        _c("skipped_records", "int64"),
        _c("reprocessed_records", "int64"),
        _c("unseen_records", "int64"),
    ),
    # failback readiness: what mirroring back would truncate on the old source.
    "failback_partitions": (
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("in_scope", "boolean"),
        _c("mirror_state", "string"),
        _c("last_mirror_offset", "int64"),
        _c("last_mirror_epoch", "int32"),
        _c("src_log_start_offset", "int64"),
        _c("src_high_watermark", "int64"),
        _c("src_last_stable_offset", "int64"),
        _c("truncate_records", "int64"),
        _c("src_open_txn", "boolean"),
        _c("groups_committed_past", "int64"),
    ),
    "failback_groups": (
        _c("group_id", "string"),
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("in_scope", "boolean"),
        _c("src_committed_offset", "int64"),
        _c("mirror_state", "string"),
        _c("last_mirror_offset", "int64"),
        _c("committed_past_truncation", "boolean"),
        _c("records_past_truncation", "int64"),
    ),
    # Batch and record level (Spark only: a row per batch, marker or chunk).
    "batch_diffs": (
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("base_offset", "int64"),
        *_pick("src_", "batches", BATCH_SIDE),
        _c("src_present", "boolean"),
        *_pick("dst_", "batches", BATCH_SIDE),
        _c("dst_present", "boolean"),
        _c("range_start", "int64"),
        _c("range_end", "int64"),
        _c("dst_leader_epoch", "int32"),
        _c("in_scope", "boolean"),
        _c("differing_fields", "string"),
        _c("batch_status", "string"),
        _c("batches_identical", "boolean"),
        _c("dst_epoch_within_dle", "boolean"),
        _c("epochs_equal", "boolean"),
        _c("epochs_must_match", "boolean"),
        # A tiered partition whose scan read the local log only: the remote tier's offsets,
        # uncompared (an unchecked row; compare/batches.py uncompared_partitions).
        _c("remote_tier_unread", "boolean"),
    ),
    "marker_diffs": (
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("offset", "int64"),
        *_pick("src_", "markers", MARKER_SIDE),
        _c("src_present", "boolean"),
        *_pick("dst_", "markers", MARKER_SIDE),
        _c("dst_present", "boolean"),
        _c("in_scope", "boolean"),
        _c("marker_status", "string"),
        _c("markers_match", "boolean"),
        # A partition not wholly compared (its markers unchecked): its remote tier unread
        # (compare/batches.py uncompared_partitions).
        _c("remote_tier_unread", "boolean"),
    ),
    "txn_closure": (
        _c("side", "string"),
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("base_offset", "int64"),
        _c("last_offset", "int64"),
        _c("producer_id", "int64"),
        _c("producer_epoch", "int32"),
        _c("is_control", "boolean"),
        _c("control_type", "int32"),
        _c("closing_offset", "int64"),
        _c("closes_twice", "boolean"),
        _c("last_stable_offset", "int64"),
        _c("in_scope", "boolean"),
        _c("unclosed_below_lso", "boolean"),
    ),
    # CM-EPOCH-3 where the destination's batches were read: each commit the sync moved up to
    # the destination's log start, and the epoch of the batch holding that offset.
    "commit_epochs": (
        _c("group_id", "string"),
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("src_committed_offset", "int64"),
        _c("dst_committed_offset", "int64"),
        _c("dst_committed_leader_epoch", "int32"),
        _c("batch_base_offset", "int64"),
        _c("batch_leader_epoch", "int32"),
        _c("in_scope", "boolean"),
        _c("epoch_at_offset_matches", "boolean"),
    ),
    "scan_issues": (
        *_side("", "batch_scan_issues"),
        _c("side", "string"),
        _c("in_scope", "boolean"),
    ),
    "record_chunk_diffs": (
        _c("topic", "string"),
        _c("partition", "int32"),
        _c("chunk_start", "int64"),
        _c("chunk_end", "int64"),
        *_pick("src_", "record_chunks", CHUNK_SIDE),
        _c("src_present", "boolean"),
        *_pick("dst_", "record_chunks", CHUNK_SIDE),
        _c("dst_present", "boolean"),
        # What the scan said it read of the chunk's range on each side (record_chunk_ranges):
        # a row of a range not read whole on a side (or with no account, or an impossible
        # one) is one row for the whole range, its statuses null: unchecked, never judged.
        _c("src_read_whole", "boolean"),
        _c("dst_read_whole", "boolean"),
        _c("read_impossible", "boolean"),
        _c("src_read_detail", "string"),
        _c("dst_read_detail", "string"),
        _c("divergence_offset", "int64"),
        _c("divergence_kind", "string"),
        _c("source_record", "string"),
        _c("destination_record", "string"),
        _c("dst_leader_epoch", "int32"),
        _c("compacted", "boolean"),
        _c("in_scope", "boolean"),
        _c("checksums_equal", "boolean"),
        _c("gaps_equal", "boolean"),
        _c("chunk_status", "string"),
        _c("dst_epoch_within_dle", "boolean"),
        _c("epochs_equal", "boolean"),
        _c("epochs_must_match", "boolean"),
    ),
}

# Each comparison table's format version, written beside the tables of a run
# (``<run>/compare/formats.json``): raised when a column is renamed, removed or changes
# meaning, so that a later run reading this one (``failover verify --before``) reads it where
# the columns it needs are there and otherwise refuses it naming both versions. A table not
# listed is at version 1; a run written before versions were recorded is version 0.
COMPARISON_FORMATS: dict[str, int] = {
    # 2: remote_tier_unread, and a row per partition not wholly compared (tiered storage).
    "batch_diffs": 2,
    "marker_diffs": 2,
}
COMPARISON_FORMATS_FILE = "formats.json"


def comparison_format(table: str) -> int:
    """The format version this version of the tool writes ``table`` in."""
    return COMPARISON_FORMATS.get(table, 1)


# What the comparisons join besides the snapshots: the verdicts on names that Python
# evaluates once (scope, Kafka Streams naming, MirrorMaker 2's replica names) and the run's
# parameters, as small tables both engines register.
# The columns of mm2_syncs a later run reads back (``previous_syncs``), declared there once.
_CARRIED_SYNC = frozenset(
    (
        *(c.name for c in SNAPSHOT_TABLES["mm2_offset_syncs"]),
        "prev_upstream_offset",
        "prev_downstream_offset",
        "prev_timestamp_ms",
        "lost_records",
        "src_topic_id",
    )
)

AUX_TABLES: dict[str, tuple[Column, ...]] = {
    # Mode mm2, a step of mm2_record_partitions: per partition with a compared range, its
    # records matched as they stream by the aligner (audit/compare/mm2_alignment.py): the
    # tally's columns, or why the partition is matched row by row instead (``fallback``).
    "mm2_record_alignments": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        *_ALIGNMENT,
        # The partition cannot be matched at all: the scan matched another range and kept
        # none of its digests (``fallback`` says so); its rows are unchecked.
        _c("digests_missing", "boolean"),
    ),
    "topic_scope": (
        _c("topic", "string", False),
        _c("in_scope", "boolean", False),
        _c("streams_internal", "boolean", False),
    ),
    "group_scope": (
        _c("group_id", "string", False),
        _c("in_scope", "boolean", False),
        _c("excluded", "boolean", False),
    ),
    # The source's partitions as the newest earlier run of the pair saw them: the topic id
    # (MM2-SKIP-2) and the log start when that snapshot began (the pace retention deletes
    # at, MM2-POS-1's margin in time).
    "previous_partitions": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("topic_id", "string"),
        _c("log_start_offset", "int64", False),
        _c("snapshot_at_ms", "int64", False),
        _c("snapshot", "string", False),
    ),
    # mm2_syncs as the newest earlier run of the pair wrote it: the columns that carry a gap
    # whose syncs the offset-syncs topic's cleaner has removed since.
    "previous_syncs": tuple(c for c in COMPARISON_TABLES["mm2_syncs"] if c.name in _CARRIED_SYNC),
    # mm2_source_reads as the newest earlier run of the pair that kept them wrote it.
    "previous_source_reads": _SOURCE_READS,
    # readiness.accept_lost: the source topics whose known loss (MM2-SKIP-1) is accepted.
    "accepted_loss": (_c("topic", "string", False),),
    # Mode mm2: a source topic and its replica's name on the target, both ways.
    "topic_names": (_c("topic", "string"), _c("remote_topic", "string")),
    # Mode mm2, a nightly's: the first missing record of the partitions MM2-DATA-1 fails on,
    # fetched from the source (audit/collect/records/first_missing.py).
    "mm2_first_missing": (
        _c("topic", "string", False),
        _c("partition", "int32", False),
        _c("offset", "int64", False),
        _c("missing_records", "int64"),
        _c("source_record", "string"),  # abbreviated: key, value (48 bytes), timestamp, headers
        _c("detail", "string"),  # why it was not fetched
    ),
    "run_params": (
        _c("src_started_at_ms", "int64", False),
        _c("preserves_topic_ids", "boolean", False),
        _c("preserves_batch_epochs", "boolean", False),
        _c("sync_group_offsets", "boolean", False),
        _c("dst_markers_collected", "boolean", False),
        _c("src_share_offsets_read", "boolean", False),
        _c("dst_share_offsets_read", "boolean", False),
        _c("mm2_exactly_once", "boolean", False),
        _c("mm2_read_committed", "boolean", False),
        _c("tiered_destination_fails", "boolean", False),  # mirror.tiered_destination: fail
    ),
}


TableKind = Literal["snapshot", "comparison"]


def columns(table: str, kind: TableKind = "snapshot") -> tuple[Column, ...]:
    """The declared columns of a table: a snapshot table or an auxiliary one (``kind``
    "snapshot"), or a comparison table (some share a snapshot table's name)."""
    if kind == "comparison":
        return COMPARISON_TABLES[table]
    return SNAPSHOT_TABLES[table] if table in SNAPSHOT_TABLES else AUX_TABLES[table]


def row_of(table: str, **values: Any) -> tuple[Any, ...]:
    """A row of a snapshot or auxiliary table as a tuple in its declared column order, None
    where a column is not given: what ``Tables.put`` takes (tests and benchmarks build
    their tables from these)."""
    return tuple(values.get(c.name) for c in columns(table))


def arrow_schema(table: str, kind: TableKind = "snapshot") -> Any:
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "double": pa.float64(),
        "boolean": pa.bool_(),
        "ranges": pa.list_(pa.struct([("start", pa.int64()), ("end", pa.int64())])),
        "epoch_runs": pa.list_(pa.struct([("start", pa.int64()), ("epoch", pa.int32())])),
    }
    return pa.schema([pa.field(c.name, types[c.type], nullable=c.nullable) for c in columns(table, kind)])


def spark_schema(table: str, kind: TableKind = "snapshot") -> Any:
    from pyspark.sql import types as T

    types = {
        "string": T.StringType(),
        "int32": T.IntegerType(),
        "int64": T.LongType(),
        "double": T.DoubleType(),
        "boolean": T.BooleanType(),
        "ranges": T.ArrayType(
            T.StructType([T.StructField("start", T.LongType()), T.StructField("end", T.LongType())])
        ),
        "epoch_runs": T.ArrayType(
            T.StructType([T.StructField("start", T.LongType()), T.StructField("epoch", T.IntegerType())])
        ),
    }
    return T.StructType([T.StructField(c.name, types[c.type], c.nullable) for c in columns(table, kind)])


def pandas_dtype(type_: str) -> Any:
    """The nullable pandas dtype of a column type: missing values stay missing (``<NA>``),
    never NaN in a float column, so integer offsets keep their type and Spark's null
    semantics carry over to the in-process engine."""
    import pandas as pd

    return {
        # Python storage: merges of empty Arrow-backed string columns fail in pandas 3.
        "string": pd.StringDtype("python"),
        "int32": pd.Int32Dtype(),
        "int64": pd.Int64Dtype(),
        "double": pd.Float64Dtype(),
        "boolean": pd.BooleanDtype(),
        "ranges": object,
        "epoch_runs": object,
    }[type_]


def pandas_types_mapper() -> Any:
    """For ``pyarrow.Table.to_pandas(types_mapper=...)``: Arrow types to nullable pandas dtypes."""
    import pyarrow as pa

    arrow = {
        pa.string(): "string",
        pa.large_string(): "string",
        pa.int32(): "int32",
        pa.int64(): "int64",
        pa.float64(): "double",
        pa.bool_(): "boolean",
    }
    return lambda t: pandas_dtype(arrow[t]) if t in arrow else None
