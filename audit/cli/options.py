"""The options several commands share, each declared once, and the argparse types that
turn a bad value into a usage error (exit 2) naming it."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from audit.config import AuditConfig
from audit.config_file import load_config
from audit.errors import UsageError
from audit.logs import register_secrets
from audit.paths import local_path


def path_arg(text: str) -> Path:
    """An argparse type for a local path: ``~`` expanded and made absolute from the current
    directory here, so that nothing later resolves it against another one."""
    try:
        return local_path(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_config(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument(
        "--config",
        metavar="FILE",
        type=path_arg,
        required=required,
        help="YAML configuration (start one with 'mirror-audit init'; every key: "
        "'mirror-audit init --reference')",
    )


def add_snapshot_dirs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", metavar="DIR", type=path_arg, help="source snapshot directory (offline use)")
    p.add_argument(
        "--destination", metavar="DIR", type=path_arg, help="destination snapshot directory (offline use)"
    )


def add_out(p: argparse.ArgumentParser, required: bool, what: str) -> None:
    p.add_argument("--out", metavar="DIR", type=path_arg, required=required, help=what)


def add_workdir(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workdir",
        metavar="DIR",
        type=path_arg,
        help="sandbox work directory (default: $MIRROR_AUDIT_SANDBOX_DIR or "
        "~/.local/state/kafka-mirror-audit/sandbox)",
    )


def add_kafka_version(p: argparse.ArgumentParser) -> None:
    from audit.sandbox.jars import DEFAULT_KAFKA_VERSION, TESTED_KAFKA_VERSIONS

    p.add_argument(
        "--kafka-version",
        metavar="X.Y.Z",
        help=f"the Apache Kafka release the sandbox runs (default: $MIRROR_AUDIT_KAFKA_VERSION or "
        f"{DEFAULT_KAFKA_VERSION}; tested: {', '.join(TESTED_KAFKA_VERSIONS)}; 3.9 or later)",
    )


def use_kafka_version(args: argparse.Namespace) -> None:
    """``--kafka-version``, checked, becomes ``$MIRROR_AUDIT_KAFKA_VERSION`` for this command:
    every sandbox the command starts (a demo starts several steps, spark-submit a child
    process) then runs that release, exactly as if the variable had been set."""
    from audit.sandbox.jars import kafka_version

    if getattr(args, "kafka_version", None):
        os.environ["MIRROR_AUDIT_KAFKA_VERSION"] = kafka_version(args.kafka_version)


def add_role(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--role",
        choices=("source", "destination"),
        help="which side the data is (required for a new directory; checked against an existing snapshot)",
    )


def add_engine(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument(
        "--engine",
        choices=("spark", "local"),
        default=default,
        help="what computes the comparison tables: 'spark' (Spark SQL, any size, local[*] or a "
        "cluster) or 'local' (DuckDB in this process: no JVM start, for answers in seconds; "
        "partition and group-offset metadata fits in memory). The same queries, suites and "
        f"files. Default: {default}",
    )


def add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--output",
        choices=("text", "json"),
        default="text",
        help="what goes to stdout: 'text' (the short table a person reads; the default) or 'json' "
        "(one object on one line: outcome - PASS, WARN, FAIL, GO, NO-GO, 'not drained', or 'error' "
        "with the error on exit 2 -, exit_code, run_dir, report and the run's summary.json; the exit "
        "codes stay 0, 1, 2)",
    )


def add_written_output(p: argparse.ArgumentParser) -> None:
    """``--output`` of a command that collects or shows rather than judges (snapshot, the
    scans, sandbox status): the same choice, its object described by the shipped schema."""
    p.add_argument(
        "--output",
        choices=("text", "json"),
        default="text",
        help="what goes to stdout: 'text' (the default) or 'json' (one object on one line: outcome, "
        "exit_code and what was written or found; 'error' with the error on exit 2)",
    )


def int_in(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type for a whole number in [low, high]: a bad value is a usage error
    (exit 2) naming the value, rather than a later failure or a silent fallback."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {low} or more, not {value}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be {high} or less, not {value}")
        return value

    return parse


PORT = int_in(1, 65535)


def sasl_user(text: str) -> tuple[str, str]:
    """``NAME:PASSWORD`` for ``sandbox up --sasl-user``."""
    name, sep, password = text.partition(":")
    if not sep or not name or not password:
        raise argparse.ArgumentTypeError("give NAME:PASSWORD")
    return name, password


def add_timeout(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--timeout", type=float, default=120.0, metavar="S", help=f"seconds to wait for {what} (default 120)"
    )


def config_of(args: argparse.Namespace) -> AuditConfig:
    cfg = load_config(getattr(args, "config", None))
    register_secrets(cfg.secret_values())
    return cfg
