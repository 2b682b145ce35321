"""What every benchmark needs beside its own measurement."""

from __future__ import annotations

import logging
import os
import signal
import time

from confluent_kafka import Consumer, TopicPartition

from audit.sandbox.processes import SANDBOX_JVM, run_tool
from audit.sandbox.state import SandboxState

log = logging.getLogger("bench")

# The brokers a benchmark reads, and Kafka's tools it times, run as in production: the
# server compiler and G1, not the sandbox's quick-starting default.
os.environ.setdefault(SANDBOX_JVM, "server")


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


def cli_baseline(state: SandboxState, heap_mb: int = 512, timeout: float = 600) -> float:
    """What an operator runs by hand for a readiness answer, timed: kafka-get-offsets and
    kafka-consumer-groups --describe --all-groups on both clusters (strictly less than the
    audit does)."""
    started = time.perf_counter()
    for cluster in state.clusters:
        for main, args in (
            ("org.apache.kafka.tools.GetOffsetShell", ["--bootstrap-server", cluster.bootstrap]),
            (
                "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                ["--bootstrap-server", cluster.bootstrap, "--describe", "--all-groups"],
            ),
        ):
            tool_started = time.perf_counter()
            proc = run_tool(state, main, args, timeout=timeout, heap_mb=heap_mb)
            if proc.returncode != 0:
                raise SystemExit(f"{main} failed: {proc.stderr[-800:]}")
            log.info(
                "%s on %s: %.1fs", main.rsplit(".", 1)[1], cluster.name, time.perf_counter() - tool_started
            )
    return time.perf_counter() - started
