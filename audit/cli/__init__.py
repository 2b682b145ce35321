# PYTHON_ARGCOMPLETE_OK
"""The ``mirror-audit`` command line: thin on top of the pipeline modules.

Each option is declared once (``options``), each command is a small function returning an
exit code, grouped with its parser by what it does (``audit_commands``, ``scan_commands``,
``sandbox_commands``), what it prints is laid out in ``output``, and ``main`` is the one
place that maps expected errors to exit code 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from audit import __version__
from audit.cli import (
    audit_commands,
    check_commands,
    failover_commands,
    init_commands,
    sandbox_commands,
    scan_commands,
)
from audit.cli.examples import add_examples
from audit.cli.output import print_outcome
from audit.display import visible
from audit.errors import AuditError, ExitCode, UnexpectedError, os_error_message
from audit.logs import mask_secrets, setup_logging
from audit.progress import set_progress_every
from audit.run_dirs import WRITE_REFUSED

log = logging.getLogger("audit.cli")

Handler = Callable[[argparse.Namespace], int]

__all__ = ["build_parser", "main", "print_outcome"]


class _UsageExit(SystemExit):
    """argparse's refusal of a command line: exit 2 as argparse exits, its message kept so
    that ``main`` can also give it as ``--output json``'s error object."""

    def __init__(self, message: str) -> None:
        super().__init__(int(ExitCode.ERROR))
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse's parser (its subcommands' parsers are of this class too), whose refusal
    says what argparse says and is then answered by ``main`` like any other exit 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        text = f"{self.prog}: error: {message}"
        print(text, file=sys.stderr)
        raise _UsageExit(text)


def _wants_json(argv: Sequence[str]) -> bool:
    args = list(argv)
    return "--output=json" in args or any(
        a == "--output" and b == "json" for a, b in itertools.pairwise(args)
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mirror-audit",
        description="Audit Kafka cross-cluster mirroring: snapshot both clusters, reconcile offsets, "
        "epochs, data and group offsets with Spark, validate the mirror's invariants, report.",
        epilog="Exit codes: 0 pass or GO (warnings allowed), 1 an invariant failed or NO-GO, "
        "2 usage, configuration, connection or input error.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging and tracebacks")
    parser.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="log lines on stderr: text (ISO 8601 time with the zone, level, logger, message; the "
        "default) or json (one object a line, for log collectors)",
    )
    parser.add_argument(
        "--progress-every",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="the progress of a records or segments scan: rewritten in place on a terminal; "
        "elsewhere a log line every SECONDS (default 30; 0: none)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    init_commands.add_commands(sub)
    audit_commands.add_commands(sub)
    check_commands.add_commands(sub)
    failover_commands.add_commands(sub)
    sandbox_commands.add_demo(sub)
    scan_commands.add_commands(sub)
    sandbox_commands.add_sandbox(sub)
    add_examples(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    _complete(parser)
    given = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(given)
    except _UsageExit as exc:
        if _wants_json(given):
            from audit.cli.output import print_json

            print_json({"outcome": "error", "exit_code": int(ExitCode.ERROR), "error": exc.message})
        return ExitCode.ERROR
    setup_logging(args.verbose, args.log_format)
    set_progress_every(args.progress_every)
    handler: Handler = args.handler
    try:
        return int(handler(args))
    except UnexpectedError:  # the API's wrapping of a bug: still a bug, with its traceback
        return _internal_error()
    except AuditError as exc:
        message = str(exc)
        if args.verbose:
            log.exception("details")
    except KeyboardInterrupt:
        message = "interrupted"
    except OSError as exc:
        if exc.filename is None and exc.errno not in WRITE_REFUSED:
            return _internal_error()
        # A path the environment refuses (permissions, a full disk, a file where a
        # directory should be): the user's to fix, so one line naming it.
        message = os_error_message(exc)
        if args.verbose:
            log.exception("details")
    except Exception:
        return _internal_error()
    # An error may name a group id or a client's message: escaped, so it stays one inert line.
    line = visible(mask_secrets(message))
    print(f"mirror-audit: error: {line}", file=sys.stderr)
    if getattr(args, "output", "text") == "json":  # stdout keeps its promise of an object
        from audit.cli.output import print_json

        print_json({"outcome": "error", "exit_code": int(ExitCode.ERROR), "error": line})
    return ExitCode.ERROR


def _complete(parser: argparse.ArgumentParser) -> None:
    """Shell completion (argcomplete): answers and exits when the shell's completion hook
    called the command (it sets ``_ARGCOMPLETE``), does nothing otherwise. Enable it with
    ``eval "$(register-python-argcomplete mirror-audit)"`` (docs/usage.md, "Shell completion")."""
    if "_ARGCOMPLETE" in os.environ:
        import argcomplete

        argcomplete.autocomplete(parser)


def _internal_error() -> int:
    """A bug, not a user error: keep the traceback, but never exit 1 (that means "invariant
    failed"). Called from an exception handler."""
    log.exception("internal error")  # noqa: LOG004 (only ever called inside an except block)
    print("mirror-audit: error: internal error (a bug): see the traceback above", file=sys.stderr)
    return ExitCode.ERROR
