"""A mirror's own per-partition state, imported from JSON into ``mirror_partitions``.

KIP-1279 Cluster Mirroring reports, per mirrored partition, its state (MIRRORING, STOPPED,
FAILED...) and where it stopped: the last mirrored offset and leader epoch, which a
failover's checks (CM-FAILOVER-1, ``failover verify``, ``failback readiness``) are
measured against. No released Kafka has the API yet, so the state is read from what the
prototype's tools print, in either of two shapes:

- the DescribeClusterMirrors response (api key 99) as JSON: ``{"Mirrors": [{"MirrorName",
  "Topics": [{"TopicName", "Partitions": [{"PartitionIndex", "StateValue", "ErrorMessage",
  "SourceOffset", "DestinationOffset", "LastMirrorEpoch", "LastMirrorOffset"}]}]}]}``; field
  names are matched without regard to case (Kafka's own JSON converters write them
  camelCase: ``mirrors``, ``topicName``...), and an older prototype's ``State`` is read as
  ``StateValue``;
- the rows ``kafka-cluster-mirrors.sh --describe --json`` prints: ``[{"mirror", "topic",
  "partition", "state", "sourceOffset", "destinationOffset", ...}]``, one per partition, or
  one per topic that lists its partitions (``"partitions": [0, 1, 2]``).

Confluent Cluster Linking's mirror topics (its REST API's, or ``confluent kafka mirror
describe -o json``) are read too, their statuses and offsets mapped onto these fields
(``cluster_linking``), so that its users get the same failover checks.

The prototype is unreleased and its formats may change, so this module is the one place
that reads them. Every row needs its topic, partition and state; a row without them is an
input error naming the field. Fields a shape does not carry (the CLI rows have no last
mirrored offset) are recorded as missing, and the checks that need them are skipped for
those partitions, naming the field. Unknown fields are ignored. ``-1`` (the protocol's
"not known") reads as null.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.collect.metadata import cluster_linking
from audit.errors import InputError
from audit.fsutil import json_loads

STATES = (
    "LOG_ALIGNMENT",
    "EPOCH_FENCING",
    "ULE_RECOVERY",
    "MIRRORING",
    "PAUSING",
    "PAUSED",
    "STOPPING",
    "STOPPED",
    "FAILED",
    "UNKNOWN",
)
# The fields a check may need beyond topic, partition and state, by their names in the
# DescribeClusterMirrors response (how a missing one is named to the user).
OPTIONAL_FIELDS = ("SourceOffset", "DestinationOffset", "LastMirrorEpoch", "LastMirrorOffset", "ErrorMessage")


@dataclass(frozen=True)
class MirrorPartitionRecord:
    mirror: str | None
    topic: str
    partition: int
    state: str
    source_offset: int | None
    destination_offset: int | None
    last_mirror_epoch: int | None
    last_mirror_offset: int | None
    error_message: str | None


@dataclass(frozen=True)
class MirrorState:
    records: tuple[MirrorPartitionRecord, ...]
    shape: str  # "describe-cluster-mirrors" | "cli-rows" | "cluster-linking-rest" | "cluster-linking-cli"
    # Optional fields no row of the file carries: the checks needing them are skipped.
    missing_fields: tuple[str, ...]

    def note(self, origin: str) -> dict[str, Any]:
        """What the snapshot's manifest says of the import."""
        return {
            "file": origin,
            "shape": self.shape,
            "partitions": len(self.records),
            "states": {
                s: sum(1 for r in self.records if r.state == s)
                for s in sorted({r.state for r in self.records})
            },
            "missing_fields": list(self.missing_fields),
        }


def read_mirror_state(path: Path) -> MirrorState:
    """Read and check a mirror state file; a file that cannot be used is an input error
    naming it and what is wrong."""
    try:
        data = json_loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"mirror state file {path} does not exist") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"mirror state file {path} is not readable JSON: {exc}") from exc
    return parse_mirror_state(data, str(path))


def parse_mirror_state(data: Any, origin: str = "<mirror state>") -> MirrorState:
    if isinstance(data, dict) and _get(data, "Mirrors") is not None:
        return _unique(_from_response(data, origin), origin)
    if cluster_linking.is_rest(data):
        rows = cluster_linking.rest_partitions(data, origin)
        return _unique(_from_cluster_linking(rows, "cluster-linking-rest", origin), origin)
    if isinstance(data, list) and cluster_linking.is_cli(data):
        rows = cluster_linking.cli_partitions(data, origin)
        return _unique(_from_cluster_linking(rows, "cluster-linking-cli", origin), origin)
    if isinstance(data, list):
        return _unique(_from_rows(data, origin), origin)
    raise InputError(
        f"{origin}: neither a DescribeClusterMirrors response (an object with Mirrors), "
        "'kafka-cluster-mirrors.sh --describe --json' rows (a list), nor Cluster Linking's mirror "
        "topics (the REST API's KafkaMirrorDataList, or 'confluent kafka mirror describe -o json' rows)"
    )


