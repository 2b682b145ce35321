"""Both clusters' chunks side by side, and when a chunk agrees: one definition for the
collect stage (which chunks to narrow) and the compare stage (CM-DATA-1's status)."""

from __future__ import annotations

from typing import Any

from audit.schemas import CHUNK_SIDE

CHUNK_KEY = ("topic", "partition", "chunk_start", "chunk_end")


def paired_chunks(src_chunks: Any, dst_chunks: Any) -> Any:
    """One row per chunk read on either side: both sides' fields under ``src_``/``dst_``,
    whether each side has it, whether the topic is compacted, and ``agree``: the chunk is
    on both sides with equal checksums and, unless the topic is compacted (where each log
    cleaner leaves holes of its own), equal gaps. A chunk that does not agree is narrowed
    to its first divergent record and judged by CM-DATA-1."""
    from pyspark.sql import functions as F

    def side(df: Any, prefix: str) -> Any:
        return df.select(*CHUNK_KEY, *[F.col(c).alias(prefix + c) for c in CHUNK_SIDE]).withColumn(
            f"{prefix}present", F.lit(True)
        )

    both = F.col("src_present") & F.col("dst_present")
    checksums_equal = F.col("src_checksum") == F.col("dst_checksum")
    gaps_equal = F.col("src_gaps_checksum") == F.col("dst_gaps_checksum")
    return (
        side(src_chunks, "src_")
        .join(side(dst_chunks, "dst_"), list(CHUNK_KEY), "full_outer")
        .withColumn("src_present", F.coalesce("src_present", F.lit(False)))
        .withColumn("dst_present", F.coalesce("dst_present", F.lit(False)))
        .withColumn("compacted", F.coalesce("src_compacted", "dst_compacted", F.lit(False)))
        .withColumn("agree", both & checksums_equal & (gaps_equal | F.col("compacted")))
    )
