"""The audit commands: snapshot, audit, nightly and readiness."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from audit.cli.options import (
    add_config,
    add_engine,
    add_out,
    add_snapshot_dirs,
    config_of,
    engine_of,
)
from audit.cli.output import print_outcome
from audit.errors import ExitCode, UsageError


def _snapshot_dirs(args: argparse.Namespace) -> tuple[Path, Path]:
    if args.source is None or args.destination is None:
        raise UsageError("give both --source DIR and --destination DIR (snapshot directories)")
    return args.source, args.destination


def cmd_snapshot(args: argparse.Namespace) -> int:
    from audit.collect.metadata.snapshot import take_snapshots
    from audit.profiles import profile_of

    cfg = config_of(args)
    src, dst = take_snapshots(cfg, args.out, profile_of(cfg).snapshot)
    print(f"snapshots written: {dst} (taken first), {src}")
    return ExitCode.OK


def cmd_audit(args: argparse.Namespace) -> int:
    from audit.pipeline import audit_snapshots

    cfg = config_of(args)
    src, dst = _snapshot_dirs(args)
    outcome = audit_snapshots(src, dst, args.out, cfg, engine=engine_of(args, cfg))
    print_outcome(outcome.summary, outcome.report)
    return outcome.exit_code


def cmd_nightly(args: argparse.Namespace) -> int:
    from audit.pipeline import nightly

    cfg = config_of(args)
    outcome = nightly(cfg, args.out, engine=engine_of(args, cfg), full_records=args.full)
    print_outcome(outcome.summary, outcome.report)
    return outcome.exit_code


def cmd_readiness(args: argparse.Namespace) -> int:
    from audit.pipeline import audit_snapshots, new_run_dir, nightly

    cfg = config_of(args)
    if args.source is not None or args.destination is not None:
        src, dst = _snapshot_dirs(args)
        out = args.out if args.out is not None else new_run_dir(cfg)
        outcome = audit_snapshots(src, dst, out, cfg, readiness=True, engine=engine_of(args, cfg))
    elif args.config is None:
        raise UsageError("readiness needs --config FILE (live clusters) or --source DIR --destination DIR")
    else:
        outcome = nightly(cfg, args.out, readiness=True, engine=engine_of(args, cfg))
    print_outcome(outcome.summary, outcome.report)
    return outcome.exit_code


def add_commands(sub: Any) -> None:
    p = sub.add_parser("snapshot", help="snapshot both clusters (destination first) into a directory")
    add_config(p, required=True)
    add_out(p, True, "directory to write <out>/source and <out>/destination into")
    p.set_defaults(handler=cmd_snapshot)

    p = sub.add_parser("audit", help="audit two snapshot directories offline")
    add_snapshot_dirs(p)
    add_out(p, True, "run directory to write summary.json and the report into")
    add_config(p)
    add_engine(p, "spark")
    p.set_defaults(handler=cmd_audit)

    p = sub.add_parser("nightly", help="snapshot, audit and report, keeping history in the output root")
    add_config(p, required=True)
    p.add_argument(
        "--full",
        action="store_true",
        help="with records.enabled: verify every record of the common ranges, ignoring the incremental "
        "history",
    )
    add_out(p, False, "run directory (default: a new timestamped directory under output.root)")
    add_engine(p, "spark")
    p.set_defaults(handler=cmd_nightly)

    p = sub.add_parser("readiness", help="pre-failover GO / NO-GO check with expected loss and reprocessing")
    add_config(p)
    add_snapshot_dirs(p)
    add_out(
        p,
        False,
        "run directory to write summary.json and the report into (default: a new timestamped "
        "directory under output.root, as nightly)",
    )
    add_engine(p, "local")
    p.set_defaults(handler=cmd_readiness)
