"""Sandbox traffic: produce and read records on a sandbox cluster with confluent-kafka.

Only for the sandbox's own clusters (the demo and the tests); the auditor itself never
writes to a cluster it audits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from audit.errors import SandboxError

log = logging.getLogger(__name__)


# librdkafka's own log lines (broker restarts are routine in the sandbox) go to this logger,
# kept quiet unless debugging, instead of raw lines on stderr.
_RDKAFKA = logging.getLogger("audit.sandbox.rdkafka")
_RDKAFKA.setLevel(logging.CRITICAL)


def client_conf(bootstrap: str, **settings: Any) -> dict[str, Any]:
    """Settings for a sandbox client: bootstrap plus the quiet librdkafka logger."""
    return {"bootstrap.servers": bootstrap, "logger": _RDKAFKA, **settings}


@dataclass(frozen=True)
class Record:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


def require_fresh_demo(bootstrap: str, topics: Iterable[str], workdir: Path) -> None:
    """Refuse to run a demo on a sandbox that already holds its topics: a second run's
    traffic would land on top of the first and the demo's expected findings would not hold."""
    existing = AdminClient(client_conf(bootstrap)).list_topics(timeout=30).topics
    if any(t in existing for t in topics):
        raise SandboxError(
            f"the sandbox in {workdir} already has demo topics: run 'mirror-audit sandbox down' first"
        )


def create_topic(
    bootstrap: str, topic: str, partitions: int = 1, replication: int = 1, **config: str
) -> None:
    admin = AdminClient(client_conf(bootstrap))
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=replication, config=config)],
        operation_timeout=30,
    )
    try:
        futures[topic].result(timeout=60)
    except KafkaException as exc:
        raise SandboxError(f"creating topic {topic} on {bootstrap} failed: {exc}") from exc


def produce(bootstrap: str, topic: str, records: Iterable[Record], partition: int | None = None) -> int:
    """Produce records idempotently and wait for every acknowledgement; returns the count."""
    producer = Producer(client_conf(bootstrap, **{"enable.idempotence": True, "linger.ms": 5}))
    errors: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(str(err))

    count = 0
    for r in records:
        headers: list[tuple[str, str | bytes | None]] | None = list(r.headers) or None
        if partition is None:
            producer.produce(topic, r.value, r.key, headers=headers, on_delivery=on_delivery)
        else:
            producer.produce(
                topic, r.value, r.key, partition=partition, headers=headers, on_delivery=on_delivery
            )
        count += 1
        producer.poll(0)
    remaining = producer.flush(60)
    if remaining or errors:
        raise SandboxError(
            f"producing to {topic} on {bootstrap} failed: {errors[:1] or [f'{remaining} undelivered']}"
        )
    return count


def scan_messages(
    bootstrap: str, topic: str, partition: int, start: int, end: int, isolation: str = "read_uncommitted"
) -> list[Message]:
    """Messages with offsets in [start, end) by assignment, without a group or any commit."""
    if start >= end:
        return []
    consumer = Consumer(
        client_conf(
            bootstrap,
            **{
                "group.id": "mirror-audit-sandbox-reader-unused",  # required by librdkafka; never joined
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": isolation,
                "enable.partition.eof": True,
            },
        )
    )
    out: list[Message] = []
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        while True:
            msg = consumer.poll(10)
            if msg is None:
                raise SandboxError(f"timed out reading {topic}-{partition} on {bootstrap}")
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    break
                raise SandboxError(f"reading {topic}-{partition} failed: {err}")
            offset = msg.offset()
            assert offset is not None  # a message without error always has an offset
            if offset >= end:
                break
            out.append(msg)
            if offset + 1 >= end:
                break
    finally:
        consumer.close()
    return out


def headers_of(msg: Message) -> tuple[tuple[str, bytes], ...]:
    raw = msg.headers() or []
    pairs = raw.items() if isinstance(raw, dict) else raw
    return tuple((k, v if isinstance(v, bytes) else b"") for k, v in pairs)


def high_watermark(bootstrap: str, topic: str, partition: int = 0) -> int:
    """A partition's high watermark, read with a consumer that never joins a group."""
    consumer = Consumer(client_conf(bootstrap, **{"group.id": "mirror-audit-never-joined"}))
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1])
    finally:
        consumer.close()


def read_partition(
    bootstrap: str, topic: str, partition: int, start: int, end: int, isolation: str = "read_uncommitted"
) -> list[tuple[int, Record]]:
    """Records with offsets in [start, end), keyed by offset."""
    return [
        (int(msg.offset() or 0), Record(msg.key(), msg.value(), headers_of(msg)))
        for msg in scan_messages(bootstrap, topic, partition, start, end, isolation)
    ]


