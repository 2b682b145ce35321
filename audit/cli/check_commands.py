"""``mirror-audit check``: the pre-flight (``audit.preflight``), printed one finding a line."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from audit.cli.options import add_config, config_of
from audit.display import visible
from audit.errors import ExitCode
from audit.logs import mask_secrets

_MARKS = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}


def cmd_check(args: argparse.Namespace) -> int:
    from audit.preflight import check, problems

    findings = check(config_of(args))
    for f in findings:
        fix = f" -> {f.fix}" if f.fix and f.status != "ok" else ""
        # A finding may carry a client's message or a topic name: escaped, one inert line.
        print(f"{f.where:<12} {_MARKS[f.status]}  {visible(mask_secrets(f.text + fix))}")
    failed = problems(findings)
    warned = sum(1 for f in findings if f.status == "warn")
    if not failed:
        print(
            f"check: ready ({warned} warning{'s' if warned > 1 else ''} above)" if warned else "check: ready"
        )
        return ExitCode.OK
    first = failed[0]
    more = f" (and {len(failed) - 1} more above)" if len(failed) > 1 else ""
    line = f"{first.where}: {first.text}" + (f"; {first.fix}" if first.fix else "") + more
    found = f"{len(failed)} problem" + ("s" if len(failed) > 1 else "")
    print(f"mirror-audit: error: check found {found}: {visible(mask_secrets(line))}", file=sys.stderr)
    return ExitCode.ERROR


def add_commands(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="pre-flight: config, both clusters, the permissions the jobs need, Java, Spark and the reader",
        description="Loads the configuration, connects to both clusters, prints their ids and API level, "
        "asks each cluster which of the permissions the configured jobs need the auditor's principal "
        "holds (a topic's authorized operations; a group and a transactional id named mirror-audit-check "
        "described, which creates nothing), and looks for Java, Spark, the record reader and the output "
        "root. Writes nothing and runs no job. Exit 0 when every check passes (warnings allowed), 2 with "
        "what to fix.",
    )
    add_config(p, required=True)
    p.set_defaults(handler=cmd_check)
