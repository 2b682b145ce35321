"""Benchmark: the validate stage, each check evaluated once, beside Great Expectations'
own evaluation of the same suites.

The validator compiles each expectation into SQL and counts every check of a table in one
aggregate query (``audit.validate.evaluate``); the same predicates select the examples,
the unchecked rows and the violation keys; GX renders Data Docs from the counts. GX's own
evaluation of the suites is what the stage ran before (and what the differential test
holds it to). This measures both on one offline pair, on each engine, in the same run:

- ours:     the whole validate stage (counts, examples, coverage, violation keys, Data
            Docs), seconds
- baseline: Great Expectations evaluating every suite (its checkpoints, as the stage ran
            them) and building Data Docs, seconds

The pair: ``--partitions`` partitions (default 50,000) and a committed offset per
partition for 20 groups' worth of partitions, with 1% of the destination's epochs behind
the source (CM-EPOCH-1 fails on them) and 1% of its epochs unreported (unchecked rows), so
both do all their work.

Run: .venv/bin/python bench/validation.py [--partitions N] [--engines local,spark]
[--rounds N]. The last line is RESULT validation-stage ours=<s> baseline=<s>
ratio=<ours/baseline>, summed over the engines run. ``--rounds`` validates the same tables
that many times more first and logs each (a warm stage: the engine's first queries of a
session, JIT and all, are slower than a nightly's after them).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import tempfile
import time
from pathlib import Path

from audit.compare.tables import EXAMPLE_COLUMNS
from audit.config_file import parse_config
from audit.logs import setup_logging
from audit.pipeline import compare_snapshots
from audit.profiles import profile_of
from audit.snapshot import (
    GroupOffsetRecord,
    GroupRecord,
    PartitionRecord,
    Snapshot,
    make_manifest,
    write_snapshot,
)
from audit.validate.gx import GxRunner
from audit.validate.run import mode_suites, run_validation
from audit.validate.violations import write_violation_keys

log = logging.getLogger("bench.validation")
T0 = "2026-11-21T00:00:00.000Z"
T0_MS = 1_795_219_200_000


def _pair(root: Path, partitions: int) -> tuple[Path, Path]:
    per_topic = 100
    src_parts: list[PartitionRecord] = []
    dst_parts: list[PartitionRecord] = []
    # Topics without a remote tier, read as such (their local log starts at the log start):
    # otherwise every partition's tier is unknown and CM-TIER-1/2 leave all of them
    # unchecked, which is not the 1% this pair is about.
    for i in range(partitions):
        topic, p = f"t{i // per_topic:04d}", i % per_topic
        epoch = 4 if i % 100 == 1 else (None if i % 100 == 2 else 9)
        for parts, leader_epoch, end, newest in (
            (src_parts, 5, 1000, T0_MS - 1000),
            (dst_parts, epoch, 990, T0_MS - 2000),
        ):
            parts.append(
                PartitionRecord(
                    topic,
                    p,
                    f"id-{topic}",
                    1,
                    leader_epoch,
                    0,
                    end,
                    end,
                    newest,
                    remote_storage=False,
                    local_log_start_offset=0,
                )
            )
    groups = [GroupRecord(f"g{g:02d}", "classic", "EMPTY", 0) for g in range(20)]
    offsets = [
        GroupOffsetRecord(f"g{i % 20:02d}", r.topic, r.partition, 900, 5, None)
        for i, r in enumerate(src_parts)
    ]
    dst_offsets = [GroupOffsetRecord(o.group_id, o.topic, o.partition, 900, 9, None) for o in offsets]

    def manifest(role: str) -> dict[str, object]:
        return make_manifest(role, f"bench-{role}", T0, T0, {}, {"bootstrap_servers": "x:9092"})  # type: ignore[arg-type]

    src = write_snapshot(
        root / "source", Snapshot(manifest("source"), tuple(src_parts), tuple(groups), tuple(offsets))
    )
    dst = write_snapshot(
        root / "destination",
        Snapshot(manifest("destination"), tuple(dst_parts), tuple(groups), tuple(dst_offsets)),
    )
    return src, dst


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--partitions", type=int, default=50_000)
    parser.add_argument("--engines", default="local,spark")
    parser.add_argument(
        "--rounds", type=int, default=0, help="warm-up validations logged before the measured one"
    )
    args = parser.parse_args()
    setup_logging(False)
    import great_expectations  # noqa: F401  (its import, seconds, is not the pass being measured)

    cfg = parse_config("mirror:\n  preserves_topic_ids: true\n", env={})
    prof = profile_of(cfg)
    suites = mode_suites(cfg, prof.suite_patterns)
    ours = baseline = 0.0
    with tempfile.TemporaryDirectory(prefix="bench-validation-") as tmp:
        src, dst = _pair(Path(tmp), args.partitions)
        for engine in args.engines.split(","):
            run = Path(tmp) / f"run-{engine}"
            compared = compare_snapshots(src, dst, run, cfg, engine)
            for i in range(args.rounds):
                t = time.monotonic()
                timings: dict[str, float] = {}
                warm = run_validation(compared, run, cfg, suites, prof.catalogue, timings)
                write_violation_keys(compared.tables, warm, run)
                log.info(
                    "%s engine, round %d: the validate stage %.2fs (%s)",
                    engine,
                    i + 1,
                    time.monotonic() - t,
                    ", ".join(f"{k} {v:.2f}s" for k, v in timings.items()),
                )
            t = time.monotonic()
            timings = {}
            results = run_validation(compared, run, cfg, suites, prof.catalogue, timings)
            write_violation_keys(compared.tables, results, run)
            stage = time.monotonic() - t
            t = time.monotonic()
            runner = GxRunner(Path(tmp) / f"gx-{engine}", compared.tables)
            parameters = dataclasses.asdict(cfg.thresholds)
            for suite in suites:
                df = compared.frames.get(suite.table)
                if df is not None:
                    runner.run(suite, df, EXAMPLE_COLUMNS.get(suite.table, []), parameters)
            runner.finish()
            gx = time.monotonic() - t
            failing = sorted(r.id for r in results if r.status in ("fail", "warn"))
            log.info(
                "%s engine, %d partitions: the validate stage %.2fs (%s); "
                "GX's evaluation %.2fs (ratio %.2f); failing or warning: %s",
                engine,
                args.partitions,
                stage,
                ", ".join(f"{k} {v:.2f}s" for k, v in timings.items()),
                gx,
                stage / gx,
                ", ".join(failing),
            )
            print(
                f"{engine}: validate_stage={stage:.2f}s gx_evaluation={gx:.2f}s ratio={stage / gx:.2f}",
                flush=True,
            )
            ours, baseline = ours + stage, baseline + gx
    print(
        f"RESULT validation-stage ours={ours:.2f} baseline={baseline:.2f} ratio={ours / baseline:.2f} "
        f"partitions={args.partitions}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
