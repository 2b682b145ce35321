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


def local_starts(parts_by_side: dict[str, Sequence[PartitionRecord]]) -> dict[tuple[str, str, int], int]:
    """Per (side, topic, partition) of a tiered topic whose local log start is known: that
    start, below which the broker serves records from the remote tier."""
    return {
        (side, p.topic, p.partition): p.local_log_start_offset
        for side, parts in parts_by_side.items()
        for p in parts
        if p.remote_storage and p.local_log_start_offset is not None
    }


def remote_tier_detail(offset: int, local_start: int, why: str) -> str:
    """Why a read stopped, where it stopped in the remote tier: a failure of the broker's
    remote storage manager is its own cause."""
    return (
        f"remote tier read failed (tiered storage: offset {offset} is below the local log start "
        f"{local_start}, served by the broker's remote storage manager): {why}"
    )[:300]
