"""Every comparison table's row names (key and example columns), gathered from where
each table is declared: the SQL comparisons (``Comparison.rows``) and the data-level
tables (``TableRows`` beside their PySpark code). The validator labels examples, and the
history keys violations, from here alone."""

from __future__ import annotations

from audit.compare import batches, cluster_mirroring, failover, mm2, records
from audit.compare.sql import TableRows

ROWS: dict[str, TableRows] = {
    rows.table: rows
    for rows in (
        *(c.rows for c in cluster_mirroring.COMPARISONS),
        *(c.rows for c in failover.VERIFY + failover.FAILBACK),
        *(c.rows for c in mm2.COMPARISONS),
        *batches.ROWS,
        records.ROWS,
    )
}

# A violation's key in the history: the columns that identify its row.
KEY_COLUMNS: dict[str, tuple[str, ...]] = {table: rows.key for table, rows in ROWS.items()}

# The columns that label each offending row in the examples: its key, then both sides'
# values a person needs to judge it.
EXAMPLE_COLUMNS: dict[str, list[str]] = {table: rows.example_columns for table, rows in ROWS.items()}
