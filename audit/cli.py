"""The ``mirror-audit`` command line: thin on top of the pipeline modules.

Each option is declared once; each command is a small function returning an exit code;
``main`` is the one place that maps expected errors to exit code 2 and a one-line message.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from audit import __version__
from audit.compare.engines import EngineName
from audit.config import AuditConfig, load_config
from audit.errors import AuditError, ExitCode, UsageError
from audit.logs import mask_secrets, register_secrets, setup_logging
from audit.paths import hadoop_path, is_glob, is_uri, local_path
from audit.profiles import profile_of

log = logging.getLogger("audit.cli")

Handler = Callable[[argparse.Namespace], int]


# --------------------------------------------------------------------------- shared options


def _path(text: str) -> Path:
    """An argparse type for a local path: ``~`` expanded and made absolute from the current
    directory here, so that nothing later resolves it against another one."""
    try:
        return local_path(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_config(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument(
        "--config",
        metavar="FILE",
        type=_path,
        required=required,
        help="YAML configuration (see conf/audit.example.yaml)",
    )


def _add_snapshot_dirs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", metavar="DIR", type=_path, help="source snapshot directory (offline use)")
    p.add_argument(
        "--destination", metavar="DIR", type=_path, help="destination snapshot directory (offline use)"
    )


def _add_out(p: argparse.ArgumentParser, required: bool, what: str) -> None:
    p.add_argument("--out", metavar="DIR", type=_path, required=required, help=what)


def _add_workdir(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workdir",
        metavar="DIR",
        type=_path,
        help="sandbox work directory (default: $MIRROR_AUDIT_SANDBOX_DIR or "
        "~/.local/state/kafka-mirror-audit/sandbox)",
    )


def _add_role(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--role",
        choices=("source", "destination"),
        help="which side the data is (required for a new directory; checked against an existing snapshot)",
    )


def _add_engine(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument(
        "--engine",
        choices=("spark", "local"),
        default=default,
        help="what computes the comparison tables: 'spark' (Spark SQL, any size, local[*] or a "
        "cluster) or 'local' (DuckDB in this process: no JVM start, for answers in seconds; "
        "partition and group-offset metadata fits in memory). The same queries, suites and "
        f"files. Default: {default}",
    )


def _engine(args: argparse.Namespace, cfg: AuditConfig) -> EngineName:
    return args.engine  # type: ignore[no-any-return]


def _int_in(low: int, high: int | None = None) -> Callable[[str], int]:
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


_PORT = _int_in(1, 65535)


def _sasl_user(text: str) -> tuple[str, str]:
    """``NAME:PASSWORD`` for ``sandbox up --sasl-user``."""
    name, sep, password = text.partition(":")
    if not sep or not name or not password:
        raise argparse.ArgumentTypeError("give NAME:PASSWORD")
    return name, password


def _add_timeout(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--timeout", type=float, default=120.0, metavar="S", help=f"seconds to wait for {what} (default 120)"
    )


def _config(args: argparse.Namespace) -> AuditConfig:
    cfg = load_config(getattr(args, "config", None))
    register_secrets(cfg.secret_values())
    return cfg


# --------------------------------------------------------------------------- commands


def _snapshot_dirs(args: argparse.Namespace) -> tuple[Path, Path]:
    if args.source is None or args.destination is None:
        raise UsageError("give both --source DIR and --destination DIR (snapshot directories)")
    return args.source, args.destination


def cmd_snapshot(args: argparse.Namespace) -> int:
    from audit.collect.snapshot import take_snapshots
    from audit.profiles import profile_of

    cfg = _config(args)
    src, dst = take_snapshots(cfg, args.out, profile_of(cfg).snapshot)
    print(f"snapshots written: {dst} (taken first), {src}")
    return ExitCode.OK


def cmd_audit(args: argparse.Namespace) -> int:
    from audit.pipeline import audit_snapshots

    cfg = _config(args)
    src, dst = _snapshot_dirs(args)
    outcome = audit_snapshots(src, dst, args.out, cfg, engine=_engine(args, cfg))
    print_outcome(outcome.summary, outcome.report)
    return outcome.exit_code


def cmd_nightly(args: argparse.Namespace) -> int:
    from audit.pipeline import nightly

    cfg = _config(args)
    outcome = nightly(cfg, args.out, engine=_engine(args, cfg), full_records=args.full)
    print_outcome(outcome.summary, outcome.report)
    return outcome.exit_code


def cmd_readiness(args: argparse.Namespace) -> int:
    from audit.pipeline import audit_snapshots, new_run_dir, nightly

    cfg = _config(args)
    if args.source is not None or args.destination is not None:
        src, dst = _snapshot_dirs(args)
        out = args.out if args.out is not None else new_run_dir(cfg)
        outcome = audit_snapshots(src, dst, out, cfg, readiness=True, engine=_engine(args, cfg))
    elif args.config is None:
        raise UsageError("readiness needs --config FILE (live clusters) or --source DIR --destination DIR")
    else:
        outcome = nightly(cfg, args.out, readiness=True, engine=_engine(args, cfg))
    print_outcome(outcome.summary, outcome.report)
    return outcome.exit_code


def print_outcome(summary: dict[str, object], report: Path) -> None:
    """The short table a person or a runbook reads: verdict, what is wrong, where the report is."""
    invariants = summary["invariants"]
    assert isinstance(invariants, dict)
    rows = [
        (k, v["status"], str(v["violations"]), str(v["evaluated"]))
        for k, v in invariants.items()
        if v["status"] in ("fail", "warn")
    ]
    if "readiness" in summary:
        print(f"readiness: {summary['readiness']}")
        print(f"  expected loss:         {summary['expected_loss_records']} records (unmirrored)")
        print(
            f"  expected reprocessing: {summary['expected_reprocess_records']} records (group offsets behind)"
        )
    plan = summary.get("failover_plan")
    if isinstance(plan, dict):
        _print_plan(plan)
    print(f"verdict: {summary['verdict']}")
    if rows:
        width = max(len(r[0]) for r in rows)
        print(f"  {'invariant'.ljust(width)}  status  violations / checked")
        for inv, status, bad, checked in rows:
            print(f"  {inv.ljust(width)}  {status.ljust(6)}  {bad} / {checked}")
    skipped = [k for k, v in invariants.items() if v["status"] == "skipped"]
    if skipped:
        print(f"  skipped (data not collected): {', '.join(skipped)}")
    print(f"report: {report}")


def _print_plan(plan: dict[str, Any]) -> None:
    """The mm2 failover plan: per group and partition, the offset a failover would set."""
    print(
        f"  failover plan (not applied): {plan['groups']} groups, {plan['partitions']} partitions, "
        f"{plan['reprocess_records']} records to reprocess, {plan['skip_records']} to skip"
    )
    print(f"    in {plan['path']}")
    header = ("group", "topic", "partition", "set offset", "reprocess", "skip")
    keys = ("group_id", "topic", "partition", "offset", "reprocess_records", "skip_records")
    _print_table([header, *[tuple(str(r[k]) for k in keys) for r in plan["preview"]]], indent="    ")
    if plan["partitions"] > len(plan["preview"]):
        print(f"    ... {plan['partitions'] - len(plan['preview'])} more in plan.json")


def _print_table(rows: Sequence[Sequence[str]], indent: str = "") -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print(indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


def cmd_demo(args: argparse.Namespace) -> int:
    from audit.sandbox import demo, demo_mm2

    if args.expect_faults and args.healthy:
        raise UsageError("--expect-faults checks the injected faults: the --healthy demo injects none")
    if args.mode == "mm2":
        injected = demo_mm2.INJECTED
        outcome = demo_mm2.run_mm2_demo(
            healthy=args.healthy, out=args.out, keep=args.keep, workdir=args.workdir
        )
    else:
        injected = demo.INJECTED
        outcome = demo.run_demo(healthy=args.healthy, out=args.out, keep=args.keep, workdir=args.workdir)
    print_outcome(outcome.summary, outcome.report)
    if not args.expect_faults:
        return outcome.exit_code
    problems = injected.problems(outcome.summary)
    if problems:
        print("demo: the audit did not catch exactly the injected faults:")
        for line in problems:
            print(f"  {line}")
        return ExitCode.FAILED
    print(
        f"demo: the injected faults were caught ({', '.join(sorted(injected.fail))} failed) and "
        "nothing else failed: the demo did what it is for"
    )
    return ExitCode.OK


def cmd_segments_scan(args: argparse.Namespace) -> int:
    from audit.collect.batches import write_batch_scan
    from audit.collect.segments import ScanOptions, scan_segments
    from audit.config import redact_uri
    from audit.spark_session import build_spark

    cfg = _config(args)
    profile_of(cfg).require_data_level("segments scan")
    paths = [hadoop_path(p) for p in args.paths]
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
    _print_scan(note, args.out)
    return ExitCode.OK


def cmd_records_scan(args: argparse.Namespace) -> int:
    from audit.collect.record_collect import collect_records
    from audit.spark_session import build_spark

    cfg = _config(args)
    profile_of(cfg).require_data_level("records scan")
    run = args.run
    src, dst = run / "source", run / "destination"
    for d in (src, dst):
        if not (d / "manifest.json").exists():
            raise UsageError(
                f"{d} is not a snapshot: take both first with "
                f"'mirror-audit snapshot --config FILE --out {run}'"
            )
    note = collect_records(build_spark(cfg.spark), cfg, src, dst, run.resolve().parent, full=args.full)
    print(
        f"record chunks written to {src} and {dst}: {note['ranges']} ranges, "
        f"{note['offsets_planned']} offsets per side ({note['isolation']}, {note['reader']} reader)"
    )
    cov = (note.get("coverage") or {}).get("totals") or {}
    if cov:
        print(
            f"  coverage: {cov['verified']} offsets verified, {cov['mismatched']} mismatched, "
            f"{cov['not_verified']} not yet verified"
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

    from audit.collect.batches import collect_batches
    from audit.config import BatchSourceConfig
    from audit.spark_session import build_spark

    cfg = _config(args)
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
    _print_scan(note, args.out)
    return ExitCode.OK


def _print_scan(note: dict[str, Any], out: Path) -> None:
    issues = note.get("issues") or {}
    print(
        f"{note['batches']} batches, {note['markers']} markers written to {out} "
        f"({'CRC-32C verified' if note.get('deep') else 'headers only'})"
    )
    if issues:
        print("  scan issues: " + ", ".join(f"{kind} {n}" for kind, n in sorted(issues.items())))
        print(f"  details: {out / 'batch_scan_issues.parquet'}")
    for d in note.get("duplicate_copies_ignored") or []:
        print(f"  ignored a second copy of a partition: {d}")


def cmd_sandbox_up(args: argparse.Namespace) -> int:
    from audit.sandbox.cluster import SandboxOptions, default_workdir, up

    ports = {k: v for k, v in (("source", args.source_port), ("destination", args.destination_port)) if v}
    opts = SandboxOptions(
        workdir=args.workdir or default_workdir(),
        brokers_per_cluster=args.brokers,
        ports=ports,
        heap_mb=args.heap_mb,
        start_timeout_seconds=args.timeout,
        sasl_users=dict(args.sasl_user or []),
        tls=args.tls,
    )
    state = up(opts)
    _print_status(state)
    return ExitCode.OK


def cmd_sandbox_status(args: argparse.Namespace) -> int:
    from audit.sandbox.cluster import default_workdir, status

    workdir = args.workdir or default_workdir()
    state = status(workdir)
    if state is None:
        print(f"sandbox is not running (no state in {workdir})")
        return ExitCode.OK
    _print_status(state)
    return ExitCode.OK


def cmd_sandbox_down(args: argparse.Namespace) -> int:
    from audit.sandbox.cluster import default_workdir, down

    workdir = args.workdir or default_workdir()
    state = down(workdir, keep_data=args.keep_data)
    if state is None:
        print(f"sandbox is not running (no state in {workdir})")
    else:
        kept = "data kept" if args.keep_data else "data removed"
        print(f"sandbox stopped ({kept}; logs in {workdir})")
    return ExitCode.OK


def _running_sandbox(args: argparse.Namespace) -> object:
    from audit.sandbox.cluster import default_workdir, status

    workdir = args.workdir or default_workdir()
    state = status(workdir)
    if state is None:
        raise UsageError(f"the sandbox is not running (no state in {workdir}): run 'mirror-audit sandbox up'")
    return state


def cmd_sandbox_mm2_start(args: argparse.Namespace) -> int:
    from audit.sandbox import mm2
    from audit.sandbox.state import SandboxState

    state = _running_sandbox(args)
    assert isinstance(state, SandboxState)
    opts = mm2.Mm2Options(
        topics=args.topics,
        groups=args.groups,
        sync_group_offsets=args.sync_group_offsets,
        identity_policy=args.identity,
        offset_syncs_location=args.offset_syncs_on,
        offset_lag_max=args.offset_lag_max,
    )
    proc = mm2.start(state, opts, timeout=args.timeout)
    print(f"MirrorMaker 2 running: pid {proc.pid}, config {proc.properties_path}, log {proc.log_path}")
    return ExitCode.OK


def cmd_sandbox_mm2_stop(args: argparse.Namespace) -> int:
    from audit.sandbox import mm2
    from audit.sandbox.state import SandboxState

    state = _running_sandbox(args)
    assert isinstance(state, SandboxState)
    proc = mm2.stop(state)
    print("MirrorMaker 2 was not running" if proc is None else f"MirrorMaker 2 stopped (log {proc.log_path})")
    return ExitCode.OK


def _print_status(state: object) -> None:
    from audit.sandbox.cluster import tls_ca
    from audit.sandbox.state import SandboxState, is_running

    assert isinstance(state, SandboxState)
    sasl = any(c.sasl_bootstrap for c in state.clusters)
    rows = [("cluster", "bootstrap", *(("sasl bootstrap",) if sasl else ()), "cluster id", "pids", "state")]
    for c in state.clusters:
        alive = [is_running(n) for n in c.nodes]
        word = "running" if all(alive) else ("stopped" if not any(alive) else "degraded")
        pids = ",".join(str(n.pid) for n in c.nodes)
        extra = (c.sasl_bootstrap or "-",) if sasl else ()
        rows.append((c.name, c.bootstrap, *extra, c.cluster_id, pids, word))
    _print_table(rows)
    print(f"kafka {state.kafka_version}; work dir {state.workdir}")
    ca = tls_ca(state)
    if ca is not None:
        print(f"SASL listeners use TLS: trust {ca} (ssl.ca.location)")


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mirror-audit",
        description="Audit Kafka cross-cluster mirroring: snapshot both clusters, reconcile offsets, "
        "epochs, data and group offsets with Spark, validate the mirror's invariants, report.",
        epilog="Exit codes: 0 pass or GO (warnings allowed), 1 an invariant failed or NO-GO, "
        "2 usage, configuration, connection or input error.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging and tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("snapshot", help="snapshot both clusters (destination first) into a directory")
    _add_config(p, required=True)
    _add_out(p, True, "directory to write <out>/source and <out>/destination into")
    p.set_defaults(handler=cmd_snapshot)

    p = sub.add_parser("audit", help="audit two snapshot directories offline")
    _add_snapshot_dirs(p)
    _add_out(p, True, "run directory to write summary.json and the report into")
    _add_config(p)
    _add_engine(p, "spark")
    p.set_defaults(handler=cmd_audit)

    p = sub.add_parser("nightly", help="snapshot, audit and report, keeping history in the output root")
    _add_config(p, required=True)
    p.add_argument(
        "--full",
        action="store_true",
        help="with records.enabled: verify every record of the common ranges, ignoring the incremental "
        "history",
    )
    _add_out(p, False, "run directory (default: a new timestamped directory under output.root)")
    _add_engine(p, "spark")
    p.set_defaults(handler=cmd_nightly)

    p = sub.add_parser("readiness", help="pre-failover GO / NO-GO check with expected loss and reprocessing")
    _add_config(p)
    _add_snapshot_dirs(p)
    _add_out(
        p,
        False,
        "run directory to write summary.json and the report into (default: a new timestamped "
        "directory under output.root, as nightly)",
    )
    _add_engine(p, "local")
    p.set_defaults(handler=cmd_readiness)

    p = sub.add_parser("demo", help="run the sandbox end to end on the embedded default")
    p.add_argument("--healthy", action="store_true", help="inject no faults")
    p.add_argument(
        "--expect-faults",
        action="store_true",
        help="exit 0 when the audit caught exactly the injected faults (the verdict FAIL on "
        "them and on nothing else), 1 otherwise; without it the exit code is the verdict's, "
        "1 for the faulty demo's FAIL ('make demo' passes it)",
    )
    p.add_argument(
        "--mode",
        choices=("cluster-mirroring", "mm2"),
        default="cluster-mirroring",
        help="the offset-preserving emulator (default) or a real MirrorMaker 2",
    )
    _add_out(p, False, "run directory")
    p.add_argument("--keep", action="store_true", help="leave the sandbox running afterwards")
    _add_workdir(p)
    p.set_defaults(handler=cmd_demo)

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
    _add_out(
        p,
        True,
        "snapshot directory to add batches.parquet, markers.parquet and batch_scan_issues.parquet to "
        "(a new directory becomes a snapshot of its own, its partitions derived from the segments)",
    )
    _add_role(p)
    p.add_argument("--deep", action="store_true", help="recompute every batch's CRC-32C (reads every byte)")
    p.add_argument(
        "--split-bytes",
        type=_int_in(1),
        metavar="N",
        help="bytes of segment per Spark task (default: segments.split_bytes, 128 MiB)",
    )
    _add_config(p)
    p.set_defaults(handler=cmd_segments_scan)

    p = segsub.add_parser(
        "fetch",
        help="read the same batches from a live cluster over the Fetch protocol (no consumer group) "
        "into its snapshot",
    )
    _add_config(p, required=True)
    p.add_argument("--role", choices=("source", "destination"), required=True, help="which cluster to read")
    _add_out(
        p,
        True,
        "that cluster's snapshot directory (from 'mirror-audit snapshot'): its offset ranges are read",
    )
    p.add_argument("--deep", action="store_true", help="recompute every batch's CRC-32C")
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
    _add_config(p, required=True)
    p.add_argument(
        "--run",
        metavar="RUN_DIR",
        type=_path,
        required=True,
        help="the run directory holding source/ and destination/ snapshots (from 'mirror-audit snapshot'); "
        "its parent keeps the incremental history",
    )
    p.add_argument("--full", action="store_true", help="verify everything, ignoring the incremental history")
    p.set_defaults(handler=cmd_records_scan)

    sb = sub.add_parser("sandbox", help="the local two-cluster Kafka sandbox (real brokers, loopback)")
    sbsub = sb.add_subparsers(dest="sandbox_command", metavar="ACTION", required=True)
    p = sbsub.add_parser("up", help="fetch Kafka if needed, start source and destination clusters")
    _add_workdir(p)
    p.add_argument(
        "--brokers", type=_int_in(1), default=1, metavar="N", help="brokers per cluster (default 1)"
    )
    p.add_argument("--source-port", type=_PORT, metavar="PORT", help="fixed client port for the source")
    p.add_argument(
        "--destination-port", type=_PORT, metavar="PORT", help="fixed client port for the destination"
    )
    p.add_argument(
        "--heap-mb", type=_int_in(64), default=512, metavar="MB", help="max heap per broker (default 512)"
    )
    p.add_argument(
        "--sasl-user",
        type=_sasl_user,
        action="append",
        metavar="NAME:PASSWORD",
        help="also listen with SASL_PLAINTEXT (mechanism PLAIN) on a port of each broker's own, for "
        "this login (repeatable); a local test login: the brokers' server.properties in the work "
        "dir hold it",
    )
    p.add_argument(
        "--tls",
        action="store_true",
        help="the SASL listeners speak TLS (SASL_SSL) with a self-signed certificate for 127.0.0.1, "
        "made at start; clients trust it with ssl.ca.location WORKDIR/tls/ca.pem",
    )
    _add_timeout(p, "the clusters")
    p.set_defaults(handler=cmd_sandbox_up)
    p = sbsub.add_parser("status", help="show each cluster's bootstrap address, cluster id and pids")
    _add_workdir(p)
    p.set_defaults(handler=cmd_sandbox_status)
    p = sbsub.add_parser("down", help="stop the processes 'up' started and remove their data")
    _add_workdir(p)
    p.add_argument("--keep-data", action="store_true", help="keep the brokers' data directories")
    p.set_defaults(handler=cmd_sandbox_down)
    p = sbsub.add_parser(
        "mm2-start", help="start a real MirrorMaker 2 (dedicated mode) from source to destination"
    )
    _add_workdir(p)
    p.add_argument("--topics", default=".*", metavar="REGEX", help="topics to mirror (default .*)")
    p.add_argument("--groups", default=".*", metavar="REGEX", help="groups to checkpoint (default .*)")
    p.add_argument(
        "--sync-group-offsets", action="store_true", help="write translated offsets into the target's groups"
    )
    p.add_argument(
        "--identity", action="store_true", help="IdentityReplicationPolicy (topics keep their names)"
    )
    p.add_argument(
        "--offset-syncs-on",
        choices=("source", "target"),
        default="source",
        help="offset-syncs.topic.location (default source)",
    )
    p.add_argument(
        "--offset-lag-max",
        type=_int_in(0),
        default=100,
        metavar="N",
        help="offset.lag.max: records the replica may run past the last offset sync (default 100, "
        "MirrorMaker 2's own; 0 syncs every record but lets a burst drop the early syncs)",
    )
    _add_timeout(p, "MirrorMaker 2 to start")
    p.set_defaults(handler=cmd_sandbox_mm2_start)
    p = sbsub.add_parser("mm2-stop", help="stop the MirrorMaker 2 that mm2-start started (its log stays)")
    _add_workdir(p)
    p.set_defaults(handler=cmd_sandbox_mm2_stop)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    handler: Handler = args.handler
    try:
        return int(handler(args))
    except AuditError as exc:
        message = str(exc)
        if args.verbose:
            log.exception("details")
    except KeyboardInterrupt:
        message = "interrupted"
    except OSError as exc:
        if exc.filename is None:
            return _internal_error()
        # A path the environment refuses (permissions, a full disk, a file where a
        # directory should be): the user's to fix, so one line naming it.
        where = exc.filename if exc.filename2 is None else f"{exc.filename} -> {exc.filename2}"
        message = f"{where}: {exc.strerror or exc}"
        if args.verbose:
            log.exception("details")
    except Exception:
        return _internal_error()
    print(f"mirror-audit: error: {mask_secrets(message)}", file=sys.stderr)
    return ExitCode.ERROR


def _internal_error() -> int:
    """A bug, not a user error: keep the traceback, but never exit 1 (that means "invariant
    failed"). Called from an exception handler."""
    log.exception("internal error")  # noqa: LOG004 (only ever called inside an except block)
    print("mirror-audit: error: internal error (a bug): see the traceback above", file=sys.stderr)
    return ExitCode.ERROR


if __name__ == "__main__":
    sys.exit(main())
