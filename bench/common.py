"""What every benchmark needs beside its own measurement."""

from __future__ import annotations

import signal

from confluent_kafka import Consumer, TopicPartition


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C, so the sandbox's brokers are stopped on the way out."""
    signal.signal(signal.SIGTERM, _interrupt)


def end_offsets(bootstrap: str, topic: str, partitions: int = 8) -> dict[int, int]:
    """Each partition's end offset (a group is named only because librdkafka wants one)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-never-joined"})
    try:
        return {
            p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)
        }
    finally:
        c.close()
