"""``mirror-audit demo --failover``: the failover lifecycle on the sandbox's real brokers,
from the readiness check before the stop to the failback check after it.

The continuous mirror (``mirror_process``) copies ``orders`` (3 partitions) and
``payments`` (1) and syncs the groups' offsets; destination leader epochs are raised
ahead of the source's by real leader moves. Then:

- healthy: producers stop, ``readiness`` waits until drained (GO, nothing to lose), the
  mirror stops as KIP-1279 stops it, ``failover verify`` finds zero records lost, and
  ``failback readiness`` is GO (the old source holds nothing past the stop).
- faulty: the mirror is paused on payments while 10 records are written there, so
  readiness predicts a loss of 10; producers keep writing 5 more through the stop and a
  transaction is left open on orders-1 (the stop aborts its copy with a real ABORT
  marker): verify finds 15 lost on payments-0, more than predicted (CM-FAILOVER-2). After
  the stop 4 records are written on the old source's orders-0: failback readiness counts
  exactly 19 records mirroring back would truncate (CM-FAILBACK-1) and flags the open
  transaction (CM-FAILBACK-3).

Each step is a run directory under the demo's: ``readiness``, ``verify`` and ``failback``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from audit.config import AuditConfig, ClusterConfig, OutputConfig, SparkConfig
from audit.drain import drained_readiness
from audit.errors import SandboxError
from audit.failover_jobs import failback_readiness, failover_verify
from audit.jobs import READINESS
from audit.pipeline import RunOutcome, nightly
from audit.run_dirs import new_run_dir
from audit.sandbox import mirror_control
from audit.sandbox.cluster import default_workdir
from audit.sandbox.demo_sandbox import demo_sandbox
from audit.sandbox.injected import InjectedFaults
from audit.sandbox.leaders import move_leaders
from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import Record, client_conf, commit_offsets, produce, require_fresh_demo
from audit.validate.invariants import named

log = logging.getLogger(__name__)

TOPICS = {"orders": 3, "payments": 1}
EPOCH_BUMPS = 3  # the destination leads the source's leader epochs by this much
PAUSED = ("payments", 0)
LAG_AT_CHECK = 10  # written on payments while the mirror is paused, before readiness
AFTER_CHECK = 5  # written on payments after readiness, through the stop
AFTER_STOP = ("orders", 0, 4)  # written on the old source after the stop
OPEN_AT_STOP = ("orders", 1, 3)  # a transaction open on the source at the stop

# The faulty demo's counts, which the runs' figures must equal.
PREDICTED_LOSS = LAG_AT_CHECK
REALIZED_LOSS = LAG_AT_CHECK + AFTER_CHECK
TRUNCATED = {
    f"{PAUSED[0]}-{PAUSED[1]}": LAG_AT_CHECK + AFTER_CHECK,
    f"{AFTER_STOP[0]}-{AFTER_STOP[1]}": AFTER_STOP[2],
}

# What each step says of the faulty demo (the healthy one: nothing fails or warns).
INJECTED = {
    "readiness": InjectedFaults(fail=frozenset(), warn=None),
    "verify": InjectedFaults(fail=frozenset({named.CM_FAILOVER_2}), warn=frozenset()),
    "failback": InjectedFaults(fail=frozenset({named.CM_FAILBACK_1, named.CM_FAILBACK_3}), warn=frozenset()),
}
HEALTHY = InjectedFaults(fail=frozenset(), warn=frozenset())


@dataclass(frozen=True)
class FailoverDemo:
    run_dir: Path
    steps: tuple[tuple[str, RunOutcome], ...]  # readiness, verify, failback

    @property
    def exit_code(self) -> int:
        """The verify's and the failback's verdicts (the readiness is their prediction)."""
        return max(outcome.exit_code for step, outcome in self.steps if step != "readiness")

    def problems(self, healthy: bool) -> list[str]:
        out = []
        for step, outcome in self.steps:
            injected = HEALTHY if healthy and step != "readiness" else INJECTED[step]
            out += [f"{step}: {p}" for p in injected.problems(outcome.summary)]
        return out


def failover_config(state: SandboxState, out_root: Path) -> AuditConfig:
    return AuditConfig(
        source=ClusterConfig(state.cluster("source").bootstrap, timeout_seconds=20),
        destination=ClusterConfig(state.cluster("destination").bootstrap, timeout_seconds=20),
        spark=SparkConfig(master="local[2]", conf={"spark.sql.shuffle.partitions": "4"}),
        output=OutputConfig(root=str(out_root)),
    )


def _create(bootstrap: str) -> None:
    admin = AdminClient(client_conf(bootstrap))
    futures = admin.create_topics(
        [NewTopic(t, num_partitions=n, replica_assignment=[[1, 2]] * n) for t, n in TOPICS.items()]
    )
    for f in futures.values():
        f.result(timeout=60)


def _records(prefix: str, n: int) -> list[Record]:
    return [Record(f"{prefix}-{i}".encode(), f'{{"n": {i}}}'.encode()) for i in range(n)]


def _traffic(src: str) -> None:
    for p in range(TOPICS["orders"]):
        produce(src, "orders", _records(f"order-{p}", 100), partition=p)
    produce(src, "payments", _records("pay", 50), partition=0)
    commit_offsets(src, "billing", {("orders", p): 80 for p in range(TOPICS["orders"])})
    commit_offsets(src, "shipping", {("payments", 0): 40})


def _open_transaction(src: str) -> Producer:
    topic, partition, n = OPEN_AT_STOP
    txn = Producer(client_conf(src, **{"transactional.id": "demo-failover-open"}))
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(n):
        txn.produce(topic, f"in-flight-{i}".encode(), partition=partition)
    txn.flush(30)
    return txn


def run_failover_demo(
    healthy: bool,
    out: Path | None = None,
    keep: bool = False,
    workdir: Path | None = None,
    output_root: Path = Path("reports"),
) -> FailoverDemo:
    workdir = workdir or default_workdir()
    with demo_sandbox(workdir, 2, keep, "failover demo") as state:
        open_txn: Producer | None = None
        try:
            src, dst = state.cluster("source").bootstrap, state.cluster("destination").bootstrap
            require_fresh_demo(src, TOPICS, workdir)
            _create(src)
            _create(dst)
            all_tps = [TopicPartition(t, p) for t, n in TOPICS.items() for p in range(n)]
            move_leaders(dst, all_tps, EPOCH_BUMPS)
            _traffic(src)
            mirror_control.start(state, topics="orders|payments", groups="billing|shipping")
            mirror_control.wait_caught_up(state)

            cfg = failover_config(state, output_root)
            run_dir = out if out is not None else new_run_dir(cfg)
            if healthy:
                status, drained = drained_readiness(cfg, run_dir / "readiness", timeout=120, interval=1.0)
                if drained is None:
                    raise SandboxError(f"the healthy demo did not drain within 120s: {status}")
                readiness = drained
            else:
                mirror_control.pause(state, [PAUSED[0]])
                mirror_control.wait_caught_up(state)  # a cycle has seen the pause
                produce(src, PAUSED[0], _records("pay-late", LAG_AT_CHECK), partition=PAUSED[1])
                mirror_control.wait_caught_up(state)
                readiness = nightly(cfg, run_dir / "readiness", job=READINESS, engine="local")
                # Producers keep writing after the check, and a transaction is in flight.
                produce(src, PAUSED[0], _records("pay-later", AFTER_CHECK), partition=PAUSED[1])
                open_txn = _open_transaction(src)
                mirror_control.wait_caught_up(state)

            mirror_control.failover(state)
            fo_cfg = replace(
                cfg, mirror=replace(cfg.mirror, state_file=str(mirror_control.state_path(state)))
            )
            verify = failover_verify(fo_cfg, run_dir / "readiness", run_dir / "verify", engine="local")
            if not healthy:
                topic, partition, n = AFTER_STOP
                produce(src, topic, _records("split-brain", n), partition=partition)
            failback = failback_readiness(fo_cfg, run_dir / "failback", engine="local")
            return FailoverDemo(
                run_dir, (("readiness", readiness), ("verify", verify), ("failback", failback))
            )
        finally:
            if open_txn is not None:
                try:
                    open_txn.abort_transaction(30)
                except Exception:  # the sandbox is going away or being cleared anyway
                    log.debug("aborting the demo's open transaction failed", exc_info=True)
            mirror_control.stop(state)
