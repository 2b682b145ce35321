"""MirrorMaker 2's record layouts: decoded field for field, bad records rejected with a reason.

The byte strings are built here by hand from MirrorMaker 2's layout; that the real
MirrorMaker 2 writes exactly this is checked by tests/integration/test_mm2_sandbox.py.
"""

from __future__ import annotations

import struct

import pytest

from audit.collect.metadata.mm2_formats import (
    Checkpoint,
    Mm2RecordError,
    OffsetSync,
    decode_checkpoint,
    decode_offset_sync,
)


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def test_offset_sync_decodes_key_and_value() -> None:
    key = _s("orders") + struct.pack(">i", 3)
    value = struct.pack(">qq", 1_000_000_000_123, 77)
    assert decode_offset_sync(key, value) == OffsetSync("orders", 3, 1_000_000_000_123, 77)


def test_checkpoint_decodes_version_0() -> None:
    key = _s("billing-app") + _s("payments") + struct.pack(">i", 0)
    value = struct.pack(">hqq", 0, 500, 480) + _s("meta")
    assert decode_checkpoint(key, value) == Checkpoint("billing-app", "payments", 0, 500, 480, "meta")


def test_non_ascii_names_survive() -> None:
    key = _s("gruppe-ü") + _s("thema-ß") + struct.pack(">i", 1)
    value = struct.pack(">hqq", 0, 1, 1) + _s("")
    assert decode_checkpoint(key, value).group_id == "gruppe-ü"


def test_trailing_bytes_are_ignored_like_kafka_does() -> None:
    key = _s("t") + struct.pack(">i", 0) + b"\x00\x01"
    value = struct.pack(">qq", 5, 6) + b"future-field"
    assert decode_offset_sync(key, value) == OffsetSync("t", 0, 5, 6)


def test_unknown_checkpoint_version_is_named() -> None:
    key = _s("g") + _s("t") + struct.pack(">i", 0)
    value = struct.pack(">hqq", 1, 5, 6) + _s("")
    with pytest.raises(Mm2RecordError, match="unknown version 1") as info:
        decode_checkpoint(key, value)
    assert info.value.unknown_version == 1


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        (None, struct.pack(">qq", 1, 2), "key is null"),
        (_s("t") + struct.pack(">i", 0), None, "value is null"),
        (_s("t") + b"\x00\x00", struct.pack(">qq", 1, 2), "truncated"),
        (struct.pack(">h", 10) + b"abc", struct.pack(">qq", 1, 2), "truncated inside a string"),
        (struct.pack(">h", -1) + struct.pack(">i", 0), struct.pack(">qq", 1, 2), "null string"),
        (_s("t") + struct.pack(">i", 0), struct.pack(">q", 1), "value is truncated"),
        (struct.pack(">h", 2) + b"\xff\xfe" + struct.pack(">i", 0), struct.pack(">qq", 1, 2), "not UTF-8"),
    ],
)
def test_malformed_offset_syncs_raise_with_a_reason(
    key: bytes | None, value: bytes | None, reason: str
) -> None:
    with pytest.raises(Mm2RecordError, match=reason) as info:
        decode_offset_sync(key, value)
    assert info.value.unknown_version is None


def test_truncated_checkpoint_metadata_is_rejected() -> None:
    key = _s("g") + _s("t") + struct.pack(">i", 0)
    value = struct.pack(">hqq", 0, 5, 6) + struct.pack(">h", 4) + b"ab"
    with pytest.raises(Mm2RecordError, match="truncated inside a string"):
        decode_checkpoint(key, value)
