"""Confluent Cluster Linking's mirror topic state, read into the mirror state KIP-1279's
checks measure a failover against (``mirror_state.MirrorPartitionRecord``).

Cluster Linking keeps offsets identical, like KIP-1279, and reports per mirror topic its
status and per partition how far it has copied. Two documented JSON shapes are read (field
names as Confluent's REST API v3 specification and the ``confluent`` CLI's source spell
them):

- the REST API's mirror topics (``GET /kafka/v3/clusters/{id}/links/{link}/mirrors``, or
  ``.../links/-/mirrors``; one topic: ``.../mirrors/{topic}``): ``{"kind":
  "KafkaMirrorDataList", "data": [{"link_name", "mirror_topic_name", "source_topic_name",
  "num_partitions", "mirror_lags": [{"partition", "lag", "last_source_fetch_offset"}],
  "mirror_status", "mirror_topic_error", "state_time_ms"}]}``, or one such object;
- ``confluent kafka mirror describe TOPIC --link LINK -o json``: a row per partition,
  ``{"link_name", "mirror_topic_name", "source_topic_name", "mirror_status",
  "mirror_topic_error", "status_time_ms", "partition", "partition_mirror_lag",
  "last_source_fetch_offset"}``; ``confluent kafka mirror list -o json`` rows (a row per
  topic, ``num_partition``, no per-partition offsets) give the states alone.

What maps onto KIP-1279's fields:

- the status onto a state (``STATES`` below): ACTIVE is MIRRORING, STOPPED is STOPPED (a
  promoted or failed-over mirror topic), PAUSED and LINK_PAUSED are PAUSED, PENDING_STOPPED
  and PENDING_SYNCHRONIZE (a promote waiting for the lag to reach 0) are STOPPING, FAILED,
  LINK_FAILED and SOURCE_UNAVAILABLE are FAILED (the mirror does not copy; never taken as
  mirroring), PENDING_MIRROR and the restore states are LOG_ALIGNMENT (not mirroring yet, or
  truncating to restore, as KIP-1279's failback aligns its log); a status this reader does
  not know is UNKNOWN. The status itself is kept in the error message where the state does
  not say it (LINK_FAILED, SOURCE_UNAVAILABLE, PENDING_*...), with ``mirror_topic_error``;
- ``last_source_fetch_offset`` onto the last mirrored offset: Confluent's documentation
  defines it as the offset each partition has replicated up to, everything before it
  replicated: exclusive, as KIP-1279's LastMirrorOffset (the destination's end where
  mirroring stopped). -1 (not fetched yet) reads as unknown.

Cluster Linking reports neither the last mirrored leader epoch nor the source's high
watermark as the mirror saw it: those fields are missing, and the checks that need them
count the partitions unchecked naming the field, never passed (``read_mirror_state``'s
``missing_fields``), as for KIP-1279's CLI rows.
"""

from __future__ import annotations

from typing import Any

from audit.errors import InputError

# Cluster Linking's MirrorTopicStatus (REST API v3), by the KIP-1279 state it stands for.
STATES: dict[str, str] = {
    "ACTIVE": "MIRRORING",
    "STOPPED": "STOPPED",
    "PAUSED": "PAUSED",
    "LINK_PAUSED": "PAUSED",
    "PENDING_STOPPED": "STOPPING",
    "PENDING_SYNCHRONIZE": "STOPPING",
    "FAILED": "FAILED",
    "LINK_FAILED": "FAILED",
    "SOURCE_UNAVAILABLE": "FAILED",
    "PENDING_MIRROR": "LOG_ALIGNMENT",
    "PENDING_SETUP_FOR_RESTORE": "LOG_ALIGNMENT",
    "PENDING_RESTORE": "LOG_ALIGNMENT",
    "UNKNOWN": "UNKNOWN",
}
# The fields of KIP-1279's mirror state Cluster Linking carries (by the response's names):
# the others are missing for every partition it reports.
CARRIED = ("LastMirrorOffset", "ErrorMessage")


def is_rest(data: Any) -> bool:
    """The REST API's answer: a list of mirror topics, or one."""
    return isinstance(data, dict) and str(data.get("kind", "")).startswith("KafkaMirrorData")


def is_cli(rows: list[Any]) -> bool:
    """``confluent kafka mirror describe`` or ``list`` rows (``-o json``)."""
    return bool(rows) and all(isinstance(r, dict) and "mirror_topic_name" in r for r in rows)


def rest_partitions(data: dict[str, Any], origin: str) -> list[dict[str, Any]]:
    """The REST answer as one plain row per partition (the fields ``record`` reads)."""
    topics = data.get("data") if str(data.get("kind")) == "KafkaMirrorDataList" else [data]
    if not isinstance(topics, list) or not all(isinstance(t, dict) for t in topics):
        raise InputError(f"{origin}: data is not a list of mirror topics (Cluster Linking's REST API v3)")
    rows = []
    for i, topic in enumerate(topics):
        where = f"{origin}: data[{i}]"
        lags = topic.get("mirror_lags")
        if not isinstance(lags, list) or not all(isinstance(lag, dict) for lag in lags):
            raise InputError(f"{where}: mirror_lags is missing or not a list of objects")
        for lag in lags:
            rows.append(
                {
                    **{k: topic.get(k) for k in ("link_name", "mirror_topic_name", "mirror_status")},
                    "mirror_topic_error": topic.get("mirror_topic_error"),
                    "partition": lag.get("partition"),
                    "last_source_fetch_offset": lag.get("last_source_fetch_offset"),
                }
            )
    return rows


def cli_partitions(rows: list[dict[str, Any]], origin: str) -> list[dict[str, Any]]:
    """``describe`` rows as they are; ``list`` rows (a topic each, no partition) expanded to
    their partitions, without offsets."""
    out = []
    for i, row in enumerate(rows):
        if "partition" in row:
            out.append(row)
            continue
        count = row.get("num_partition")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InputError(
                f"{origin}: row {i}: neither a partition nor num_partition (confluent kafka mirror)"
            )
        out += [{**row, "partition": p} for p in range(count)]
    return out


def state_of(row: dict[str, Any], where: str) -> tuple[str, str | None]:
    """The KIP-1279 state a row's status stands for, and the error message that keeps the
    status (and ``mirror_topic_error``) where it is not plain ACTIVE."""
    status = row.get("mirror_status")
    if not isinstance(status, str) or not status.strip():
        raise InputError(f"{where}: mirror_status {status!r} is not a Cluster Linking mirror status")
    status = status.strip().upper()
    error = row.get("mirror_topic_error")
    error = None if error in (None, "", "NO_ERROR", "NOT_SET") else str(error)
    state = STATES.get(status, "UNKNOWN")
    if status in ("ACTIVE", state) and error is None:  # the state says all the status does
        return state, None
    told = f"Cluster Linking status {status}" + ("" if status in STATES else " (not known to this reader)")
    return state, told + (f": {error}" if error else "")
