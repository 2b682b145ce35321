"""Real leader moves on the sandbox's brokers: how the demos raise leader epochs the way a
mirror's epoch bumps (or a failover's) do, with the brokers' own elections.

Each move reorders a partition's replicas (a reassignment that moves no data) and runs a
preferred election, so the new first replica leads and the controller raises the leader
epoch by one. It needs two replicas in sync; no broker is restarted.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient

from audit.errors import SandboxError
from audit.sandbox.traffic import client_conf


def wait_leader(bootstrap: str, topic: str, partition: int, leader: int, timeout: float = 60) -> None:
    admin = AdminClient(client_conf(bootstrap))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=10).topics[topic].partitions[partition]
        if md.leader == leader:
            return
        time.sleep(0.3)
    raise SandboxError(
        f"leadership of {topic}-{partition} did not move to broker {leader} within {timeout:.0f}s"
    )


def elect_preferred(bootstrap: str, tps: Sequence[TopicPartition]) -> None:
    admin = AdminClient(client_conf(bootstrap))
    admin.elect_leaders(ElectionType.PREFERRED, list(tps)).result(timeout=60)


def wait_in_sync(bootstrap: str, tps: Sequence[TopicPartition], timeout: float = 60) -> None:
    admin = AdminClient(client_conf(bootstrap))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=10).topics
        isrs = {(t, p): info.isrs for t, m in md.items() for p, info in m.partitions.items()}
        if all(len(isrs.get((tp.topic, tp.partition), ())) >= 2 for tp in tps):
            return
        time.sleep(0.3)
    raise SandboxError("replicas did not rejoin the ISR in time")


def _replicas(
    admin: AdminClient, tps: Sequence[TopicPartition], timeout: float = 60
) -> dict[tuple[str, int], list[int]]:
    """Each partition's replica list, once the metadata answer holds every one of them: a
    topic created a moment ago may not be in the answering broker's metadata yet."""
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(timeout=10).topics
        known = {(t, p): list(info.replicas) for t, m in md.items() for p, info in m.partitions.items()}
        missing = [f"{tp.topic}-{tp.partition}" for tp in tps if (tp.topic, tp.partition) not in known]
        if not missing:
            return {(tp.topic, tp.partition): known[(tp.topic, tp.partition)] for tp in tps}
        if time.monotonic() > deadline:
            raise SandboxError(f"{', '.join(missing)} not in the cluster's metadata within {timeout:.0f}s")
        time.sleep(0.3)


def move_leaders(bootstrap: str, tps: Sequence[TopicPartition], times: int = 1) -> None:
    """Raise each partition's leader epoch by ``times``: per round, the replica list rotated
    by one (kafka-python's AlterPartitionReassignments: librdkafka has no call for it) and a
    preferred election."""
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KTopicPartition

    if not tps:
        return
    replicas = _replicas(AdminClient(client_conf(bootstrap)), tps)
    single = sorted(f"{t}-{p}" for (t, p), r in replicas.items() if len(r) < 2)
    if single:
        raise SandboxError(
            f"{', '.join(single)} has one replica: a leader move needs two (sandbox up --brokers 2)"
        )
    kadmin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        for _ in range(times):
            wait_in_sync(bootstrap, tps)
            for key in replicas:
                replicas[key] = replicas[key][1:] + replicas[key][:1]
            errors = kadmin.alter_partition_reassignments(
                {KTopicPartition(t, p): r for (t, p), r in replicas.items()}, timeout_ms=30_000
            )
            failed = {f"{tp.topic}-{tp.partition}": e for tp, e in errors.items() if e is not None}
            if failed:
                raise SandboxError(f"reordering replicas was refused: {failed}")
            _wait_reassigned(bootstrap, replicas)
            elect_preferred(bootstrap, tps)
            for (t, p), r in replicas.items():
                wait_leader(bootstrap, t, p, r[0])
    finally:
        kadmin.close()


def _wait_reassigned(bootstrap: str, replicas: dict[tuple[str, int], list[int]], timeout: float = 60) -> None:
    """Until the metadata shows the new replica order (a reorder moves no data: at once)."""
    admin = AdminClient(client_conf(bootstrap))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(timeout=10).topics
        if all(list(md[t].partitions[p].replicas) == r for (t, p), r in replicas.items()):
            return
        time.sleep(0.2)
    raise SandboxError("the reordered replica lists did not show in the metadata in time")
