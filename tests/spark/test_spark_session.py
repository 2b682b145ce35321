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


def test_python_workers_run_with_the_allocator_auto_resolves_to(spark: Any) -> None:
    # spark.worker_malloc: auto (the fixture's default): mimalloc or jemalloc preloaded in
    # the workers where this machine has one (make test installs mimalloc), glibc's
    # malloc otherwise; read from the workers' own memory maps.
    from audit import worker_malloc

    def allocators(rows: Any) -> Any:
        for _ in rows:
            pass
        with open("/proc/self/maps") as f:
            maps = f.read()
        yield tuple(name for name in ("mimalloc", "jemalloc") if f"lib{name}" in maps)

    expected = worker_malloc.resolve("auto")
    assert spark.sparkContext.getConf().get(f"spark.executorEnv.{worker_malloc.ENV}") == "auto"
    seen = spark.sparkContext.parallelize(range(2), 2).mapPartitions(allocators).collect()
    if expected is None:
        assert seen == [(), ()]
    else:
        name = "mimalloc" if "mimalloc" in expected else "jemalloc"
        assert seen == [(name,), (name,)]


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
