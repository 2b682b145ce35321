"""The audit commands: snapshot, audit, nightly and readiness."""

from __future__ import annotations

import argparse
from typing import Any

from audit.api import DRAIN_TIMEOUT
from audit.cli.options import (
    add_config,
    add_engine,
    add_out,
    add_output,
    add_snapshot_dirs,
    add_written_output,
    config_of,
    path_arg,
)
from audit.cli.output import print_result
from audit.errors import ExitCode, UsageError


def cmd_snapshot(args: argparse.Namespace) -> int:
    from audit.collect.metadata.snapshot import take_snapshots
    from audit.profiles import profile_of

    cfg = config_of(args)
    src, dst = take_snapshots(cfg, args.out, profile_of(cfg).snapshot, args.mirror_state)
    if args.output == "json":
        from audit.cli.output import print_json

        print_json(
            {
                "outcome": "written",
                "exit_code": 0,
                "out": str(args.out),
                "source": str(src),
                "destination": str(dst),
            }
        )
    else:
        print(f"snapshots written: {dst} (taken first), {src}")
    return ExitCode.OK


def cmd_audit(args: argparse.Namespace) -> int:
    from audit import api

    if args.source is None or args.destination is None:
        raise UsageError("give both --source DIR and --destination DIR (snapshot directories)")
    result = api.audit(args.source, args.destination, config_of(args), out=args.out, engine=args.engine)
    return print_result(result, args.output)


def cmd_nightly(args: argparse.Namespace) -> int:
    from audit import api

    result = api.nightly(config_of(args), out=args.out, engine=args.engine, full_records=args.full)
    return print_result(result, args.output)


def cmd_readiness(args: argparse.Namespace) -> int:
    """The pre-failover check: never under the output root's lock (``audit.output_lock``),
    so it never waits behind a nightly job."""
    from audit import api

    if args.timeout is not None and not args.wait_drained:
        raise UsageError("--timeout is how long --wait-drained waits: give --wait-drained too")
    cfg = config_of(args)
    if not args.wait_drained:
        result = api.readiness(
            cfg, source=args.source, destination=args.destination, out=args.out, engine=args.engine
        )
        return print_result(result, args.output)
    if args.source is not None or args.destination is not None:
        raise UsageError(
            "--wait-drained polls the live clusters: give --config FILE, not snapshot directories"
        )
    if args.config is None:
        raise UsageError("--wait-drained polls the live clusters: give --config FILE")
    progress = DrainProgress()
    try:
        drained = api.readiness_when_drained(
            cfg,
            timeout=args.timeout if args.timeout is not None else DRAIN_TIMEOUT,
            poll_interval=args.poll_interval,
            out=args.out,
            engine=args.engine,
            progress=progress,
        )
    finally:
        progress.end()
    return print_result(drained, args.output)


class DrainProgress:
    """The live progress line: rewritten in place on a terminal, a line per change otherwise
    (a CI log keeps the history without a line per poll)."""

    def __init__(self) -> None:
        import sys

        self.out = sys.stderr
        self.tty = self.out.isatty()
        self.last = ""
        self.key: tuple[int, int, int] | None = None

    def __call__(self, status: Any) -> None:
        line = (
            f"drain: {status.lag_records} records behind, {status.drained_partitions}/{status.partitions} "
            f"partitions drained, {status.open_transactions} open transactions, "
            f"source {'quiet' if status.source_quiet else 'writing'}, {status.elapsed_seconds:.0f}s"
        )
        if self.tty:
            self.out.write("\r\033[K" + line)
            self.out.flush()
        elif (key := (status.lag_records, status.drained_partitions, status.open_transactions)) != self.key:
            print(line, file=self.out, flush=True)
            self.key = key
        self.last = line

    def end(self) -> None:
        if self.tty and self.last:
            self.out.write("\n")
            self.out.flush()


def add_commands(sub: Any) -> None:
    p = sub.add_parser("snapshot", help="snapshot both clusters (destination first) into a directory")
    add_config(p, required=True)
    add_out(p, True, "directory to write <out>/source and <out>/destination into")
    p.add_argument(
        "--mirror-state",
        metavar="FILE",
        type=path_arg,
        help="the mirror's own per-partition state as JSON (KIP-1279's DescribeClusterMirrors response "
        "or 'kafka-cluster-mirrors.sh --describe --json'), into the destination's snapshot "
        "(default: mirror.state_file)",
    )
    add_written_output(p)
    p.set_defaults(handler=cmd_snapshot)

    p = sub.add_parser("audit", help="audit two snapshot directories offline")
    add_snapshot_dirs(p)
    add_out(
        p,
        True,
        "run directory to write summary.json and the report into: new, or empty but for the snapshots "
        "audited (an earlier run is never written over); its parent is the output root, locked meanwhile",
    )
    add_config(p)
    add_engine(p, "spark")
    add_output(p)
    p.set_defaults(handler=cmd_audit)

    p = sub.add_parser("nightly", help="snapshot, audit and report, keeping history in the output root")
    add_config(p, required=True)
    p.add_argument(
        "--full",
        action="store_true",
        help="with records.enabled: verify every record (mode cluster-mirroring: of the common ranges; "
        "mode mm2: every retained record of both sides), ignoring the incremental history",
    )
    add_out(
        p,
        False,
        "run directory, new or empty (default: a new timestamped directory under output.root); its "
        "parent is the output root, locked while the job runs",
    )
    add_engine(p, "spark")
    add_output(p)
    p.set_defaults(handler=cmd_nightly)

    p = sub.add_parser("readiness", help="pre-failover GO / NO-GO check with expected loss and reprocessing")
    add_config(p)
    add_snapshot_dirs(p)
    add_out(
        p,
        False,
        "run directory to write summary.json and the report into, new or empty (default: a new "
        "timestamped directory under output.root, as nightly); never waits for the output root's lock",
    )
    add_engine(p, "local")
    add_output(p)
    p.add_argument(
        "--wait-drained",
        action="store_true",
        help="the last step before a planned failover: poll the live clusters (in this process, no "
        "Spark) until every in-scope partition has zero lag and the source is quiet (no new records "
        "between two polls, no open transaction), then check; exit 1 with what still lags on timeout",
    )
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help=f"with --wait-drained: how long to wait (default {DRAIN_TIMEOUT:.0f})",
    )
    p.add_argument(
        "--poll-interval",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="with --wait-drained: seconds between polls (default 2)",
    )
    p.set_defaults(handler=cmd_readiness)
