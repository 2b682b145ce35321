"""Compare: PySpark joins of two snapshots into one comparison table per concern.

Each table carries the derived columns the invariants read (lag, epoch headroom, the
clamped expected group offset, scope flags), so the checks in ``audit.validate`` are
single-column assertions and the same numbers feed the report.
"""
