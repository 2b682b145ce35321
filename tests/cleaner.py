"""A sandbox cluster's log cleaner made prompt, for the live tests that need it to have run.

Kafka's cleaner looks for dirty logs every ``log.cleaner.backoff.ms`` (15 s by default); a test
waiting on it under load waited out its deadline once (CI, stop 50), with no way to tell a
slow cleaner from a dead one. These helpers shorten the backoff for the test's duration (a
dynamic broker setting, deleted again after) and name what the brokers' logs said of the
cleaner when it still did not run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from audit.sandbox.state import ClusterState
from audit.sandbox.traffic import client_conf

BACKOFF = "log.cleaner.backoff.ms"


def _set_backoff(cluster: ClusterState, backoff_ms: int | None) -> None:
    """Every broker's cleaner backoff set to ``backoff_ms``, or back to its static value."""
    op = AlterConfigOpType.SET if backoff_ms is not None else AlterConfigOpType.DELETE
    value = str(backoff_ms) if backoff_ms is not None else ""
    admin = AdminClient(client_conf(cluster.bootstrap))
    for node in cluster.nodes:
        if "broker" not in node.roles:
            continue
        broker = ConfigResource(
            "broker",
            str(node.node_id),
            incremental_configs=[ConfigEntry(BACKOFF, value, incremental_operation=op)],
        )
        # One broker resource per call: librdkafka refuses two.
        for future in admin.incremental_alter_configs([broker]).values():
            future.result(timeout=30)


@contextmanager
def prompt_cleaner(cluster: ClusterState, backoff_ms: int = 500) -> Iterator[None]:
    """``cluster``'s cleaners look for dirty logs every ``backoff_ms`` inside the block."""
    _set_backoff(cluster, backoff_ms)
    try:
        yield
    finally:
        _set_backoff(cluster, None)


def cleaner_lines(cluster: ClusterState, last: int = 20) -> str:
    """The brokers' last ``last`` log lines about the cleaner (its threads, its runs, its
    errors): what a failure message shows when a log was not compacted in time."""
    lines = [
        line
        for node in cluster.nodes
        if Path(node.log_path).exists()
        for line in Path(node.log_path).read_text(errors="replace").splitlines()
        if "Cleaner" in line or "log-cleaner" in line or "uncleanable" in line
    ]
    return "\n".join(lines[-last:]) or f"no cleaner lines in {cluster.name}'s broker logs"
