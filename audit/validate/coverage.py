"""Coverage: the in-scope rows an invariant could not check, and which input was missing.

Great Expectations neither passes nor fails a row whose judged column is null: it counts
it as "missing". A comparison leaves a judged column null exactly where an input it needs
was not there (no leader epoch, no last mirrored offset, no destination partition), so the
rows in a check's domain (its row condition) with a null judged column are the rows it
could not check. They are selected here by SQL derived from the very expectations GX ran
(``audit.validate.expectation_sql.unchecked_rows_sql``), by the engine that holds the tables,
and labelled with the first declared cause below that holds for the row: the input that
was missing. Every such row is kept in ``RUN_DIR/unchecked.parquet``; the counts and the
first rows per (invariant, input) go into summary.json and the report.

Rules (docs/invariants.md, "Coverage"), applied by ``audit.validate.results.fold``:
an invariant with unchecked rows is never ``pass`` (at least ``warn``, naming them); one
that checked nothing and left nothing unchecked is ``skipped`` ("nothing in scope", or
"not collected" where its table was not computed); a GO / NO-GO job answers GO only when
its gating invariants left nothing unchecked (``audit.validate.gating``).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

from audit.compare.tables import KEY_COLUMNS, ROWS
from audit.validate.gaps import Gap
from audit.validate.keys import keyed_select, parse_key
from audit.validate.results import CheckOutcome

log = logging.getLogger(__name__)

UNCHECKED_FILE = "unchecked.parquet"
FIRST_ROWS = 5


def _reason_sql(table: str, column_fallback: str) -> str:
    causes = ROWS[table].causes if table in ROWS else ()
    arms = " ".join(f"WHEN {c.where} THEN '{c.missing}'" for c in causes if not c.passed_unverified)
    fallback = f"'{column_fallback}'"
    return f"CASE {arms} ELSE {fallback} END" if arms else fallback


def unchecked_sql(checks_by_invariant: dict[str, list[CheckOutcome]]) -> str | None:
    """One query giving every unchecked row as (invariant, key_columns, key, missing), each
    row once per invariant and input; None when no check can leave a row unchecked."""
    selects = []
    for inv_id, checks in checks_by_invariant.items():
        for check in checks:
            # A check's count of unchecked rows is known (its evaluation): where it is 0 its
            # rows are not looked for (on a healthy pair, no query at all).
            if check.unchecked_sql is None or check.missing == 0 or check.table not in KEY_COLUMNS:
                continue
            judged = ", ".join(check.columns) or "the judged column"
            reason = _reason_sql(check.table, f"{judged} (could not be computed)".replace("'", ""))
            selects.append(keyed_select(inv_id, check.table, check.unchecked_sql, f"{reason} AS missing"))
    for inv_id, checks in checks_by_invariant.items():  # rows its checks pass without verifying
        for table in sorted({c.table for c in checks if c.table in ROWS}):
            for cause in ROWS[table].causes:
                if cause.passed_unverified:
                    selects.append(keyed_select(inv_id, table, cause.where, f"'{cause.missing}' AS missing"))
    if not selects:
        return None
    return "SELECT DISTINCT * FROM (\n" + "\nUNION ALL\n".join(selects) + "\n) u"


def collect_gaps(
    tables: Any, checks_by_invariant: dict[str, list[CheckOutcome]], run_dir: Path
) -> dict[str, tuple[Gap, ...]]:
    """Every unchecked row into ``RUN_DIR/unchecked.parquet`` (by the engine that holds the
    tables), and per invariant its gaps: how many rows each missing input left unchecked,
    and the first few. Checks with no SQL form count what GX called missing."""
    sql = unchecked_sql(checks_by_invariant)
    gaps: dict[str, list[Gap]] = defaultdict(list)
    if sql is not None:
        # Written once, then ranked from the file: the union over every table is not
        # computed a second time.
        tables.export(sql, run_dir / UNCHECKED_FILE, "unchecked_rows")
        ranked = f"""
SELECT invariant, key_columns, key, missing, n FROM (
  SELECT invariant, key_columns, key, missing,
    count(*) OVER (PARTITION BY invariant, missing) AS n,
    row_number() OVER (PARTITION BY invariant, missing ORDER BY key_columns, key) AS r
  FROM {{unchecked_rows}} all_rows
) ranked WHERE r <= {FIRST_ROWS} ORDER BY invariant, n DESC, missing, key_columns, key
"""
        grouped: dict[tuple[str, str], tuple[int, tuple[str, ...], list[dict[str, Any]]]] = {}
        for row in tables.rows(ranked):
            columns = tuple(str(row["key_columns"]).split(","))
            slot = grouped.setdefault((row["invariant"], row["missing"]), (int(row["n"]), columns, []))
            slot[2].append(parse_key(row["key"], columns))
        for (inv_id, missing), (n, columns, first) in grouped.items():
            gaps[inv_id].append(Gap(missing, n, columns, tuple(first)))
    for inv_id, checks in checks_by_invariant.items():
        for check in checks:
            if check.unchecked_sql is None and check.missing > 0:
                judged = ", ".join(check.columns) or check.description
                gaps[inv_id].append(Gap(f"{judged} (rows not listed)", check.missing, (), ()))
    return {k: tuple(v) for k, v in gaps.items()}
