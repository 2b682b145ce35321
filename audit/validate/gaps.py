"""A coverage gap: in-scope rows of one invariant left unchecked for want of one input, as
summary.json, the terminal and the report name them (``orders-0``, ``3 partitions``).
Apart from the coverage queries (``audit.validate.coverage``), so that the results and
the pages that show a gap need none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Gap:
    """In-scope rows of one invariant left unchecked for want of one input."""

    missing: str
    rows: int
    key_columns: tuple[str, ...]
    first: tuple[dict[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "missing": self.missing,
            "rows": self.rows,
            "unit": unit(self.key_columns, self.rows),
            "key_columns": list(self.key_columns),
            "first": list(self.first),
        }

    def describe(self) -> str:
        """``LastMirrorOffset missing for 3 partitions (first: orders-0, orders-1)``."""
        shown = ", ".join(row_label(r) for r in self.first[:3])
        more = ", ..." if self.rows > len(self.first[:3]) else ""
        first = f" (first: {shown}{more})" if shown else ""
        return f"{self.missing} missing for {self.rows} {unit(self.key_columns, self.rows)}{first}"


def unit(key_columns: tuple[str, ...], n: int) -> str:
    names = {
        ("topic", "partition"): "partition",
        ("group_id", "topic", "partition"): "group partition",
        ("topic",): "topic",
        ("group_id",): "group",
    }
    word = names.get(tuple(key_columns), "row")
    return word if n == 1 else word + "s"


def row_label(row: dict[str, Any]) -> str:
    """A row as a person names it: ``orders-0``, ``group g1 orders-0``."""
    if set(row) >= {"topic", "partition"}:
        where = f"{row['topic']}-{row['partition']}"
        return f"group {row['group_id']} {where}" if row.get("group_id") is not None else where
    return "/".join(str(v) for v in row.values())
