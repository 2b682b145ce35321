"""``mirror-audit demo --mode mm2``: the nightly audit of a real MirrorMaker 2.

Source traffic (keys, headers; no transactions: MM2 does not copy their markers, which
would skew the replica's offsets against the source's) is mirrored by a real MirrorMaker 2
(``audit/sandbox/mm2.py``) with checkpoints and group offset sync on. Consumer groups
commit on the source; the demo waits until MM2 has checkpointed and synced every group,
then runs the nightly audit in mode mm2. Without ``--healthy`` three faults come first:

- billing: a consumer of the group runs on the target during the audit (MM2-READY-1);
- payments: records are deleted on the target past the checkpoint of the analytics group,
  so that checkpoint points below the replica's log start (MM2-CKPT-2), and so does the
  offset MirrorMaker 2 already synced into the target group (CM-GROUP-2);
- orders-2: MirrorMaker 2 stopped, 20 more records written, its committed position moved
  past 10 of them in Connect's offsets topic, and started again: those 10 never reach the
  replica (MM2-DATA-1, from source offset 200).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from audit.config import (
    AuditConfig,
    ClusterConfig,
    MirrorConfig,
    Mm2Config,
    OutputConfig,
    RecordsConfig,
    SparkConfig,
)
from audit.errors import SandboxError
from audit.pipeline import RunOutcome, nightly
from audit.sandbox import mm2
from audit.sandbox.cluster import default_workdir
from audit.sandbox.demo_sandbox import demo_sandbox
from audit.sandbox.injected import InjectedFaults
from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import (
    Record,
    client_conf,
    commit_offsets,
    create_topic,
    produce,
    require_fresh_demo,
    retry_group_call,
)
from audit.validate.invariants import named

log = logging.getLogger(__name__)

TOPICS = {"orders": 3, "payments": 1}
COMMITS = {
    "billing": {("orders", p): 150 for p in range(3)},
    "analytics": {("payments", 0): 40},
    "shipping": {("orders", 0): 120},
}
OPTIONS = mm2.Mm2Options(
    topics="orders|payments", groups="billing|analytics|shipping", sync_group_offsets=True
)
# What the faults above make the audit fail (warnings are not part of this demo's promise).
INJECTED = InjectedFaults(
    fail=frozenset(
        {named.MM2_CKPT_2, named.MM2_READY_1, named.CM_GROUP_2, named.MM2_DATA_1, named.MM2_SKIP_1}
    )
)
# The skip: records written on orders-2 while MirrorMaker 2 is stopped, and how many of
# them its moved position makes it pass over.
SKIP_PARTITION, SKIP_WRITTEN, SKIPPED = 2, 20, 10


def _remote(topic: str) -> str:
    return mm2.remote_topic(topic, OPTIONS)


def _orders(p: int, first: int, count: int) -> list[Record]:
    return [
        Record(f"order-{p}-{i}".encode(), f'{{"amount": {i}}}'.encode(), (("trace-id", f"{p}-{i}".encode()),))
        for i in range(first, first + count)
    ]


def _traffic(src: str) -> None:
    for p in range(TOPICS["orders"]):
        produce(src, "orders", _orders(p, 0, 200), partition=p)
    produce(
        src, "payments", [Record(f"pay-{i}".encode(), f"{i * 10}".encode()) for i in range(50)], partition=0
    )


def _target_offsets(dst: str, group: str) -> dict[tuple[str, int], int]:
    admin = AdminClient(client_conf(dst))

    def call() -> dict[tuple[str, int], int]:
        res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(
            timeout=30
        )
        return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions or [] if tp.offset >= 0}

    result: dict[tuple[str, int], int] = retry_group_call(f"reading offsets of {group}", call)
    return result


def _wait_mirrored(
    src: str, dst: str, synced_groups: set[str], timeout: float = 300.0, skipped: int = 0
) -> None:
    """Until every commit is checkpointed at its offset and synced into the target group
    (for ``synced_groups``), and every replica has all the source's records (but the
    ``skipped`` of orders-2), the same in two polls a second apart: a checkpoint can still
    improve once a later offset sync arrives, and the audit should not start between the two."""
    src_admin_c = Consumer(client_conf(src, **{"group.id": "mirror-audit-demo-never-joined"}))
    dst_admin_c = Consumer(client_conf(dst, **{"group.id": "mirror-audit-demo-never-joined"}))
    deadline = time.monotonic() + timeout
    previous: object = None
    try:
        while True:
            waiting = []
            seen = []
            for topic, n in TOPICS.items():
                for p in range(n):
                    _, src_high = src_admin_c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                    _, dst_high = dst_admin_c.get_watermark_offsets(
                        TopicPartition(_remote(topic), p), timeout=10
                    )
                    if (topic, p) == ("orders", SKIP_PARTITION):
                        src_high -= skipped
                    if dst_high < src_high:
                        waiting.append(f"{_remote(topic)}-{p} at {dst_high} of {src_high}")
            checkpoints = mm2.latest_checkpoints(dst)
            for group, offsets in COMMITS.items():
                target = _target_offsets(dst, group) if group in synced_groups else {}
                for (topic, p), committed in offsets.items():
                    ck = checkpoints.get((group, _remote(topic), p))
                    synced = target.get((_remote(topic), p))
                    seen.append((group, topic, p, ck, synced))
                    if ck is None or ck[0] != committed:
                        waiting.append(f"checkpoint of {group} on {topic}-{p}")
                    elif group in synced_groups and synced != ck[1]:
                        waiting.append(f"offset sync of {group} on {topic}-{p}")
            if not waiting and seen == previous:
                return
            previous = None if waiting else seen
            if time.monotonic() > deadline:
                what = ", ".join(waiting[:4]) or "its checkpoints and synced offsets kept changing"
                raise SandboxError(f"MirrorMaker 2 did not catch up within {timeout:.0f}s: {what}")
            time.sleep(1.0)
    finally:
        src_admin_c.close()
        dst_admin_c.close()


class _LiveConsumer:
    """A consumer of ``group`` running on the target while the audit runs: an application
    already started there (the failover precondition MM2-READY-1 checks)."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self._stop = threading.Event()
        self._joined = threading.Event()
        self._consumer = Consumer(
            client_conf(
                bootstrap, **{"group.id": group, "enable.auto.commit": False, "auto.offset.reset": "latest"}
            )
        )
        self._consumer.subscribe([topic], on_assign=lambda c, parts: self._joined.set())
        self._thread = threading.Thread(target=self._run, name=f"live-{group}", daemon=True)
        self._thread.start()
        if not self._joined.wait(60):
            self.close()
            raise SandboxError(f"the demo's consumer of {group} did not join its group on the target")

    def _run(self) -> None:
        while not self._stop.is_set():
            self._consumer.poll(0.2)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()


