"""The failover's commands: ``failover verify`` after a stop, ``failback readiness`` before
mirroring back (docs/invariants.md, "The failover lifecycle")."""

from __future__ import annotations

import argparse
from typing import Any

from audit.cli.options import (
    add_config,
    add_engine,
    add_out,
    add_output,
    add_snapshot_dirs,
    config_of,
    path_arg,
)
from audit.cli.output import print_result


def cmd_failover_verify(args: argparse.Namespace) -> int:
    from audit import api

    config = config_of(args) if args.config is not None else None
    result = api.failover_verify(
        config,
        args.before,
        out=args.out,
        source=args.source,
        destination=args.destination,
        engine=args.engine,
    )
    return print_result(result, args.output)


def cmd_failback_readiness(args: argparse.Namespace) -> int:
    from audit import api

    config = config_of(args) if args.config is not None else None
    result = api.failback_readiness(
        config, out=args.out, source=args.source, destination=args.destination, engine=args.engine
    )
    return print_result(result, args.output)


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
    add_output(p)
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
    add_output(p)
    p.set_defaults(handler=cmd_failback_readiness)
