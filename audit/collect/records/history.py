"""What record-level verification has proven so far, kept in the output root between runs.

One small JSON file, ``<output root>/record-verification.json``: per partition the offset
up to which every chunk was verified equal (``verified_through``), the ranges last found
mismatched and those last unreadable, and a counter for the round robin of re-checks. A
nightly run scans only what lies past ``verified_through`` plus a few older chunks;
``--full`` ignores the file. It is written atomically; an unreadable file is an input
error, never silently a fresh start.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from audit.errors import InputError
from audit.fsutil import atomic_write_json, json_loads

log = logging.getLogger(__name__)

HISTORY_FILE = "record-verification.json"
FORMAT = "mirror-audit-record-verification/1"


def _key(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


@dataclass(frozen=True)
class PartitionOutcome:
    """One partition's result in a run: the new range it read, where the first mismatching
    chunk or unreadable range began (None: none), the mismatched chunks, and the offsets a
    side could not read (a chunk there differs because it was not read, not because its
    records do: it is shown unreadable, never mismatched)."""

    new_range: tuple[int, int] | None
    first_bad: int | None
    mismatched: tuple[tuple[int, int], ...] = ()
    unreadable: tuple[tuple[int, int], ...] = ()


def stamp() -> str:
    """Now, as a partition's ``updated_at`` in the file (UTC, to the second)."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class RecordHistory:
    """Mode cluster-mirroring's history; ``FILE`` and ``FORMAT`` are a subclass's to change
    (mode mm2 keeps its own, audit/collect/records/digest_history.py)."""

    FILE = HISTORY_FILE
    FORMAT = FORMAT

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    @classmethod
    def load(
        cls, output_root: Path, clusters: tuple[str | None, str | None] = (None, None), full: bool = False
    ) -> Self:
        """The history of this cluster pair (source id, destination id). A history kept for
        another pair (the clusters were rebuilt, or the output root is shared) is not used:
        what was verified there proves nothing here. An unreadable file is an error, but a
        ``--full`` run (``full``), which reads nothing of it, starts a new one over it."""
        path = output_root / cls.FILE
        fresh: dict[str, Any] = {
            "format": cls.FORMAT,
            "source_cluster_id": clusters[0],
            "destination_cluster_id": clusters[1],
            "runs": 0,
            "partitions": {},
        }
        if not path.exists():
            return cls(path, fresh)
        try:
            data = json_loads(path.read_text(encoding="utf-8"))
            problem = None
        except (OSError, ValueError) as exc:
            data, problem = None, f"{path} cannot be read ({exc})"
        if problem is None and (not isinstance(data, dict) or data.get("format") != cls.FORMAT):
            problem = f"{path}: not a {cls.FORMAT} file"
        if problem is not None:
            if not full:
                raise InputError(f"{problem}: fix or remove it (or run with --full)")
            log.warning("%s: replaced by a new history (--full)", problem)
            return cls(path, fresh)
        assert isinstance(data, dict)
        if (data.get("source_cluster_id"), data.get("destination_cluster_id")) != clusters:
            log.warning(
                "%s belongs to clusters %s -> %s, not %s -> %s: starting a new history",
                path,
                data.get("source_cluster_id"),
                data.get("destination_cluster_id"),
                *clusters,
            )
            return cls(path, fresh)
        return cls(path, data)

    @property
    def runs(self) -> int:
        return int(self.data.get("runs", 0))

    def partitions(
        self, topic_ids: dict[str, str | None] | None = None
    ) -> dict[tuple[str, int], dict[str, Any]]:
        """Per partition, what was verified; a partition whose topic was recreated since
        (another topic id) starts over."""
        out = {}
        for key, value in (self.data.get("partitions") or {}).items():
            topic, _, partition = key.rpartition("/")
            known = value.get("topic_id")
            if topic_ids is not None and known and topic_ids.get(topic) and topic_ids[topic] != known:
                continue
            out[(topic, int(partition))] = value
        return out

    def record(
        self,
        outcomes: dict[tuple[str, int], PartitionOutcome],
        topic_ids: dict[str, str | None] | None = None,
    ) -> None:
        """Fold one run in: ``verified_through`` moves to the end of the new range read, or
        to the first chunk that mismatched or could not be read; a mismatch in a re-checked
        older chunk pulls it back there, so the next run reads from it again."""
        parts = self.data.setdefault("partitions", {})
        now = stamp()
        ids = topic_ids or {}
        for (topic, partition), out in outcomes.items():
            entry = parts.setdefault(_key(topic, partition), {"verified_through": 0, "mismatched": []})
            if ids.get(topic) and entry.get("topic_id") not in (None, ids[topic]):
                entry.clear()  # the topic was recreated: nothing verified before counts
                entry.update({"verified_through": 0, "mismatched": []})
            entry["topic_id"] = ids.get(topic) or entry.get("topic_id")
            through = int(entry.get("verified_through", 0))
            if out.new_range is not None:  # it starts at (or, --full, before) verified_through
                through = max(through, out.new_range[1])
            if out.first_bad is not None:
                through = min(through, out.first_bad)
            entry["verified_through"] = through
            entry["mismatched"] = [list(m) for m in out.mismatched[:100]]
            entry["unreadable"] = [list(u) for u in out.unreadable[:100]]
            entry["updated_at"] = now
        self.data["runs"] = self.runs + 1

    def save(self) -> Path:
        return atomic_write_json(self.path, self.data)