def _skip(state: SandboxState, src: str, dst: str) -> None:
    """MirrorMaker 2 made to skip records: stopped, records written, its committed position
    moved past some of them, started again."""
    mm2.stop(state)
    produce(src, "orders", _orders(SKIP_PARTITION, 200, SKIP_WRITTEN), partition=SKIP_PARTITION)
    mm2.move_position(state, "orders", SKIP_PARTITION, SKIPPED)
    mm2.start(state, OPTIONS)
    _wait_mirrored(src, dst, synced_groups=set(COMMITS), skipped=SKIPPED)


def demo_config(state: SandboxState, out_root: Path) -> AuditConfig:
    return AuditConfig(
        mode="mm2",
        source=ClusterConfig(state.cluster("source").bootstrap, timeout_seconds=20),
        destination=ClusterConfig(state.cluster("destination").bootstrap, timeout_seconds=20),
        mirror=MirrorConfig(mm2=Mm2Config(sync_group_offsets=True)),
        # Record by record (MM2-DATA-*): every record of both sides, as its content digest.
        records=RecordsConfig(enabled=True),
        spark=SparkConfig(master="local[2]", conf={"spark.sql.shuffle.partitions": "4"}),
        output=OutputConfig(root=str(out_root)),
    )


def run_mm2_demo(
    healthy: bool,
    out: Path | None = None,
    keep: bool = False,
    workdir: Path | None = None,
    output_root: Path = Path("reports"),
) -> RunOutcome:
    workdir = workdir or default_workdir()
    with demo_sandbox(workdir, 1, keep, "MirrorMaker 2 demo") as state:
        live: _LiveConsumer | None = None
        try:
            src, dst = state.cluster("source").bootstrap, state.cluster("destination").bootstrap
            require_fresh_demo(src, TOPICS, workdir)
            for topic, n in TOPICS.items():
                create_topic(src, topic, partitions=n)
            mm2.start(state, OPTIONS)
            _traffic(src)
            for group, offsets in COMMITS.items():
                commit_offsets(src, group, offsets)
            _wait_mirrored(src, dst, synced_groups=set(COMMITS))
            if not healthy:
                _skip(state, src, dst)
                live = _LiveConsumer(dst, "billing", _remote("orders"))
                # Retention on the target passes analytics' checkpoint (40 on payments-0).
                cut = TopicPartition(_remote("payments"), 0, 45)
                admin = AdminClient(client_conf(dst))  # held: a collected client never completes its futures
                admin.delete_records([cut])[cut].result(timeout=60)
            return nightly(demo_config(state, output_root), out)
        finally:
            if live is not None:
                live.close()
            if keep:
                log.info("MirrorMaker 2 left running: mirror-audit sandbox mm2-stop")
            else:
                mm2.stop(state)
