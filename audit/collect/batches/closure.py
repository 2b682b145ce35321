"""Which marker closes each transaction, per partition and producer: one definition for
the collect stage (the last stable offset of partitions derived from segment files) and for
CM-TXN-3 (transactions left open below the LSO, or closed twice).

A Spark window per (topic, partition, producer): it grows with the batches and stays in
Spark.
"""

from __future__ import annotations

from typing import Any

from audit.collect.batches.format import CLOSING_TYPES


def transaction_closure(batches: Any) -> Any:
    """Transactional batches (data and control) with, for each data batch, the offset of
    the first ABORT or COMMIT of the same producer after it (``closing_offset``, null if
    none), and for each ABORT or COMMIT whether the producer's previous data batch or
    ABORT/COMMIT was an ABORT/COMMIT of the same producer epoch (``closes_twice``: a
    transaction closed twice).

    Only ABORT and COMMIT close a transaction. Other control types (the KIP-1279
    prototype's pid-reset, 7, written at a failover next to the ABORTs that close in-flight
    transactions) neither close one nor count as the previous marker: a pid-reset right
    after an ABORT of the same epoch is what a clean failover writes, not a double close."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    txn = batches.where("is_transactional").withColumn(
        "_closes", F.coalesce(F.col("is_control") & F.col("control_type").isin(*CLOSING_TYPES), F.lit(False))
    )
    by_producer = Window.partitionBy("topic", "partition", "producer_id").orderBy("base_offset")
    following = by_producer.rowsBetween(1, Window.unboundedFollowing)
    before = by_producer.rowsBetween(Window.unboundedPreceding, -1)
    marker_offset = F.when(F.col("_closes"), F.col("base_offset"))
    # The producer's previous data batch or closing marker, other control batches skipped.
    previous = F.last(
        F.when(~F.col("is_control") | F.col("_closes"), F.struct("_closes", "producer_epoch")),
        ignorenulls=True,
    ).over(before)
    same_epoch = F.col("_previous.producer_epoch") == F.col("producer_epoch")
    return (
        txn.withColumn("next_marker_offset", F.min(marker_offset).over(following))
        .withColumn("_previous", previous)
        .withColumn("closing_offset", F.when(~F.col("is_control"), F.col("next_marker_offset")))
        .withColumn(
            "closes_twice",
            F.when(
                F.col("is_control"),
                F.col("_closes") & F.coalesce(F.col("_previous._closes") & same_epoch, F.lit(False)),
            ),
        )
        .drop("next_marker_offset", "_previous", "_closes")
    )
