"""Benchmark: `mirror-audit readiness` against the manual equivalent with Kafka's own CLI.

Sandbox with 2 x 1,000 partitions (source and destination) and 100 consumer groups on each;
both sides are timed in the same run, on the same brokers:

- ours:     mirror-audit readiness --config ... --out ...  (a fresh process: snapshot
            both, compare on the default readiness engine, validation, report, summary.json;
            no Data Docs, readiness's default); --engine spark also times the Spark engine and
            --with-data-docs readiness with output.readiness_data_docs, each for the record
- baseline: kafka-get-offsets for both clusters plus kafka-consumer-groups --describe
            --all-groups for both (what an operator runs by hand; it does strictly less).

With ``--mode mm2`` the topics are created on the source only and a real MirrorMaker 2
(the sandbox's, checkpoints and group offset sync on) replicates them as ``source.<topic>``
and checkpoints the groups, which commit on the source; readiness then runs in mode mm2
(the offset syncs and checkpoints topics read as well) on its default engine.

Run: make bench   (or .venv/bin/python bench/readiness.py [--mode mm2]). The last line is
RESULT readiness ours=<s> baseline=<s> ratio=<ours/baseline> (readiness-mm2 in mode mm2).
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import cli_baseline
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from audit.logs import setup_logging
from audit.sandbox.cluster import SandboxOptions, running
from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import commit_offsets

log = logging.getLogger("bench.readiness")


def _prepare_mm2(
    state: SandboxState, topics: int, partitions: int, groups: int, timeout: float = 900
) -> None:
    """Topics on the source with a record per partition, groups committed past it, then a
    real MirrorMaker 2 until every replica holds its record and every commit is
    checkpointed (or ``timeout``: readiness is timed on whatever it has then)."""
    from confluent_kafka import Producer

    from audit.sandbox import mm2

    names = [f"bench-{i:02d}" for i in range(topics)]
    src = state.cluster("source").bootstrap
    admin = AdminClient({"bootstrap.servers": src})
    futures = admin.create_topics(
        [NewTopic(n, num_partitions=partitions, replication_factor=1) for n in names]
    )
    for f in futures.values():
        f.result(timeout=120)
    producer = Producer({"bootstrap.servers": src, "enable.idempotence": True, "linger.ms": 20})
    for n in names:
        for p in range(partitions):
            producer.produce(n, b"v", b"k", partition=p)
            producer.poll(0)
    if producer.flush(120):
        raise SystemExit("producing the benchmark's records did not finish within 120 s")
    commits = 0
    for g in range(groups):
        topic = names[g % topics]
        offsets = {(topic, p): 1 for p in range(0, partitions, 10)}
        commit_offsets(src, f"bench-group-{g:03d}", offsets)
        commits += len(offsets)
    mm2.start(state, mm2.Mm2Options(topics="bench-.*", groups="bench-group-.*", sync_group_offsets=True))
    dst_admin = AdminClient({"bootstrap.servers": state.cluster("destination").bootstrap})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = dst_admin.list_topics(timeout=30).topics
        replicas = sum(len(listed[f"source.{n}"].partitions) for n in names if f"source.{n}" in listed)
        checkpointed = len(mm2.latest_checkpoints(state.cluster("destination").bootstrap))
        log.info(
            "mm2: %d of %d replica partitions, %d of %d commits checkpointed",
            replicas,
            topics * partitions,
            checkpointed,
            commits,
        )
        if replicas == topics * partitions and checkpointed >= commits:
            return
        time.sleep(5)
    log.warning("MirrorMaker 2 had not caught up within %.0fs: timing readiness anyway", timeout)


def _prepare(state: SandboxState, topics: int, partitions: int, groups: int) -> None:
    names = [f"bench-{i:02d}" for i in range(topics)]
    for cluster in state.clusters:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        futures = admin.create_topics(
            [NewTopic(n, num_partitions=partitions, replication_factor=1) for n in names]
        )
        for f in futures.values():
            f.result(timeout=120)
        for g in range(groups):
            topic = names[g % topics]
            offsets = {(topic, p): 0 for p in range(0, partitions, 10)}
            commit_offsets(cluster.bootstrap, f"bench-group-{g:03d}", offsets)


def _time(cmd: list[str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:4]} failed with {proc.returncode}: {proc.stderr[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=100, help="per topic (default 10 x 100 = 1,000)")
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument(
        "--mode",
        choices=("cluster-mirroring", "mm2"),
        default="cluster-mirroring",
        help="mm2: a real MirrorMaker 2 replicates and checkpoints, readiness runs in mode mm2",
    )
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds per side; the best is reported")
    parser.add_argument(
        "--with-spark",
        action="store_true",
        help="also time readiness on the Spark engine (--engine spark), once per round, for the record",
    )
    parser.add_argument(
        "--with-data-docs",
        action="store_true",
        help="also time readiness with output.readiness_data_docs: true, once per round, for the record",
    )
    args = parser.parse_args()
    setup_logging()
    with tempfile.TemporaryDirectory(prefix="bench-readiness-") as tmp:
        root = Path(tmp)
        with running(SandboxOptions(workdir=root / "sandbox", heap_mb=1024)) as state:
            if args.mode == "mm2":
                _prepare_mm2(state, args.topics, args.partitions, args.groups)
            else:
                _prepare(state, args.topics, args.partitions, args.groups)
            cfg = root / "audit.yaml"
            cfg.write_text(
                f"mode: {args.mode}\n"
                + ("mirror:\n  mm2:\n    sync_group_offsets: true\n" if args.mode == "mm2" else "")
                + f"source:\n  bootstrap_servers: {state.cluster('source').bootstrap}\n"
                f"destination:\n  bootstrap_servers: {state.cluster('destination').bootstrap}\n"
                f"output:\n  root: {root / 'runs'}\n"
            )
            docs_cfg = root / "audit-docs.yaml"
            docs_cfg.write_text(cfg.read_text() + "  readiness_data_docs: true\n")
            ours, base, spark, docs = [], [], [], []

            def readiness(out: str, *extra: str, config: Path = cfg) -> float:
                cmd = [sys.executable, "-m", "audit.cli", "readiness", "--config", str(config), "--out"]
                return _time([*cmd, str(root / "runs" / out), *extra])

            for i in range(args.rounds):  # interleaved, so load on the machine hits both alike
                ours.append(readiness(f"r{i}"))
                base.append(cli_baseline(state))
                if args.with_spark:
                    spark.append(readiness(f"s{i}", "--engine", "spark"))
                if args.with_data_docs:
                    docs.append(readiness(f"d{i}", config=docs_cfg))
                stages = json.loads((root / "runs" / f"r{i}" / "summary.json").read_text())["run"]
                log.info(
                    "round %d: ours %.2fs (in the run: %s; the rest is the process's start and imports), "
                    "baseline %.2fs",
                    i + 1,
                    ours[-1],
                    ", ".join(f"{k} {v:.2f}s" for k, v in stages.get("stage_seconds", {}).items()),
                    base[-1],
                )
    n = args.topics * args.partitions
    print(f"partitions per cluster: {n}, groups per cluster: {args.groups}")
    print(
        f"ours (mirror-audit readiness):            best {min(ours):.2f}s  all {[round(x, 2) for x in ours]}"
    )
    print(
        f"baseline (get-offsets + consumer-groups):  best {min(base):.2f}s  all {[round(x, 2) for x in base]}"
    )
    if docs:
        print(
            "readiness with Data Docs (for the record): "
            f"best {min(docs):.2f}s  all {[round(x, 2) for x in docs]}"
        )
    if spark:
        print(
            "readiness --engine spark (for the record): "
            f"best {min(spark):.2f}s  all {[round(x, 2) for x in spark]}"
        )
    name = "readiness" if args.mode == "cluster-mirroring" else "readiness-mm2"
    print(f"RESULT {name} ours={min(ours):.2f} baseline={min(base):.2f} ratio={min(ours) / min(base):.2f}")


if __name__ == "__main__":
    main()
