"""Partition sizes from kafka-python's DescribeLogDirs answer, for the byte budget."""

from __future__ import annotations

import pytest

from audit.collect.metadata.log_dirs import bytes_per_offset, estimated_bytes_per_offset, replica_sizes
from audit.config import ClusterConfig
from audit.errors import ClusterError


def test_the_largest_replica_counts_and_future_replicas_and_offline_dirs_do_not() -> None:
    answer = [
        {
            "broker": 1,
            "log_dirs": [
                {
                    "error_code": 0,
                    "topics": [
                        {
                            "name": "t",
                            "partitions": [
                                {"partition_index": 0, "partition_size": 1000, "is_future_key": False},
                                {"partition_index": 1, "partition_size": 50, "is_future_key": False},
                            ],
                        }
                    ],
                },
                {  # a copy of t-1 being moved to this dir: not the partition's size
                    "error_code": 0,
                    "topics": [
                        {
                            "name": "t",
                            "partitions": [
                                {"partition_index": 1, "partition_size": 9999, "is_future_key": True}
                            ],
                        }
                    ],
                },
            ],
        },
        {
            "broker": 2,
            "log_dirs": [
                {
                    "error_code": 0,
                    "topics": [
                        {
                            "name": "t",
                            "partitions": [
                                {"partition_index": 0, "partition_size": 1200, "is_future_key": False}
                            ],
                        }
                    ],
                },
                {  # an offline log dir (KAFKA_STORAGE_ERROR): its figures mean nothing
                    "error_code": 56,
                    "topics": [
                        {
                            "name": "t",
                            "partitions": [
                                {"partition_index": 1, "partition_size": 7777, "is_future_key": False}
                            ],
                        }
                    ],
                },
            ],
        },
    ]
    assert replica_sizes(answer) == {("t", 0): 1200, ("t", 1): 50}


def test_bytes_per_offset_is_size_over_the_partitions_offsets() -> None:
    sizes = {("t", 0): 1200, ("t", 1): 50, ("gone", 0): 10}
    spans = {("t", 0): (100, 400), ("t", 1): (5, 5), ("unsized", 0): (0, 10)}
    assert bytes_per_offset(sizes, spans) == {("t", 0): 4.0}


def test_a_cluster_that_reports_no_sizes_stops_the_byte_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """DescribeLogDirs answers a caller without DESCRIBE on the cluster with no log dirs,
    not an error: an estimate of nothing must not pass for an empty budget."""
    from audit.collect.metadata import log_dirs

    monkeypatch.setattr(log_dirs, "partition_sizes", lambda *_: {})
    with pytest.raises(ClusterError, match=r"reported no partition sizes; .*max_records_per_run"):
        estimated_bytes_per_offset("source", ClusterConfig("x:9092"), {("t", 0): (0, 10)})
    monkeypatch.setattr(log_dirs, "partition_sizes", lambda *_: {("t", 0): 50})
    assert estimated_bytes_per_offset("source", ClusterConfig("x:9092"), {("t", 0): (0, 10)}) == {
        ("t", 0): 5.0
    }
    assert estimated_bytes_per_offset("source", ClusterConfig("x:9092"), {}) == {}
