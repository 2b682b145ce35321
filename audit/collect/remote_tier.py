"""What a reader over the wire needs to know of tiered storage (KIP-405): where each tiered
partition's local log starts, below which the broker serves records from its remote tier,
through the remote storage manager and its own failures (its storage unreachable, an
object missing).

Both wire readers (the records scan, ``segments fetch``) name a read that stopped there as
"remote tier read failed", so an operator looks at the remote storage and not at the
mirror or the network. The local log starts are the snapshot's
(``collect/metadata/tiers.py`` reads them); this module only interprets them, so the
readers need no metadata collector.
"""

from __future__ import annotations

from collections.abc import Sequence

from audit.snapshot import PartitionRecord


def partition_local_starts(parts: Sequence[PartitionRecord]) -> dict[tuple[str, int], int]:
    """Per (topic, partition) of a tiered topic whose local log start is known: that start,
    below which the broker serves records from the remote tier."""
    return {
        (p.topic, p.partition): p.local_log_start_offset
        for p in parts
        if p.remote_storage and p.local_log_start_offset is not None
    }


def local_starts(parts_by_side: dict[str, Sequence[PartitionRecord]]) -> dict[tuple[str, str, int], int]:
    """``partition_local_starts`` of each side, keyed (side, topic, partition)."""
    return {
        (side, topic, partition): start
        for side, parts in parts_by_side.items()
        for (topic, partition), start in partition_local_starts(parts).items()
    }


def stop_detail(offset: int | None, local_start: int | None, why: str) -> str:
    """Why a read stopped at ``offset``: where that lies below a tiered partition's local
    log start (``local_start``; None: not tiered, or unknown) the broker was serving its
    remote tier, and a failure of its remote storage manager is named as its own cause;
    elsewhere ``why`` as it is. The one place that decides it, for both wire readers."""
    if offset is None or local_start is None or offset >= local_start:
        return why
    return (
        f"remote tier read failed (tiered storage: offset {offset} is below the local log start "
        f"{local_start}, served by the broker's remote storage manager): {why}"
    )[:300]
