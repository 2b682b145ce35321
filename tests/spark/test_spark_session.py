from __future__ import annotations

from typing import Any


def test_session_is_small_local_and_quiet(spark: Any) -> None:
    conf = spark.sparkContext.getConf()
    assert spark.sparkContext.master == "local[2]"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert conf.get("spark.ui.enabled") == "false"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


def test_session_runs_a_shuffle(spark: Any) -> None:
    from pyspark.sql import functions as F

    df = spark.createDataFrame([("a", 1), ("b", 2), ("a", 3)], "k string, v long")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        grouped = df.groupBy("k").agg(F.sum("v").alias("s"))
        assert grouped.rdd.getNumPartitions() == 2
        assert sorted(tuple(r) for r in grouped.collect()) == [("a", 4), ("b", 2)]
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
