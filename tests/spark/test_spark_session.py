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


def test_python_workers_come_from_the_audit_daemon(spark: Any) -> None:
    # Without it every Python task re-reads the spark-core jar's directory (see
    # audit.spark_daemon): the workers must have been forked from a process that patched it.
    def worker_state(rows: Any) -> Any:  # nested: pickled by value, not by module name
        import zipimport

        for _ in rows:
            pass
        yield bool(getattr(zipimport.zipimporter.invalidate_caches, "_audit_lazy", False))

    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == "audit.spark_daemon"
    assert spark.sparkContext.parallelize(range(2), 2).mapPartitions(worker_state).collect() == [True, True]


def test_record_ranges_reach_the_tasks_as_dealt(spark: Any) -> None:
    """scan_records relies on one Spark partition per group, in order, without a shuffle."""
    from audit.collect.records.read import task_frame

    groups = [
        [("source", "t", 0, 0, 10, False), ("source", "t", 1, 0, 10, False)],
        [("destination", "t", 0, 0, 10, False)],
        [("destination", "t", 1, 0, 10, True)],
    ]
    frame = task_frame(spark, groups)
    assert [[tuple(r) for r in part] for part in frame.rdd.glom().collect()] == groups
    assert task_frame(spark, []).count() == 0
