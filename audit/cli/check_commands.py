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
    if args.output == "json":
        return _json(findings, problems(findings))
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


def _json(findings: list[Any], failed: list[Any]) -> int:
    """``--output json``: one object, every finding with its status and fix; ``outcome``
    "ready" (exit 0) or "not ready" (exit 2, ``error`` the first problem's line)."""
    from audit.cli.output import print_json

    code = ExitCode.ERROR if failed else ExitCode.OK
    obj: dict[str, object] = {
        "outcome": "not ready" if failed else "ready",
        "exit_code": int(code),
        "findings": [
            {"where": f.where, "status": f.status, "text": mask_secrets(f.text), "fix": mask_secrets(f.fix)}
            for f in findings
        ],
    }
    if failed:
        first = failed[0]
        error = mask_secrets(f"{first.where}: {first.text}" + (f"; {first.fix}" if first.fix else ""))
        obj["error"] = error
        print(f"mirror-audit: error: check found {len(failed)} problem(s): {visible(error)}", file=sys.stderr)
    print_json(obj)
    return code


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
    p.add_argument(
        "--output",
        choices=("text", "json"),
        default="text",
        help="what goes to stdout: 'text' (a finding a line; the default) or 'json' (one object on one "
        "line: outcome 'ready' or 'not ready', exit_code, findings, and error: the first problem)",
    )
    p.set_defaults(handler=cmd_check)
