"""The batch- and record-level collection commands: segments scan, segments fetch and
records scan."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Any

from audit.cli.options import (
    add_config,
    add_out,
    add_role,
    add_written_output,
    config_of,
    int_in,
    path_arg,
)
from audit.cli.output import print_json, print_scan
from audit.errors import ExitCode, UsageError
from audit.paths import hadoop_path, is_glob, is_uri, shared_state_root
from audit.profiles import profile_of


def cmd_segments_scan(args: argparse.Namespace) -> int:
    from audit.collect.batches.collect import write_batch_scan
    from audit.collect.batches.segments import ScanOptions, scan_segments
    from audit.logs import register_secrets
    from audit.redaction import redact_uri, uri_secrets
    from audit.spark_session import build_spark

    cfg = config_of(args)
    profile_of(cfg).require_data_level("segments scan")
    paths = [hadoop_path(p) for p in args.paths]
    # Credentials in a path given on the command line are masked like the config's.
    register_secrets(v for p in paths for v in uri_secrets(p))
    for p in paths:
        # Before the Spark session starts; a URI or a glob is checked by the listing itself.
        if not is_uri(p) and not is_glob(p) and not Path(p).exists():
            raise UsageError(f"segment path {p} does not exist")
    opts = ScanOptions(
        deep=args.deep, split_bytes=cfg.segments.split_bytes if args.split_bytes is None else args.split_bytes
    )
    spark = build_spark(cfg.spark)
    scanned = scan_segments(spark, paths, opts, cfg.scope)
    note = {
        "read": "files",
        "paths": [redact_uri(p) for p in paths],
        "deep": opts.deep,
        "duplicate_copies_ignored": [redact_uri(d) for d in scanned.duplicates],
    }
    note = write_batch_scan(spark, scanned, args.out, args.role, note)
    _scanned(args, note)
    return ExitCode.OK


def _scanned(args: argparse.Namespace, note: dict[str, Any]) -> None:
    if args.output == "json":
        print_json({"outcome": "written", "exit_code": 0, "out": str(args.out), "batches": note})
    else:
        print_scan(note, args.out)


def cmd_records_scan(args: argparse.Namespace) -> int:
    """Record chunks into a snapshot pair, under the lock of the output root (the run's
    parent) whose ``record-verification.json`` it reads, updates and writes back."""
    from audit.collect.records.collect import collect_records
    from audit.output_lock import output_lock
    from audit.run_dirs import write_errors
    from audit.spark_session import build_spark

    cfg = config_of(args)
    profile_of(cfg).require_data_level("records scan")
    run = args.run
    src, dst = run / "source", run / "destination"
    for d in (src, dst):
        if not (d / "manifest.json").exists():
            raise UsageError(
                f"{d} is not a snapshot: take both first with "
                f"'mirror-audit snapshot --config FILE --out {run}'"
            )
    shared = shared_state_root(run.resolve())
    root = shared if shared is not None else run.resolve()
    with contextlib.ExitStack() as stack:
        if shared is not None:  # no lock where other users may write: nothing shared is kept there
            stack.enter_context(output_lock(root, cfg.output.lock_wait_seconds, "records scan"))
        stack.enter_context(write_errors(root, "output root"))
        note = collect_records(build_spark(cfg.spark), cfg, src, dst, root, full=args.full)
    if args.output == "json":
        print_json({"outcome": "written", "exit_code": 0, "out": str(run), "records": note})
        return ExitCode.OK
    print(
        f"record chunks written to {src} and {dst}: {note['ranges']} ranges, "
        f"{note['offsets_planned']} offsets per side ({note['isolation']}, {note['reader']} reader)"
    )
    cov = (note.get("coverage") or {}).get("totals") or {}
    if cov:
        print(
            f"  coverage: {cov['verified']} offsets verified, {cov['mismatched']} mismatched, "
            f"{cov.get('unreadable', 0)} unreadable, {cov['not_verified']} not yet verified"
        )
    for issue in note["issues"][:5]:
        where = f"{issue['topic']}-{issue['partition']} at {issue['position']}"
        print(f"  could not read {where}: {issue['detail']}")
    for line in note["notes"]:
        print(f"  {line}")
    print(f"audit them with: mirror-audit audit --source {src} --destination {dst} --out RUN_DIR")
    return ExitCode.OK


def cmd_segments_fetch(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from audit.collect.batches.collect import collect_batches
    from audit.config import BatchSourceConfig
    from audit.spark_session import build_spark

    cfg = config_of(args)
    profile_of(cfg).require_data_level("segments fetch")
    wire = BatchSourceConfig(read="wire")
    seg = cfg.segments
    seg = replace(
        seg,
        source=wire if args.role == "source" else seg.source,
        destination=wire if args.role == "destination" else seg.destination,
        deep=args.deep or seg.deep,
    )
    cfg = replace(cfg, segments=seg)
    cfg.cluster(args.role)
    note = collect_batches(build_spark(cfg.spark), cfg, args.role, args.out)
    _scanned(args, note)
    return ExitCode.OK


def add_commands(sub: Any) -> None:
    seg = sub.add_parser(
        "segments",
        help="collect record batches and markers for the batch-level checks (CM-DATA-2, CM-TXN-2/3)",
    )
    segsub = seg.add_subparsers(dest="segments_command", metavar="ACTION", required=True)
    p = segsub.add_parser(
        "scan",
        help="read Kafka log segment files (<topic>-<partition>/*.log) in Spark tasks into a snapshot "
        "directory",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="segment files or directories above them (a broker's log dir, a backup; any path Spark "
        "can list)",
    )
    add_out(
        p,
        True,
        "snapshot directory to add batches.parquet, markers.parquet and batch_scan_issues.parquet to "
        "(a new directory becomes a snapshot of its own, its partitions derived from the segments)",
    )
    add_role(p)
    p.add_argument("--deep", action="store_true", help="recompute every batch's CRC-32C (reads every byte)")
    p.add_argument(
        "--split-bytes",
        type=int_in(1),
        metavar="N",
        help="bytes of segment per Spark task (default: segments.split_bytes, 128 MiB)",
    )
    add_config(p)
    add_written_output(p)
    p.set_defaults(handler=cmd_segments_scan)

    p = segsub.add_parser(
        "fetch",
        help="read the same batches from a live cluster over the Fetch protocol (no consumer group) "
        "into its snapshot",
    )
    add_config(p, required=True)
    p.add_argument("--role", choices=("source", "destination"), required=True, help="which cluster to read")
    add_out(
        p,
        True,
        "that cluster's snapshot directory (from 'mirror-audit snapshot'): its offset ranges are read",
    )
    p.add_argument("--deep", action="store_true", help="recompute every batch's CRC-32C")
    add_written_output(p)
    p.set_defaults(handler=cmd_segments_fetch)

    rec = sub.add_parser(
        "records", help="record-level verification (CM-DATA-1): chunk checksums of both clusters"
    )
    recsub = rec.add_subparsers(dest="records_command", metavar="ACTION", required=True)
    p = recsub.add_parser(
        "scan",
        help="read both clusters' records of a snapshot pair's common ranges in Spark tasks; add "
        "record_chunks (and record_divergences) to the snapshots",
    )
    add_config(p, required=True)
    p.add_argument(
        "--out",
        "--run",
        dest="run",
        metavar="RUN_DIR",
        type=path_arg,
        required=True,
        help="the run directory holding source/ and destination/ snapshots (from 'mirror-audit snapshot "
        "--out RUN_DIR'), to which the scan adds its tables; its parent keeps the incremental history. "
        "--run is the old spelling, still taken",
    )
    p.add_argument("--full", action="store_true", help="verify everything, ignoring the incremental history")
    add_written_output(p)
    p.set_defaults(handler=cmd_records_scan)