def _unique(state: MirrorState, origin: str) -> MirrorState:
    """A partition is mirrored by one mirror: a second entry for it is an input error."""
    seen: dict[tuple[str, int], str | None] = {}
    for r in state.records:
        key = (r.topic, r.partition)
        if key in seen:
            raise InputError(
                f"{origin}: {r.topic}-{r.partition} appears twice (mirrors {seen[key]} and {r.mirror}): "
                "give the state of the one mirror that writes it"
            )
        seen[key] = r.mirror
    return state


def _get(obj: dict[str, Any], name: str) -> Any:
    """A field by its protocol name, whatever the case of its first letter or the rest."""
    wanted = name.lower()
    for key, value in obj.items():
        if str(key).lower() == wanted:
            return value
    return None


def _has(obj: dict[str, Any], name: str) -> bool:
    wanted = name.lower()
    return any(str(key).lower() == wanted for key in obj)


INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1


def _known(value: Any) -> int | None:
    """An offset or epoch: -1 (or below) is the protocol's 'not known'; one beyond a 64-bit
    offset (1e300, a number the file made up) is an input error, not a value."""
    if value is None or isinstance(value, bool):
        return None
    try:
        n = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if n > INT64_MAX:
        raise InputError(f"mirror state: offset or epoch {value!r} is beyond a 64-bit offset")
    return n if n >= 0 else None


