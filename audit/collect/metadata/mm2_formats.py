"""MirrorMaker 2's offset-sync and checkpoint records, decoded the way Kafka reads them.

MM2 writes both with Kafka's own protocol ``Schema``/``Struct`` serialization (big-endian
fixed-width integers; ``STRING`` is an int16 length then UTF-8). No Python library reads
these two records, so they are decoded here, field for field as in connect-mirror's
``OffsetSync`` and ``Checkpoint`` classes, and tested against records written by a real
MirrorMaker 2 (tests/integration). Like Kafka's reader, trailing bytes after the known
fields are ignored; a short or malformed record raises ``Mm2RecordError`` for the caller to
count, never to crash a run.

- OffsetSync: key (topic STRING, partition INT32); value (upstream INT64, downstream INT64).
- Checkpoint: key (group STRING, topic STRING, partition INT32); value (version INT16, then
  for version 0: upstream INT64, downstream INT64, metadata STRING).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

CHECKPOINT_VERSIONS = (0,)


class Mm2RecordError(ValueError):
    """A record that is not a valid offset sync or checkpoint (``unknown_version`` set when
    the layout is fine but the version is newer than this reader knows)."""

    def __init__(self, message: str, unknown_version: int | None = None) -> None:
        super().__init__(message)
        self.unknown_version = unknown_version


@dataclass(frozen=True)
class OffsetSync:
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int


@dataclass(frozen=True)
class Checkpoint:
    group_id: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str


class _Reader:
    def __init__(self, data: bytes | None, what: str) -> None:
        if data is None:
            raise Mm2RecordError(f"{what} is null")
        self._data = data
        self._pos = 0
        self._what = what

    def _take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self._pos + size > len(self._data):
            raise Mm2RecordError(f"{self._what} is truncated at byte {self._pos} of {len(self._data)}")
        (value,) = struct.unpack_from(fmt, self._data, self._pos)
        self._pos += size
        return int(value)

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def int64(self) -> int:
        return self._take(">q")

    def string(self) -> str:
        length = self.int16()
        if length < 0:
            raise Mm2RecordError(f"{self._what} has a null string where one is required")
        if self._pos + length > len(self._data):
            raise Mm2RecordError(f"{self._what} is truncated inside a string at byte {self._pos}")
        raw = self._data[self._pos : self._pos + length]
        self._pos += length
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Mm2RecordError(f"{self._what} has a string that is not UTF-8") from exc


def decode_offset_sync(key: bytes | None, value: bytes | None) -> OffsetSync:
    k = _Reader(key, "offset-sync key")
    topic, partition = k.string(), k.int32()
    v = _Reader(value, "offset-sync value")
    return OffsetSync(topic, partition, v.int64(), v.int64())


def decode_checkpoint(key: bytes | None, value: bytes | None) -> Checkpoint:
    k = _Reader(key, "checkpoint key")
    group_id, topic, partition = k.string(), k.string(), k.int32()
    v = _Reader(value, "checkpoint value")
    version = v.int16()
    if version not in CHECKPOINT_VERSIONS:
        raise Mm2RecordError(f"checkpoint value has unknown version {version}", unknown_version=version)
    return Checkpoint(group_id, topic, partition, v.int64(), v.int64(), v.string())


@dataclass(frozen=True)
class SourcePosition:
    """A MirrorSourceConnector task's committed position of one source partition, as Kafka
    Connect keeps it in its offsets topic: the offset of the last record it copied (None: a
    tombstone, the position forgotten)."""

    topic: str
    partition: int
    offset: int | None


def decode_source_position(
    key: bytes | None, value: bytes | None, connector: str, source_alias: str
) -> SourcePosition | None:
    """A record of Connect's offsets topic (JSON, as Connect's JsonConverter writes it):
    key ``["<connector>", {"cluster": "<alias>", "partition": N, "topic": "<topic>"}]``,
    value ``{"offset": N}`` (null: a tombstone). None for a record of another connector or
    another source cluster (the topic is shared by the herder's connectors: the checkpoint
    and heartbeat connectors write theirs too); a malformed one raises ``Mm2RecordError``."""
    import json

    try:
        parsed = json.loads(key or b"null")
    except ValueError as exc:
        raise Mm2RecordError(f"key is not JSON: {exc}") from None
    if not (isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[1], dict)):
        raise Mm2RecordError("key is not [connector, source partition]")
    name, where = parsed
    if name != connector or where.get("cluster") != source_alias:
        return None
    topic, partition = where.get("topic"), where.get("partition")
    if not isinstance(topic, str) or not isinstance(partition, int) or isinstance(partition, bool):
        raise Mm2RecordError("key names no topic and partition")
    if value is None:
        return SourcePosition(topic, partition, None)
    try:
        held = json.loads(value)
    except ValueError as exc:
        raise Mm2RecordError(f"value is not JSON: {exc}") from None
    offset = held.get("offset") if isinstance(held, dict) else None
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < -1:
        raise Mm2RecordError(f"value holds no offset: {held!r}"[:200])
    return SourcePosition(topic, partition, offset)
