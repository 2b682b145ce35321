"""Partition sizes on the brokers' disks, for the record scan's byte budget.

confluent-kafka has no DescribeLogDirs call; kafka-python 3.x does, so this adapter uses
it with the same client settings as the transaction admin calls. A size is what a replica
holds on disk (all its segments, compressed as stored), which is close to what reading
the partition fetches; the largest replica is taken, and a replica being moved between a
broker's log dirs (a "future" replica) is left out, since it is a copy in progress.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from audit.collect.metadata.transactions import kafka_python_admin, kafka_python_settings
from audit.config import ClusterConfig
from audit.errors import ClusterError


def replica_sizes(responses: Iterable[dict[str, Any]]) -> dict[tuple[str, int], int]:
    """The largest replica size of each partition in kafka-python's describe_log_dirs
    answer (per broker, per log dir), skipping log dirs that report an error (offline)."""
    sizes: dict[tuple[str, int], int] = {}
    for broker in responses:
        for log_dir in broker.get("log_dirs", []):
            if log_dir.get("error_code", 0):
                continue
            for topic in log_dir.get("topics", []):
                for p in topic.get("partitions", []):
                    if p.get("is_future_key"):
                        continue
                    tp = (topic["name"], int(p["partition_index"]))
                    sizes[tp] = max(sizes.get(tp, 0), int(p["partition_size"]))
    return sizes


# What to do when the sizes are missing, for every error that says so.
_NEEDED = (
    "records.max_bytes_per_run needs them (DescribeLogDirs, DESCRIBE on the cluster): check the "
    "cluster and that grant, or budget with records.max_records_per_run"
)


def partition_sizes(role: str, cfg: ClusterConfig, topics: Iterable[str]) -> dict[tuple[str, int], int]:
    """Bytes on disk of every partition of ``topics`` on the ``role`` cluster. Raises
    ClusterError naming what to do when the cluster cannot or will not say."""
    settings = kafka_python_settings(cfg)
    if isinstance(settings, str):
        raise ClusterError(f"{role} cluster: partition sizes unavailable: {settings}")
    try:
        with kafka_python_admin(settings) as admin:
            return replica_sizes(admin.describe_log_dirs(sorted(set(topics))))
    except Exception as exc:  # kafka-python raises many error types; all mean "not available"
        name = type(exc).__name__
        detail = str(exc) if str(exc).startswith(name) else f"{name}: {exc}"
        raise ClusterError(f"{role} cluster: partition sizes unavailable ({detail}); {_NEEDED}") from None


def bytes_per_offset(
    sizes: dict[tuple[str, int], int], spans: dict[tuple[str, int], tuple[int, int]]
) -> dict[tuple[str, int], float]:
    """Average bytes per offset of each partition: its size over its [log start, end)."""
    return {tp: sizes[tp] / (hi - lo) for tp, (lo, hi) in spans.items() if tp in sizes and hi > lo}


def estimated_bytes_per_offset(
    role: str, cfg: ClusterConfig, spans: dict[tuple[str, int], tuple[int, int]]
) -> dict[tuple[str, int], float]:
    """Bytes per offset of the partitions in ``spans`` (their [log start, end) on the
    ``role`` cluster), from their sizes on its disks. Raises ClusterError when the cluster
    says nothing about any of them (DescribeLogDirs answers an unauthorized caller with no
    log dirs rather than an error)."""
    estimate = bytes_per_offset(partition_sizes(role, cfg, {t for t, _ in spans}), spans)
    if spans and not estimate:
        raise ClusterError(f"{role} cluster: DescribeLogDirs reported no partition sizes; {_NEEDED}")
    return estimate
