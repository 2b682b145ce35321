"""Partition sizes from kafka-python's DescribeLogDirs answer, for the byte budget."""

from __future__ import annotations

from audit.collect.log_dirs import bytes_per_offset, replica_sizes


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
