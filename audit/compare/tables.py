"""Every comparison table's row names (key and example columns), gathered from where
each table is declared: the SQL comparisons (``Comparison.rows``) and the data-level
tables (``TableRows`` beside their PySpark code). The validator labels examples, and the
history keys violations, from here alone."""

from __future__ import annotations

from audit.compare import batches, cluster_mirroring, failover, mm2, records
from audit.compare.sql import TableRows

_COMPARISONS = (*cluster_mirroring.COMPARISONS, *failover.VERIFY, *failover.FAILBACK)
_DATA_LEVEL = (*batches.ROWS, records.ROWS)

ROWS: dict[str, TableRows] = {
    rows.table: rows for rows in (*(c.rows for c in (*_COMPARISONS, *mm2.COMPARISONS)), *_DATA_LEVEL)
}

# The tables computed only where the snapshots carry what they compare: a comparison that
# requires an input a snapshot may lack (a mirror's state, record digests) and the
# data-level tables of a scan. A suite over one that was not computed is skipped as not
# collected; over any other, its absence is an error.
OPTIONAL: frozenset[str] = frozenset(
    {c.table for c in (*_COMPARISONS, *mm2.COMPARISONS) if c.requires} | {r.table for r in _DATA_LEVEL}
)

# A violation's key in the history: the columns that identify its row.
KEY_COLUMNS: dict[str, tuple[str, ...]] = {table: rows.key for table, rows in ROWS.items()}

# The columns that label each offending row in the examples: its key, then both sides'
# values a person needs to judge it.
EXAMPLE_COLUMNS: dict[str, list[str]] = {table: rows.example_columns for table, rows in ROWS.items()}
