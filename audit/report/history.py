"""What a run says about the runs before it: since when each violating row has been failing,
and what changed since the previous run of the same cluster pair.

A cluster pair is its two cluster ids (a run of the same clusters under another output
root or from other snapshot paths is the same pair). The earlier runs are the summaries
under the output root (``output.history_runs`` of them) and the violation keys each kept
(``audit.validate.violations``). Only bounded results come back to this process: the
streak of the few example rows shown, and per invariant three counts and a few keys.

``load_history`` is the one place that decides which earlier runs count: every consumer
(the changes, the streaks, the trend, the nightly's data-level results a readiness check
gates on, the metrics' last success) reads only what it returns. A summary dated in the
future is not among them: its age is unknown, and as the newest run it would stand in for
every run after it.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from audit.compare.tables import KEY_COLUMNS
from audit.fsutil import json_loads
from audit.validate.keys import parse_key, row_key
from audit.validate.violations import violations_dataset

log = logging.getLogger(__name__)

FAILING = ("fail", "warn")
CHANGE_EXAMPLES = 5
# How far ahead of this machine's clock a run's times may be and still be believed: the
# clocks of the hosts running the jobs differ by seconds; a summary further ahead was
# written by a clock that was wrong, or by hand.
CLOCK_SKEW = timedelta(minutes=5)
# The times of summary.json's run section that order runs and date a success.
_RUN_TIMES = ("started_at", "finished_at")


def pair_of(summary: dict[str, Any]) -> tuple[Any, Any]:
    run = summary.get("run") or {}
    return run.get("source_cluster_id"), run.get("destination_cluster_id")


def load_history(
    output_root: Path,
    exclude: Path | None = None,
    limit: int = 365,
    pair: tuple[Any, Any] | None = None,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """Earlier runs' summaries under the output root, oldest first, the newest ``limit``;
    with ``pair``, only the runs of that cluster pair. Each has its directory name under
    "dir". A run dated after ``now`` (this machine's clock) by more than ``CLOCK_SKEW`` is
    left out with a warning: it would be the previous run, the last success and the
    nightly a readiness check trusts, with a negative age, until its date came."""
    runs = []
    if not output_root.is_dir():
        return []
    now = now or datetime.now(UTC)
    for path in sorted(output_root.glob("*/summary.json")):
        if exclude is not None and path.parent.resolve() == exclude.resolve():
            continue
        try:
            data = json_loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log.warning("ignoring unreadable earlier run %s", path)
            continue
        if not _usable(data):
            log.warning("ignoring earlier run %s: its summary.json is not one this tool wrote", path)
            continue
        if pair is not None and pair_of(data) != pair:
            continue
        ahead = future_time(data, now)
        if ahead is not None:
            log.warning(
                "ignoring earlier run %s: dated %s, after this machine's clock (%s) by more than %s; "
                "its age is unknown and it would stand in for every run after it",
                path.parent,
                ahead,
                now.isoformat(timespec="seconds"),
                CLOCK_SKEW,
            )
            continue
        # The run's directory is where its summary lies, whatever the summary says.
        runs.append({**data, "dir": path.parent.name})
    runs.sort(key=lambda s: str((s.get("run") or {}).get("started_at", s["dir"])))
    return runs[-limit:]


def parse_time(stamp: Any) -> datetime | None:
    """An ISO 8601 time of summary.json (no zone: UTC, as it is written); None for anything
    else."""
    if not isinstance(stamp, str):
        return None
    try:
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def future_time(summary: dict[str, Any], now: datetime) -> str | None:
    """The first of the run's times that is after ``now`` by more than ``CLOCK_SKEW``, as
    written; None when none is."""
    run = summary.get("run") or {}
    for key in _RUN_TIMES:
        moment = parse_time(run.get(key))
        if moment is not None and moment - now > CLOCK_SKEW:
            return str(run[key])
    return None


def _usable(data: Any) -> bool:
    """A summary the history can read: the fields it reads have the types it reads them as
    (a crafted or damaged summary.json under the output root is skipped, not a traceback
    in every later run)."""
    if not isinstance(data, dict):
        return False
    shapes = {"run": dict, "invariants": dict, "verdict": str, "changes": dict}
    if any(k in data and not isinstance(data[k], t) for k, t in shapes.items()):
        return False
    invariants = data.get("invariants") or {}
    return all(isinstance(v, dict) for v in invariants.values())


def _keys_of(run_dir: Path, invariant: str, keys: set[str]) -> set[str]:
    """Which of ``keys`` the run kept as violating ``invariant`` (empty for a run that kept
    none: its rows are unknown, which ends a streak as a pass would)."""
    import pyarrow.dataset as ds

    dataset = violations_dataset(run_dir)
    if dataset is None or not keys:
        return set()
    table = dataset.to_table(
        columns=["key"], filter=(ds.field("invariant") == invariant) & ds.field("key").isin(sorted(keys))
    )
    return set(table.column("key").to_pylist())


def example_key(example: dict[str, Any], table: str | None) -> str | None:
    columns = KEY_COLUMNS.get(table or "")
    if columns is None or any(c not in example for c in columns):
        return None
    return row_key([example[c] for c in columns])


def _example_tables(invariant: dict[str, Any]) -> list[str | None]:
    """The comparison table each example comes from: that of the counted check listing it
    (``fold`` takes the examples from its counted checks, which may judge several tables)."""
    status = invariant.get("status")
    checks = invariant.get("checks") or []
    counted = [c for c in checks if c.get("severity") == status and not c.get("success")]
    out: list[str | None] = []
    for example in invariant.get("examples") or []:
        tables = [c.get("table") for c in counted if example in (c.get("examples") or [])]
        out.append(str(tables[0]) if tables else None)
    return out


def annotate_since(summary: dict[str, Any], history: list[dict[str, Any]], root: Path) -> None:
    """Per failing invariant, for each example row: the first run of its current streak
    (consecutive runs, this one included, that kept it as violating) and the streak's
    length, as ``examples_seen`` beside ``examples``."""
    newest_first = list(reversed(history))
    run = summary.get("run") or {}
    for inv_id, inv in (summary.get("invariants") or {}).items():
        examples = inv.get("examples") or []
        if inv.get("status") not in FAILING or not examples:
            continue
        keys = [example_key(e, t) for e, t in zip(examples, _example_tables(inv), strict=True)]
        seen: list[dict[str, Any]] = [
            {"first_run": None, "first_seen_at": run.get("started_at"), "runs": 1} for _ in examples
        ]
        open_keys = {k for k in keys if k is not None}
        for earlier in newest_first:
            if not open_keys:
                break
            kept = _keys_of(root / earlier["dir"], inv_id, open_keys)
            for i, k in enumerate(keys):
                if k in kept:
                    seen[i] = {
                        "first_run": earlier["dir"],
                        "first_seen_at": (earlier.get("run") or {}).get("started_at"),
                        "runs": seen[i]["runs"] + 1,
                    }
            open_keys &= kept
        for i, k in enumerate(keys):
            if k is None:
                seen[i] = {"first_run": None, "first_seen_at": None, "runs": None}
        inv["examples_seen"] = seen


def _row_changes(run_dir: Path, previous_dir: Path) -> dict[str, dict[str, Any]] | None:
    """Per invariant: rows newly violating, no longer violating and still violating
    between the two runs' kept keys (DuckDB over both files, spilling if it must), with a
    few of the new rows; None when the previous run kept no keys."""
    import duckdb

    now, before = violations_dataset(run_dir), violations_dataset(previous_dir)
    if now is None or before is None:
        return None
    con = duckdb.connect(":memory:")
    con.register("now_keys", now)
    con.register("before_keys", before)
    counts = con.sql(
        """
        SELECT coalesce(n.invariant, b.invariant) AS invariant,
          count(*) FILTER (WHERE b.key IS NULL) AS new,
          count(*) FILTER (WHERE n.key IS NULL) AS resolved,
          count(*) FILTER (WHERE n.key IS NOT NULL AND b.key IS NOT NULL) AS still
        FROM now_keys n FULL OUTER JOIN before_keys b ON n.invariant = b.invariant AND n.key = b.key
        GROUP BY 1 ORDER BY 1
        """
    ).fetchall()
    new_rows = con.sql(
        f"""
        SELECT invariant, key_columns, key FROM (
          SELECT n.invariant, n.key_columns, n.key,
            row_number() OVER (PARTITION BY n.invariant ORDER BY n.key) AS i
          FROM now_keys n ANTI JOIN before_keys b ON n.invariant = b.invariant AND n.key = b.key)
        WHERE i <= {CHANGE_EXAMPLES} ORDER BY invariant, key
        """
    ).fetchall()
    out: dict[str, dict[str, Any]] = {
        inv: {"new": int(new), "resolved": int(resolved), "still": int(still), "new_examples": []}
        for inv, new, resolved, still in counts
    }
    for inv, key_columns, key in new_rows:
        out[inv]["new_examples"].append(parse_key(key, key_columns.split(",")))
    return out


def changes(summary: dict[str, Any], history: list[dict[str, Any]], run_dir: Path) -> dict[str, Any]:
    """This run against the previous run of the same cluster pair (the newest of
    ``history``): invariants newly failing, resolved, still failing and no longer checked,
    and per invariant the rows newly violating, resolved and still violating."""
    if not history:
        return {
            "previous_run": None,
            "note": "the first run of this cluster pair under this output root: nothing to compare with",
        }
    previous = history[-1]
    before = {k: v.get("status") for k, v in (previous.get("invariants") or {}).items()}
    now = {k: v.get("status") for k, v in (summary.get("invariants") or {}).items()}
    groups: dict[str, list[dict[str, Any]]] = {
        "newly_failing": [],
        "still_failing": [],
        "resolved": [],
        "no_longer_checked": [],
    }
    for inv_id in sorted(set(before) | set(now)):
        b, n = before.get(inv_id), now.get(inv_id)
        entry = {"id": inv_id, "before": b, "now": n}
        if n in FAILING:
            groups["still_failing" if b in FAILING else "newly_failing"].append(entry)
        elif b in FAILING:
            groups["resolved" if n == "pass" else "no_longer_checked"].append(entry)
    rows = _row_changes(run_dir, run_dir.parent / previous["dir"])
    result: dict[str, Any] = {
        "previous_run": {
            "dir": previous["dir"],
            "started_at": (previous.get("run") or {}).get("started_at"),
            "verdict": previous.get("verdict"),
        },
        "verdict": {"before": previous.get("verdict"), "now": summary.get("verdict")},
        "invariants": groups,
    }
    if rows is None:
        result["rows"] = None
        result["rows_note"] = (
            "the previous run kept no violation keys (an earlier version): rows not compared"
        )
    else:
        result["rows"] = rows
    return result
