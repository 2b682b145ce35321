"""``readiness --wait-drained``: the last step before a planned failover, waiting until the
mirror has copied everything and the source has gone quiet.

Each poll reads both clusters' offsets only (no groups, committed offsets or transaction
descriptions: at thousands of groups those cost as much as the offsets) into a scratch
directory, and runs the mode's comparisons in this process (DuckDB, no Spark: a poll every
few seconds); then one query, the profile's ``drain``, gives each in-scope partition's lag,
its source end and whether a transaction is open there. Drained means: no lag anywhere,
no open transaction, and the source's ends unchanged since the previous poll (producers
have stopped). A poll that finds it drained is confirmed by a full snapshot, which must be
drained too with the same ends; the readiness check then runs on that snapshot, so its GO
is about the state that was waited for. Nothing of a poll stays once the next one starts.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from audit.config import AuditConfig
from audit.jobs import READINESS
from audit.paths import check_writable, local_path

if TYPE_CHECKING:
    from audit.compare.engines import EngineName
    from audit.pipeline import RunOutcome

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Lagging:
    topic: str
    partition: int
    lag_records: int | None  # None: unknown (an input was missing), never taken as drained
    open_transaction: bool | None


@dataclass(frozen=True)
class DrainStatus:
    """One poll: what is left, for the progress line."""

    polls: int
    elapsed_seconds: float
    partitions: int
    drained_partitions: int
    lag_records: int
    open_transactions: int
    source_quiet: bool
    lagging: tuple[Lagging, ...]  # the partitions still lagging, most behind first (at most 20)
    # Partitions whose lag or open transaction could not be computed: never drained.
    unknown_partitions: int = 0

    @property
    def drained(self) -> bool:
        return (
            self.lag_records == 0
            and self.open_transactions == 0
            and self.unknown_partitions == 0
            and self.source_quiet
        )


@dataclass(frozen=True)
class DrainResult:
    status: DrainStatus
    source: Path | None  # the drained snapshots (None on timeout)
    destination: Path | None


def wait_drained(
    cfg: AuditConfig,
    work: Path,
    timeout: float,
    interval: float = 2.0,
    progress: Callable[[DrainStatus], None] | None = None,
) -> DrainResult:
    """Poll until drained or ``timeout`` seconds; the drained snapshots are left in
    ``work/source`` and ``work/destination`` (``work`` must not exist yet)."""
    from audit.logs import mask_config

    mask_config(cfg)
    from audit.collect.metadata.snapshot import take_snapshots
    from audit.pipeline import compare_snapshots
    from audit.profiles import profile_of
    from audit.validate import data_docs

    prof = profile_of(cfg)
    work = local_path(work)
    check_writable(work, "run directory")
    if READINESS.writes_data_docs(cfg):
        data_docs.start()  # GX imports in a process of its own while the mirror drains
    started = time.monotonic()
    previous_ends: dict[tuple[str, int], int] | None = None
    polls = 0
    offsets_only = dataclasses.replace(prof.snapshot, reads_groups=False)
    confirming = False  # the last poll was drained: this one takes the full snapshot
    with tempfile.TemporaryDirectory(prefix="mirror-audit-drain-") as tmp:
        while True:
            polls += 1
            poll_dir = Path(tmp) / f"poll-{polls}"
            src, dst = take_snapshots(cfg, poll_dir, prof.snapshot if confirming else offsets_only)
            compared = compare_snapshots(src, dst, poll_dir / "run", cfg, "local", prof)
            rows = compared.tables.rows(prof.drain)
            ends = {(r["topic"], int(r["partition"])): int(r["src_end"] or 0) for r in rows}
            quiet = previous_ends is not None and ends == previous_ends
            lagging = sorted(
                (
                    Lagging(
                        r["topic"],
                        int(r["partition"]),
                        None if r["lag_records"] is None else int(r["lag_records"]),
                        None if r["open_txn"] is None else bool(r["open_txn"]),
                    )
                    for r in rows
                    if r["lag_records"] is None or r["lag_records"] > 0 or r["open_txn"] is not False
                ),
                key=lambda x: (x.lag_records is not None, -(x.lag_records or 0), x.topic, x.partition),
            )
            status = DrainStatus(
                polls=polls,
                elapsed_seconds=time.monotonic() - started,
                partitions=len(rows),
                drained_partitions=len(rows) - len(lagging),
                lag_records=sum(x.lag_records or 0 for x in lagging),
                open_transactions=sum(1 for x in lagging if x.open_transaction),
                source_quiet=quiet,
                lagging=tuple(lagging[:20]),
                unknown_partitions=sum(
                    1 for x in lagging if x.lag_records is None or x.open_transaction is None
                ),
            )
            if progress is not None:
                progress(status)
            if status.drained and confirming:
                work.mkdir(parents=True, exist_ok=True)
                return DrainResult(
                    status,
                    Path(shutil.move(str(src), str(work / "source"))),
                    Path(shutil.move(str(dst), str(work / "destination"))),
                )
            shutil.rmtree(poll_dir, ignore_errors=True)
            previous_ends = ends
            # Drained by the offsets: confirmed at once by a full snapshot (no wait), which
            # sees the same ends or the wait goes on.
            confirming = status.drained
            if confirming:
                continue
            if status.elapsed_seconds + interval > timeout:
                return DrainResult(status, None, None)
            time.sleep(interval)


def drained_readiness(
    cfg: AuditConfig,
    run_dir: Path,
    timeout: float,
    interval: float = 2.0,
    progress: Callable[[DrainStatus], None] | None = None,
    engine: EngineName = "local",
) -> tuple[DrainStatus, RunOutcome | None]:
    """Wait until drained, then the readiness check on the drained snapshots in ``run_dir``;
    no run (None) when the wait timed out."""
    from audit.pipeline import audit_snapshots

    result = wait_drained(cfg, run_dir, timeout, interval, progress)
    status = result.status
    if result.source is None or result.destination is None:
        return status, None
    drained = {
        "polls": status.polls,
        "waited_seconds": round(status.elapsed_seconds, 1),
        "partitions": status.partitions,
    }
    outcome = audit_snapshots(
        result.source,
        result.destination,
        run_dir,
        cfg,
        READINESS,
        engine,
        run_extra={"drained": drained},
    )
    return status, outcome
