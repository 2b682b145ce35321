"""The failover's commands: ``failover verify`` after a stop, ``failback readiness`` before
mirroring back (docs/invariants.md, "The failover lifecycle")."""

from __future__ import annotations

import argparse
from typing import Any

from audit.cli.options import add_config, add_engine, add_out, add_snapshot_dirs, config_of, path_arg
from audit.cli.output import print_outcome
from audit.errors import UsageError


def _cluster_mirroring(args: argparse.Namespace) -> Any:
    cfg = config_of(args)
    if cfg.mode != "cluster-mirroring":
        raise UsageError(
            f"the failover checks follow an offset-preserving mirror's stop: mode is {cfg.mode}, "
            "they need mode cluster-mirroring"
        )
    if args.config is None and args.destination is None:
        raise UsageError("give --config FILE (live clusters) or --destination DIR [--source DIR] (snapshots)")
    return cfg


def cmd_failover_verify(args: argparse.Namespace) -> int:
    from audit.failover_jobs import failover_verify

    cfg = _cluster_mirroring(args)
    outcome = failover_verify(cfg, args.before, args.out, args.source, args.destination, args.engine)
    print_outcome(outcome.summary, outcome.report)
    return outcome.exit_code


def cmd_failback_readiness(args: argparse.Namespace) -> int:
    from audit.failover_jobs import failback_readiness

    cfg = _cluster_mirroring(args)
    if args.config is None and args.source is None:
        raise UsageError("give --config FILE (live clusters) or --source DIR --destination DIR (snapshots)")
    outcome = failback_readiness(cfg, args.out, args.source, args.destination, args.engine)
    print_outcome(outcome.summary, outcome.report)
    return outcome.exit_code


def add_commands(sub: Any) -> None:
    fo = sub.add_parser(
        "failover", help="after a mirror's stop: the failover against what readiness predicted"
    )
    fosub = fo.add_subparsers(dest="failover_command", metavar="ACTION", required=True)
    p = fosub.add_parser(
        "verify",
        help="the destination after the stop against the readiness run before it: records lost "
        "per partition against the prediction, where each group resumes (CM-FAILOVER-1 to 3)",
    )
    p.add_argument(
        "--before",
        metavar="READINESS_RUN",
        type=path_arg,
        required=True,
        help="the run directory of the 'mirror-audit readiness' taken before the stop",
    )
    add_config(p)
    add_snapshot_dirs(p)
    add_out(p, False, "run directory (default: a new timestamped directory under output.root)")
    add_engine(p, "local")
    p.set_defaults(handler=cmd_failover_verify)

    fb = sub.add_parser("failback", help="before mirroring back: what it would truncate on the old source")
    fbsub = fb.add_subparsers(dest="failback_command", metavar="ACTION", required=True)
    p = fbsub.add_parser(
        "readiness",
        help="GO / NO-GO for mirroring back: per partition the records on the old source past the "
        "last mirrored offset (truncated), groups committed past it, open transactions (CM-FAILBACK-1 to 3)",
    )
    add_config(p)
    add_snapshot_dirs(p)
    add_out(p, False, "run directory (default: a new timestamped directory under output.root)")
    add_engine(p, "local")
    p.set_defaults(handler=cmd_failback_readiness)
