"""``mirror-audit init``: a commented starting configuration for a mode and a login, from the
examples shipped in the package (``audit.config_examples``), never over an existing file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from audit.errors import ExitCode


def cmd_init(args: argparse.Namespace) -> int:
    from audit.config_examples import example_text, starting_config, write_new

    if args.reference:
        print(example_text("audit.example.yaml"), end="")
        return ExitCode.OK
    path = write_new(Path(args.out), starting_config(args.mode, args.login))
    print(f"wrote {path} ({args.mode}, login {args.login})")
    print(f"next: set its addresses, then: mirror-audit check --config {path}")
    return ExitCode.OK


def add_commands(sub: Any) -> None:
    from audit.config_examples import LOGINS, MODES

    p = sub.add_parser(
        "init",
        help="write a commented starting configuration for a mode and a login",
        description="Writes a starting configuration: the login's connection settings for both clusters "
        "and, for mode mm2, how MirrorMaker 2 names things, each with its comments, from the examples "
        "shipped with mirror-audit. Never replaces an existing file (exit 2). '--reference' prints "
        "every key with its default instead.",
    )
    p.add_argument("--mode", choices=MODES, default="cluster-mirroring", help="the kind of mirror audited")
    p.add_argument(
        "--login",
        choices=LOGINS,
        default="plaintext",
        help="how the auditor logs in to both clusters (plaintext: no login)",
    )
    p.add_argument(
        "--out", default="audit.yaml", metavar="FILE", help="the file to write (default audit.yaml)"
    )
    p.add_argument(
        "--reference",
        action="store_true",
        help="print the reference configuration (every key, its default, what it does) and write nothing",
    )
    p.set_defaults(handler=cmd_init)