def _objects(value: Any, where: str) -> list[dict[str, Any]]:
    """A list of objects (absent: none); anything else is an input error naming where."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        shown = str(value)[:40]
        raise InputError(f"{where}: expected a list of objects, got {type(value).__name__} {shown!r}")
    return value


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _required(row: dict[str, Any], names: tuple[str, ...], what: str, where: str) -> Any:
    for name in names:
        value = _get(row, name)
        if value is not None:
            return value
    raise InputError(f"{where}: {what} is missing (expected the field {' or '.join(names)})")


def _partition(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT32_MAX:
        raise InputError(f"{where}: partition {value!r} is not a partition number")
    return value


def _state(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: state {value!r} is not a state name (one of {', '.join(STATES)})")
    return value.strip().upper()


def _from_response(data: dict[str, Any], origin: str) -> MirrorState:
    error = _get(data, "ErrorCode")
    if error:
        raise InputError(
            f"{origin}: the DescribeClusterMirrors response carries error {error}: "
            f"{_get(data, 'ErrorMessage') or 'no message'}"
        )
    records: list[MirrorPartitionRecord] = []
    seen: set[str] = set()
    for m, mirror in enumerate(_objects(_get(data, "Mirrors"), f"{origin}: Mirrors")):
        name = _get(mirror, "MirrorName")
        where_m = f"{origin}: Mirrors[{m}]"
        if _get(mirror, "ErrorCode"):
            message = _get(mirror, "ErrorMessage") or "no message"
            raise InputError(f"{where_m} ({name}): error {_get(mirror, 'ErrorCode')}: {message}")
        for t, topic_entry in enumerate(_objects(_get(mirror, "Topics"), f"{where_m}.Topics")):
            where_t = f"{where_m}.Topics[{t}]"
            topic = _required(topic_entry, ("TopicName",), "the topic", where_t)
            for p, part in enumerate(_objects(_get(topic_entry, "Partitions"), f"{where_t}.Partitions")):
                where = f"{where_t}.Partitions[{p}]"
                seen.update(f for f in OPTIONAL_FIELDS if _has(part, f))
                records.append(
                    MirrorPartitionRecord(
                        mirror=None if name is None else str(name),
                        topic=str(topic),
                        partition=_partition(
                            _required(part, ("PartitionIndex",), "the partition", where), where
                        ),
                        state=_state(_required(part, ("StateValue", "State"), "the state", where), where),
                        source_offset=_known(_get(part, "SourceOffset")),
                        destination_offset=_known(_get(part, "DestinationOffset")),
                        last_mirror_epoch=_known(_get(part, "LastMirrorEpoch")),
                        last_mirror_offset=_known(_get(part, "LastMirrorOffset")),
                        error_message=_text(_get(part, "ErrorMessage")),
                    )
                )
    return MirrorState(tuple(records), "describe-cluster-mirrors", _missing(seen, records))


# The CLI's names of the optional fields (camelCase), by the response's names.
_CLI_FIELDS = {
    "SourceOffset": "sourceOffset",
    "DestinationOffset": "destinationOffset",
    "LastMirrorEpoch": "lastMirrorEpoch",
    "LastMirrorOffset": "lastMirrorOffset",
    "ErrorMessage": "errorMessage",
}


def _from_rows(rows: list[Any], origin: str) -> MirrorState:
    records: list[MirrorPartitionRecord] = []
    seen: set[str] = set()
    for i, row in enumerate(rows):
        where = f"{origin}: row {i}"
        if not isinstance(row, dict):
            raise InputError(f"{where} is not an object")
        topic = _required(row, ("topic",), "the topic", where)
        state = _state(_required(row, ("state",), "the state", where), where)
        if _get(row, "partition") is not None:
            partitions = [_partition(_get(row, "partition"), where)]
        elif isinstance(_get(row, "partitions"), list):
            partitions = [_partition(p, where) for p in _get(row, "partitions")]
        else:
            raise InputError(
                f"{where}: the partition is missing (expected the field partition, or partitions)"
            )
        seen.update(f for f, cli in _CLI_FIELDS.items() if _has(row, cli))
        mirror = _get(row, "mirror")
        for partition in partitions:
            records.append(
                MirrorPartitionRecord(
                    mirror=None if mirror is None else str(mirror),
                    topic=str(topic),
                    partition=partition,
                    state=state,
                    source_offset=_known(_get(row, "sourceOffset")),
                    destination_offset=_known(_get(row, "destinationOffset")),
                    last_mirror_epoch=_known(_get(row, "lastMirrorEpoch")),
                    last_mirror_offset=_known(_get(row, "lastMirrorOffset")),
                    error_message=_text(_get(row, "errorMessage")),
                )
            )
    return MirrorState(tuple(records), "cli-rows", _missing(seen, records))


def _from_cluster_linking(rows: list[dict[str, Any]], shape: str, origin: str) -> MirrorState:
    """Cluster Linking's partitions (``cluster_linking``'s plain rows) as mirror state."""
    records: list[MirrorPartitionRecord] = []
    has_offsets = False
    for i, row in enumerate(rows):
        where = f"{origin}: partition row {i}"
        topic = _required(row, ("mirror_topic_name",), "the mirror topic", where)
        state, message = cluster_linking.state_of(row, where)
        has_offsets = has_offsets or "last_source_fetch_offset" in row
        link = row.get("link_name")
        records.append(
            MirrorPartitionRecord(
                mirror=None if link is None else str(link),
                topic=str(topic),
                partition=_partition(row.get("partition"), where),
                state=state,
                source_offset=None,
                destination_offset=None,
                last_mirror_epoch=None,
                last_mirror_offset=_known(row.get("last_source_fetch_offset")),
                error_message=message,
            )
        )
    carried = set(cluster_linking.CARRIED) - (set() if has_offsets else {"LastMirrorOffset"})
    return MirrorState(tuple(records), shape, _missing(carried, records))


def _missing(seen: set[str], records: list[MirrorPartitionRecord]) -> tuple[str, ...]:
    """Optional fields no row carried (with rows to carry them)."""
    if not records:
        return ()
    return tuple(f for f in OPTIONAL_FIELDS if f not in seen)


def describe_response(records: list[MirrorPartitionRecord]) -> dict[str, Any]:
    """Records in the DescribeClusterMirrors response's shape (what the sandbox's emulator
    writes, so the demo and the tests go through ``read_mirror_state`` like a real file)."""
    by_mirror: dict[str, dict[str, list[MirrorPartitionRecord]]] = {}
    for r in records:
        by_mirror.setdefault(r.mirror or "", {}).setdefault(r.topic, []).append(r)

    def offset(value: int | None) -> int:
        return -1 if value is None else value

    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": 0,
        "ErrorMessage": None,
        "Mirrors": [
            {
                "ErrorCode": 0,
                "ErrorMessage": None,
                "MirrorName": mirror,
                "Topics": [
                    {
                        "TopicName": topic,
                        "Partitions": [
                            {
                                "PartitionIndex": r.partition,
                                "StateValue": r.state,
                                "ErrorMessage": r.error_message,
                                "RetryAttempt": 0,
                                "SourceOffset": offset(r.source_offset),
                                "DestinationOffset": offset(r.destination_offset),
                                "LastMirrorEpoch": offset(r.last_mirror_epoch),
                                "LastMirrorOffset": offset(r.last_mirror_offset),
                            }
                            for r in sorted(parts, key=lambda r: r.partition)
                        ],
                    }
                    for topic, parts in sorted(topics.items())
                ],
            }
            for mirror, topics in sorted(by_mirror.items())
        ],
    }
