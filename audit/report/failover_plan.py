"""The failover plan of an mm2 readiness check: the offsets a failover would set.

The MirrorMaker 2 runbook translates each group's latest checkpoint into the target's
group offsets at failover. This writes that plan, never applies it: one CSV per group in
the format ``kafka-consumer-groups --reset-offsets --from-file`` reads (topic,partition,
offset), a ``plan.json`` with the records each row would make consumers reprocess or
skip, and ``commands.txt`` with the exact commands for an operator to review and run.
The rows stream from the engine that holds the table, so this process holds one row at a
time.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from audit.compare.run import Compared
from audit.fsutil import atomic_directory

log = logging.getLogger(__name__)

PLAN_DIR = "failover-plan"
PREVIEW_ROWS = 20


@dataclass(frozen=True)
class PlanRow:
    group_id: str
    topic: str  # the replica topic on the target
    partition: int
    offset: int  # the checkpoint's downstream offset: what the failover would commit
    # None: unknown (no offset sync bounds the checkpoint), never counted as 0.
    reprocess_records: int | None
    skip_records: int | None
    staleness_records: int | None


@dataclass(frozen=True)
class PlanSummary:
    path: str
    groups: int
    partitions: int
    reprocess_records: int | None  # None where a row's count is unknown
    skip_records: int | None
    preview: tuple[PlanRow, ...]

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["preview"] = [asdict(r) for r in self.preview]
        return out


PLAN_ROWS = """
SELECT group_id, remote_topic, partition, ckpt_downstream_offset, reprocess_records, skip_records,
  staleness_records
FROM {mm2_group_offsets} WHERE in_scope AND mirrored AND has_checkpoint
ORDER BY group_id, remote_topic, partition
"""


def write_failover_plan(compared: Compared, run_dir: Path, bootstrap: str | None) -> PlanSummary:
    """Write ``<run>/failover-plan/`` from the mm2_group_offsets comparison table."""
    target = run_dir / PLAN_DIR
    preview: list[PlanRow] = []
    groups = partitions = 0
    reprocess: int | None = 0
    skip: int | None = 0
    with atomic_directory(target) as tmp:
        (tmp / "groups").mkdir()
        plan_json = (tmp / "plan.json").open("w", encoding="utf-8")
        commands = []
        current: str | None = None
        csv = None
        plan_json.write('{"rows": [\n')
        for r in compared.tables.iter_rows(PLAN_ROWS):
            row = PlanRow(
                r["group_id"],
                r["remote_topic"],
                int(r["partition"]),
                int(r["ckpt_downstream_offset"]),
                None if r["reprocess_records"] is None else int(r["reprocess_records"]),
                None if r["skip_records"] is None else int(r["skip_records"]),
                None if r["staleness_records"] is None else int(r["staleness_records"]),
            )
            if row.group_id != current:
                if csv is not None:
                    csv.close()
                current = row.group_id
                name = f"groups/{_file_name(row.group_id)}.csv"
                csv = (tmp / name).open("w", encoding="utf-8")
                groups += 1
                commands.append(
                    f"kafka-consumer-groups.sh --bootstrap-server {bootstrap or '<destination bootstrap>'} "
                    f"--group {_shell_word(row.group_id)} --reset-offsets --from-file {_shell_word(name)} "
                    "--dry-run   # review, then replace --dry-run with --execute"
                )
            assert csv is not None
            csv.write(f"{row.topic},{row.partition},{row.offset}\n")
            plan_json.write(("," if partitions else "") + json.dumps(asdict(row)) + "\n")
            partitions += 1
            reprocess = _add(reprocess, row.reprocess_records)
            skip = _add(skip, row.skip_records)
            if len(preview) < PREVIEW_ROWS:
                preview.append(row)
        if csv is not None:
            csv.close()
        plan_json.write("]}\n")
        plan_json.close()
        (tmp / "commands.txt").write_text(
            "# The failover plan of this readiness check: NOT applied by mirror-audit.\n"
            "# Run from this directory, against the destination (MirrorMaker 2 target) cluster,\n"
            "# after the source is stopped and MirrorMaker 2 has caught up; the groups must be\n"
            "# inactive there.\n" + "".join(c + "\n" for c in commands),
            encoding="utf-8",
        )
    log.info("failover plan: %d groups, %d partitions in %s (not applied)", groups, partitions, target)
    return PlanSummary(str(target), groups, partitions, reprocess, skip, tuple(preview))


def _add(total: int | None, value: int | None) -> int | None:
    """A sum that is unknown as soon as one of its terms is."""
    return None if total is None or value is None else total + value


def _file_name(group_id: str) -> str:
    """A file name for a group: its id percent-encoded, cut and made unique by a hash where
    that would pass the filesystem's 255 bytes (a group id may be any length)."""
    quoted = quote(group_id, safe="")
    if len(quoted) <= 120:
        return quoted
    digest = hashlib.sha256(group_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{quoted[:100]}-{digest}"


def _shell_word(text: str) -> str:
    """Single-quoted for a POSIX shell: group ids may hold any character."""
    return "'" + text.replace("'", "'\"'\"'") + "'"
