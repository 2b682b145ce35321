"""The audit submitted to a Spark standalone cluster (a master and two workers on loopback,
started from pyspark's own spark-class) with spark-submit, as docs/operations.md tells users:
its tables and summary equal those of the same snapshots run in this process's local
session, and spark-submit's --master wins over the configuration file's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from audit.pipeline import audit_snapshots
from audit.sandbox import spark_cluster
from tests.cli import submit_cli
from tests.snapshots import faulty_pair
from tests.spark.test_engine_parity import FAULTY_CFG, KEYS, _comparable, _sorted_rows

# spark.master is spark-submit's (it wins); the shuffle partitions come from here (the
# spark section fills in what spark-submit did not set).
CONFIG = (
    "scope:\n  groups:\n    exclude: ['private']\n"
    "spark:\n  master: local[1]\n  conf:\n    spark.sql.shuffle.partitions: '2'\n"
)


def test_a_standalone_cluster_run_equals_the_local_one_cell_by_cell(
    spark: Any, standalone: spark_cluster.SparkCluster, tmp_path: Path
) -> None:
    src, dst = faulty_pair(tmp_path / "snap")
    config = tmp_path / "audit.yaml"
    config.write_text(CONFIG)
    proc = submit_cli(
        standalone.master_url,
        "audit",
        "--config",
        str(config),
        "--source",
        str(src),
        "--destination",
        str(dst),
        "--out",
        str(tmp_path / "cluster"),
    )
    assert proc.returncode == 1, proc.stderr[-3000:]  # the faulty pair's FAIL
    on_cluster = json.loads((tmp_path / "cluster" / "summary.json").read_text())
    assert on_cluster["run"]["spark_master"] == standalone.master_url  # spark-submit's, not local[1]
    assert on_cluster["run"]["spark_executors_ran_tasks"] == 2
    # Its own output root: under the cluster run's, the local run's history would find it.
    local_dir = tmp_path / "local-root" / "local"
    local = audit_snapshots(src, dst, local_dir, FAULTY_CFG, engine="spark")
    assert _comparable(on_cluster) == _comparable(local.summary)
    tables = sorted(p.stem for p in (tmp_path / "cluster" / "compare").glob("*.parquet"))
    assert tables == sorted(p.stem for p in (local_dir / "compare").glob("*.parquet"))
    assert {"partitions", "group_offsets", "topics", "groups"} <= set(tables)
    for table in tables:
        c_schema, c_rows = _sorted_rows(tmp_path / "cluster" / "compare" / f"{table}.parquet", KEYS[table])
        l_schema, l_rows = _sorted_rows(local_dir / "compare" / f"{table}.parquet", KEYS[table])
        assert (c_schema.names, len(c_rows)) == (l_schema.names, len(l_rows)), table
        for c_row, l_row in zip(c_rows, l_rows, strict=True):
            assert c_row == l_row, (table, {k: (c_row[k], l_row[k]) for k in c_row if c_row[k] != l_row[k]})
