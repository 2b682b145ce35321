"""The local sandbox's commands (up, status, down, mm2-start, mm2-stop, the continuous mirror
and its failover) and the demo."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from audit.cli.options import (
    PORT,
    add_kafka_version,
    add_out,
    add_timeout,
    add_workdir,
    add_written_output,
    int_in,
    path_arg,
    sasl_user,
    use_kafka_version,
)
from audit.cli.output import print_outcome, print_status
from audit.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from audit.sandbox.state import SandboxState


def cmd_demo(args: argparse.Namespace) -> int:
    from audit.sandbox import demo, demo_mm2

    if args.expect_faults and args.healthy:
        raise UsageError("--expect-faults checks the injected faults: the --healthy demo injects none")
    use_kafka_version(args)
    if args.failover:
        return _failover_demo(args)
    if args.spark_cluster:
        return _cluster_demo(args)
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
    return _caught(injected.problems(outcome.summary), f"({', '.join(sorted(injected.fail))} failed)")


def _caught(problems: list[str], what: str) -> int:
    """``--expect-faults``: 0 when the audit caught exactly the injected faults."""
    if problems:
        print("demo: the audit did not catch exactly the injected faults:")
        for line in problems:
            print(f"  {line}")
        return ExitCode.FAILED
    print(
        f"demo: the injected faults were caught {what} and nothing else failed: the demo did what it is for"
    )
    return ExitCode.OK


def _cluster_demo(args: argparse.Namespace) -> int:
    from audit.sandbox import demo, demo_cluster

    if args.healthy or args.mode != "cluster-mirroring":
        raise UsageError(
            "--spark-cluster runs the faulty cluster-mirroring demo (without --healthy or --mode)"
        )
    code, summary, run_dir = demo_cluster.run_cluster_demo(args.out, args.workdir)
    # The job printed its verdict and invariants itself (above).
    print(
        f"demo: the job ran on {summary['run'].get('spark_master')} with "
        f"{summary['run'].get('spark_executors_ran_tasks')} executors; spark-submit exited {code}; "
        f"run {run_dir}"
    )
    if not args.expect_faults:
        return code
    return _caught(demo.INJECTED.problems(summary), f"({', '.join(sorted(demo.INJECTED.fail))} failed)")


def _failover_demo(args: argparse.Namespace) -> int:
    from audit.sandbox import demo_failover

    if args.mode != "cluster-mirroring":
        raise UsageError(
            "--failover follows an offset-preserving mirror's stop: it runs in mode cluster-mirroring"
        )
    demo = demo_failover.run_failover_demo(
        healthy=args.healthy, out=args.out, keep=args.keep, workdir=args.workdir
    )
    for step, outcome in demo.steps:
        print(f"== {step}")
        print_outcome(outcome.summary, outcome.report)
    if not args.expect_faults:
        return demo.exit_code
    return _caught(demo.problems(args.healthy), "(each step failed on its own)")


def cmd_sandbox_up(args: argparse.Namespace) -> int:
    from audit.sandbox.cluster import SandboxOptions, default_workdir, up

    use_kafka_version(args)
    ports = {k: v for k, v in (("source", args.source_port), ("destination", args.destination_port)) if v}
    opts = SandboxOptions(
        workdir=args.workdir or default_workdir(),
        brokers_per_cluster=args.brokers,
        ports=ports,
        heap_mb=args.heap_mb,
        start_timeout_seconds=args.timeout,
        sasl_users=dict(args.sasl_user or []),
        tls=args.tls,
        tiered_storage=args.tiered_storage,
    )
    state = up(opts)
    print_status(state)
    return ExitCode.OK


def cmd_sandbox_status(args: argparse.Namespace) -> int:
    from audit.sandbox.cluster import default_workdir, status

    workdir = args.workdir or default_workdir()
    state = status(workdir)
    if args.output == "json":
        from audit.cli.output import print_json, status_json

        print_json(status_json(state, workdir))
        return ExitCode.OK
    if state is None:
        print(f"sandbox is not running (no state in {workdir})")
        return ExitCode.OK
    print_status(state)
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


def _running_sandbox(args: argparse.Namespace) -> SandboxState:
    from audit.sandbox.cluster import default_workdir, status

    workdir = args.workdir or default_workdir()
    state = status(workdir)
    if state is None:
        raise UsageError(f"the sandbox is not running (no state in {workdir}): run 'mirror-audit sandbox up'")
    return state


def cmd_sandbox_mm2_start(args: argparse.Namespace) -> int:
    from audit.sandbox import mm2

    state = _running_sandbox(args)
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

    state = _running_sandbox(args)
    proc = mm2.stop(state)
    print("MirrorMaker 2 was not running" if proc is None else f"MirrorMaker 2 stopped (log {proc.log_path})")
    return ExitCode.OK


def cmd_sandbox_mirror_start(args: argparse.Namespace) -> int:
    from audit.sandbox import mirror_control

    state = _running_sandbox(args)
    proc = mirror_control.start(state, args.topics, args.groups or None, args.interval)
    print(f"mirror running: pid {proc.pid}, state {proc.state_path}, log {proc.log_path}")
    return ExitCode.OK


def cmd_sandbox_mirror_pause(args: argparse.Namespace) -> int:
    from audit.sandbox import mirror_control

    state = _running_sandbox(args)
    mirror_control.pause(state, args.topics)
    print(f"paused topics: {', '.join(args.topics) if args.topics else 'none'}")
    return ExitCode.OK


def cmd_sandbox_mirror_state(args: argparse.Namespace) -> int:
    import json

    from audit.fsutil import atomic_write_json
    from audit.sandbox import mirror_control

    state = _running_sandbox(args)
    data = mirror_control.read_state(state)
    if args.out is None:
        print(json.dumps(data, indent=2))
    else:
        atomic_write_json(args.out, data)
        print(f"mirror state written: {args.out} (mirror.state_file or snapshot --mirror-state)")
    return ExitCode.OK


def cmd_sandbox_failover(args: argparse.Namespace) -> int:
    from audit.sandbox import mirror_control

    state = _running_sandbox(args)
    parts = mirror_control.failover(state, args.timeout)
    print(
        f"mirror stopped: {len(parts)} partitions STOPPED, destination leader epochs raised; state in "
        f"{mirror_control.state_path(state)}"
    )
    return ExitCode.OK


def add_demo(sub: Any) -> None:
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
    p.add_argument(
        "--failover",
        action="store_true",
        help="the failover lifecycle instead: readiness, the mirror's stop, failover verify and "
        "failback readiness (with --healthy: drained first, nothing lost, failback GO)",
    )
    p.add_argument(
        "--spark-cluster",
        action="store_true",
        help="submit the faulty demo's nightly job with spark-submit to a Spark standalone master and "
        "two workers started on loopback ('make cluster-demo'), all stopped afterwards",
    )
    add_out(p, False, "run directory")
    p.add_argument("--keep", action="store_true", help="leave the sandbox running afterwards")
    add_workdir(p)
    add_kafka_version(p)
    p.set_defaults(handler=cmd_demo)


def add_sandbox(sub: Any) -> None:
    sb = sub.add_parser("sandbox", help="the local two-cluster Kafka sandbox (real brokers, loopback)")
    sbsub = sb.add_subparsers(dest="sandbox_command", metavar="ACTION", required=True)
    _add_up(sbsub)
    p = sbsub.add_parser("status", help="show each cluster's bootstrap address, cluster id and pids")
    add_workdir(p)
    add_written_output(p)
    p.set_defaults(handler=cmd_sandbox_status)
    p = sbsub.add_parser("down", help="stop the processes 'up' started and remove their data")
    add_workdir(p)
    p.add_argument("--keep-data", action="store_true", help="keep the brokers' data directories")
    p.set_defaults(handler=cmd_sandbox_down)
    _add_mm2(sbsub)
    _add_mirror(sbsub)


def _add_up(sbsub: Any) -> None:
    """``sandbox up``: the clusters, their size, ports and logins."""
    p = sbsub.add_parser("up", help="fetch Kafka if needed, start source and destination clusters")
    add_workdir(p)
    p.add_argument(
        "--brokers", type=int_in(1), default=1, metavar="N", help="brokers per cluster (default 1)"
    )
    p.add_argument("--source-port", type=PORT, metavar="PORT", help="fixed client port for the source")
    p.add_argument(
        "--destination-port", type=PORT, metavar="PORT", help="fixed client port for the destination"
    )
    p.add_argument(
        "--heap-mb", type=int_in(64), default=512, metavar="MB", help="max heap per broker (default 512)"
    )
    p.add_argument(
        "--sasl-user",
        type=sasl_user,
        action="append",
        metavar="NAME:PASSWORD",
        help="also listen with SASL_PLAINTEXT on a port of each broker's own, for this login "
        "(repeatable): mechanism PLAIN, and OAUTHBEARER with unsecured JWTs whose sub is NAME (Kafka's "
        "test validator; audit/sandbox/token_endpoint.py issues them); a local test login: the "
        "brokers' server.properties in the work dir hold it",
    )
    p.add_argument(
        "--tls",
        action="store_true",
        help="the SASL listeners speak TLS (SASL_SSL) with a self-signed certificate for 127.0.0.1, "
        "made at start; clients trust it with ssl.ca.location WORKDIR/tls/ca.pem",
    )
    p.add_argument(
        "--tiered-storage",
        action="store_true",
        help="tiered storage (KIP-405) on every broker: Kafka's LocalTieredStorage keeps the closed "
        "segments of topics created with remote.storage.enable=true under "
        "WORKDIR/CLUSTER/remote-storage/kafka-tiered-storage (fetched once: kafka-storage's test jar; "
        "where Maven Central lacks the chosen release's, the brokers run the newest earlier release "
        "that has one)",
    )
    add_timeout(p, "the clusters")
    add_kafka_version(p)
    p.set_defaults(handler=cmd_sandbox_up)


def _add_mm2(sbsub: Any) -> None:
    """``sandbox mm2-start`` and ``mm2-stop``: a real MirrorMaker 2 between the clusters."""
    p = sbsub.add_parser(
        "mm2-start", help="start a real MirrorMaker 2 (dedicated mode) from source to destination"
    )
    add_workdir(p)
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
        type=int_in(0),
        default=100,
        metavar="N",
        help="offset.lag.max: records the replica may run past the last offset sync (default 100, "
        "MirrorMaker 2's own; 0 syncs every record but lets a burst drop the early syncs)",
    )
    add_timeout(p, "MirrorMaker 2 to start")
    p.set_defaults(handler=cmd_sandbox_mm2_start)
    p = sbsub.add_parser("mm2-stop", help="stop the MirrorMaker 2 that mm2-start started (its log stays)")
    add_workdir(p)
    p.set_defaults(handler=cmd_sandbox_mm2_stop)


def _add_mirror(sbsub: Any) -> None:
    """The offset-preserving mirror emulator: start, pause, its state, and the failover that stops it."""
    p = sbsub.add_parser(
        "mirror-start",
        help="start the offset-preserving mirror emulator as a background process that copies "
        "continuously (READ_UNCOMMITTED, as KIP-1279) until 'sandbox failover' stops it",
    )
    add_workdir(p)
    p.add_argument("--topics", default=".*", metavar="REGEX", help="topics to mirror (default .*)")
    p.add_argument(
        "--groups",
        default=".*",
        metavar="REGEX",
        help="groups whose offsets it syncs (default .*; '' for none)",
    )
    p.add_argument(
        "--interval", type=float, default=0.5, metavar="S", help="seconds between copy cycles (default 0.5)"
    )
    p.set_defaults(handler=cmd_sandbox_mirror_start)
    p = sbsub.add_parser(
        "mirror-pause", help="pause the mirror on these topics (PAUSED; none given: resume all)"
    )
    add_workdir(p)
    p.add_argument("topics", nargs="*", metavar="TOPIC")
    p.set_defaults(handler=cmd_sandbox_mirror_pause)
    p = sbsub.add_parser(
        "mirror-state",
        help="the mirror's per-partition state in the shape of KIP-1279's DescribeClusterMirrors "
        "response (what mirror.state_file imports)",
    )
    add_workdir(p)
    p.add_argument("--out", type=path_arg, metavar="FILE", help="write it to FILE (default: print it)")
    p.set_defaults(handler=cmd_sandbox_mirror_state)
    p = sbsub.add_parser(
        "failover",
        help="stop the mirror as KIP-1279 does: last mirrored offset and epoch recorded, transactions "
        "in flight aborted (real ABORT markers), destination leader epochs raised by leader moves",
    )
    add_workdir(p)
    add_timeout(p, "the mirror to stop")
    p.set_defaults(handler=cmd_sandbox_failover)