def retry_group_call(what: str, call: Callable[[], Any], attempts: int = 40) -> Any:
    """Retry a group call while group coordinators load or move (after a cluster starts or
    the sandbox restarts a broker); other errors, or the last attempt's, raise SandboxError."""
    for attempt in range(attempts):
        try:
            return call()
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            retriable = isinstance(err, KafkaError) and (
                err.retriable()
                or err.code() in (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS)
            )
            if not retriable or attempt == attempts - 1:
                raise SandboxError(f"{what} failed: {exc}") from exc
            time.sleep(0.5)
    raise AssertionError("unreachable")


def commit_offsets(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit a group's offsets as a consumer of that group would (the sandbox's traffic;
    never done by the auditor), retrying while the group coordinator loads."""

    def commit() -> None:
        c = Consumer(client_conf(bootstrap, **{"group.id": group, "enable.auto.commit": False}))
        try:
            c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
        finally:
            c.close()

    retry_group_call(f"committing offsets of group {group} on {bootstrap}", commit)


# A KRaft controller refuses a CreateTopics request that would write more than about 10,000
# metadata records at once (POLICY_VIOLATION "Unable to perform excessively large batch
# operation"); each partition is a record, so large sandboxes create topics in chunks.
MAX_PARTITIONS_PER_REQUEST = 5_000


def create_topics(
    bootstrap: str,
    names: Iterable[str],
    partitions: int,
    replication: int = 1,
    max_partitions_per_request: int = MAX_PARTITIONS_PER_REQUEST,
    timeout: float = 600,
) -> int:
    """Create many topics of ``partitions`` each, as many per request as the controller
    takes; returns the number of requests."""
    admin = AdminClient(client_conf(bootstrap))
    names = list(names)
    per_request = max(1, max_partitions_per_request // max(1, partitions))
    requests = 0
    for i in range(0, len(names), per_request):
        chunk = names[i : i + per_request]
        futures = admin.create_topics(
            [NewTopic(n, num_partitions=partitions, replication_factor=replication) for n in chunk],
            operation_timeout=timeout,
            request_timeout=timeout,
        )
        requests += 1
        for name, future in futures.items():
            try:
                future.result(timeout=timeout)
            except KafkaException as exc:
                raise SandboxError(f"creating topic {name} on {bootstrap} failed: {exc}") from exc
    return requests


def commit_groups(bootstrap: str, commits: dict[str, dict[tuple[str, int], int]], threads: int = 8) -> None:
    """Commit many groups' offsets (OffsetCommit for groups without members, as each
    group's consumer would), ``threads`` kafka-python admin connections at a time: a
    librdkafka consumer per group costs a client start and a coordinator lookup each, and
    librdkafka's admin calls for group offsets run one after another per coordinator."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from kafka import KafkaAdminClient

    local = threading.local()
    admins: list[Any] = []

    def new_admin() -> Any:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), client_id="sandbox-commits")
        admins.append(admin)
        return admin

    def commit(group: str) -> None:
        if not hasattr(local, "admin"):
            local.admin = new_admin()
        if not _commit_group(local.admin, bootstrap, group, commits[group]):
            # kafka-python keeps a group's coordinator once found, also after the broker
            # said it is not (coordinators move while a new cluster settles): a new client.
            local.admin = new_admin()
            if not _commit_group(local.admin, bootstrap, group, commits[group], attempts_seconds=180):
                raise SandboxError(
                    f"committing offsets of group {group} on {bootstrap} failed: not coordinator"
                )

    try:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="commit") as pool:
            for _ in pool.map(commit, commits):
                pass
    finally:
        for admin in admins:
            admin.close()


def _commit_group(
    admin: Any, bootstrap: str, group: str, offsets: dict[tuple[str, int], int], attempts_seconds: float = 180
) -> bool:
    """Commit one group's offsets, retrying what is retriable for ``attempts_seconds``;
    False when the broker kept answering NOT_COORDINATOR for 5 s (the client's coordinator
    is stale)."""
    import kafka.errors
    from kafka import TopicPartition as KTopicPartition
    from kafka.structs import OffsetAndMetadata

    wanted = {KTopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
    started = time.monotonic()
    deadline = started + attempts_seconds  # a new cluster's group coordinators load first
    while True:
        try:
            errors = admin.alter_group_offsets(group, wanted)
            problem: object = {tp: e for tp, e in errors.items() if e.__name__ != "NoError"}
        except kafka.errors.KafkaError as exc:
            if not exc.retriable:
                raise SandboxError(
                    f"committing offsets of group {group} on {bootstrap} failed: {exc}"
                ) from exc
            problem = exc
        if not problem:
            return True
        if time.monotonic() > deadline:
            if isinstance(problem, dict) and all(
                e is kafka.errors.NotCoordinatorError for e in problem.values()
            ):
                return False
            raise SandboxError(f"committing offsets of group {group} on {bootstrap} failed: {problem}")
        time.sleep(0.5)
