"""What the commands print: the short tables a person or a runbook reads. Results are
built elsewhere; this module only lays them out.

Names that come from a cluster (group ids above all: Kafka does not restrict them) are
printed through ``audit.display.visible``, so an escape sequence in one shows as text
instead of acting on the operator's terminal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audit.display import visible
from audit.validate.figures import present
from audit.validate.gaps import row_label

if TYPE_CHECKING:
    from audit.api import NotDrained, Result


def print_json(obj: dict[str, object]) -> None:
    """``--output json``: one compact object on one line, so that whatever reads the last
    line of stdout (an Airflow BashOperator's XCom) gets all of it."""
    print(json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str))


def print_result(result: Result | NotDrained, output: str = "text") -> int:
    """A job's result on stdout, as text (``print_outcome``) or as one JSON object
    (``--output json``); returns its exit code."""
    from audit.api import NotDrained

    if output == "json":
        print_json(result.to_json())
    elif isinstance(result, NotDrained):
        print_not_drained(result)
    else:
        drained = result.summary["run"].get("drained")
        if drained:
            print(
                f"drained: {drained['partitions']} partitions, source quiet, after "
                f"{drained['waited_seconds']:.0f}s"
            )
        print_outcome(dict(result.summary), result.report)
    return result.exit_code


def print_not_drained(result: NotDrained) -> None:
    """``readiness --wait-drained`` timed out: what is left, partition by partition."""
    status = result.status
    print(
        f"not drained after {status.elapsed_seconds:.0f}s: {status.lag_records} records left on "
        f"{status.partitions - status.drained_partitions} of {status.partitions} partitions"
        + ("" if status.source_quiet else "; the source is still being written to")
        + (
            f"; {status.unknown_partitions} partitions unknown (an input was missing: never drained)"
            if status.unknown_partitions
            else ""
        )
    )
    for lag in status.lagging:
        txn = " (transaction open on the source)" if lag.open_transaction else ""
        if lag.open_transaction is None:
            txn = " (open transactions unknown)"
        count = "unknown" if lag.lag_records is None else str(lag.lag_records)
        print(f"  {visible(lag.topic)}-{lag.partition}: {count} records{txn}")


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
        # The GO / NO-GO of the job that answers one, named by it: failover verify's and
        # failback readiness's are their own answers, not a pre-failover readiness.
        run = summary.get("run")
        job = run.get("job") if isinstance(run, dict) else None
        print(
            f"{job if isinstance(job, str) and job != 'readiness' else 'readiness'}: {summary['readiness']}"
        )
        for reason in _listed(summary.get("readiness_reasons")):
            print(f"  {visible(str(reason))}")
        for line in _listed(summary.get("accepted_unchecked")):
            print(f"  accepted gap: {visible(str(line))}")
        if "nightly_data" in summary:
            from audit.validate.nightly_data import describe

            found = summary["nightly_data"]
            print(f"  {visible(describe(found if isinstance(found, dict) and found.get('run') else None))}")
    _print_figures(summary)
    plan = summary.get("failover_plan")
    if isinstance(plan, dict):
        _print_plan(plan)
    print(f"verdict: {summary['verdict']}")
    if rows:
        width = max(len(r[0]) for r in rows)
        print(f"  {'invariant'.ljust(width)}  status  violations / checked")
        for inv, status, bad, checked in rows:
            print(f"  {inv.ljust(width)}  {status.ljust(6)}  {bad} / {checked}")
    coverage = summary.get("coverage")
    if isinstance(coverage, dict) and coverage.get("gaps"):
        print(f"  not checked ({coverage['unchecked_rows']} rows, never counted as passed):")
        for gap in coverage["gaps"]:
            first = ", ".join(row_label(r) for r in gap["first"][:3])
            more = f" (first: {visible(first)})" if first else ""
            print(f"    {gap['invariant']}: {gap['missing']} missing for {gap['rows']} {gap['unit']}{more}")
    skipped = [k for k, v in invariants.items() if v["status"] == "skipped"]
    if skipped:
        print(
            f"  skipped (nothing in scope, not collected, or no suite in use checks it): {', '.join(skipped)}"
        )
    print(f"report: {report}")


def _print_figures(summary: dict[str, object]) -> None:
    """The job's figures, one line each as declared (audit.validate.figures): the top
    level's under the readiness answer, failover verify's under ``failover:``."""
    found = present(summary)
    if not found:
        return
    width = max(len(s.figure.label) for s in found) + 1
    heading = None
    for s in found:
        if s.section != heading:
            heading = s.section
            print(f"{heading}:")
        note = f" ({s.figure.note})" if s.figure.note else ""
        unit = f" {s.figure.unit}" if not s.text.startswith("unknown") else ""
        print(f"  {(s.figure.label + ':').ljust(width)} {visible(s.text)}{unit}{note}")


def _count(value: object) -> str:
    """A plan's figure: ``unknown`` where it could not be computed, never 0."""
    return "unknown" if value is None else str(value)


def _listed(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _print_plan(plan: dict[str, Any]) -> None:
    """The mm2 failover plan: per group and partition, the offset a failover would set."""
    print(
        f"  failover plan (not applied): {plan['groups']} groups, {plan['partitions']} partitions, "
        f"{_count(plan['reprocess_records'])} records to reprocess, {_count(plan['skip_records'])} to skip"
    )
    print(f"    in {plan['path']}")
    header = ("group", "topic", "partition", "set offset", "reprocess", "skip")
    keys = ("group_id", "topic", "partition", "offset", "reprocess_records", "skip_records")
    print_table([header, *[tuple(_count(r[k]) for k in keys) for r in plan["preview"]]], indent="    ")
    if plan["partitions"] > len(plan["preview"]):
        print(f"    ... {plan['partitions'] - len(plan['preview'])} more in plan.json")


def print_table(rows: Sequence[Sequence[str]], indent: str = "") -> None:
    """Columns aligned; every cell shown with its control characters escaped."""
    rows = [[visible(cell) for cell in r] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print(indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())


def print_scan(note: dict[str, Any], out: Path) -> None:
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


def status_json(state: object, workdir: Path) -> dict[str, object]:
    """``sandbox status --output json``: the clusters as ``print_status`` shows them."""
    from audit.sandbox.state import SandboxState, is_running

    if state is None:
        return {"outcome": "not running", "exit_code": 0, "workdir": str(workdir), "clusters": []}
    assert isinstance(state, SandboxState)
    clusters = []
    for c in state.clusters:
        alive = [is_running(n) for n in c.nodes]
        clusters.append(
            {
                "name": c.name,
                "bootstrap": c.bootstrap,
                "sasl_bootstrap": c.sasl_bootstrap,
                "cluster_id": c.cluster_id,
                "pids": [n.pid for n in c.nodes],
                "state": "running" if all(alive) else ("stopped" if not any(alive) else "degraded"),
            }
        )
    return {
        "outcome": "running",
        "exit_code": 0,
        "workdir": state.workdir,
        "kafka_version": state.kafka_version,
        "tiered_storage": state.tiered_storage,
        "clusters": clusters,
    }


def print_status(state: object) -> None:
    from audit.sandbox.broker_config import tls_ca
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
    print_table(rows)
    print(f"kafka {state.kafka_version}; work dir {state.workdir}")
    if state.tiered_storage:
        from audit.sandbox.cluster import remote_storage_dir

        dirs = ", ".join(f"{c.name} {remote_storage_dir(state, c.name)}" for c in state.clusters)
        print(f"tiered storage: LocalTieredStorage from {state.tiered_storage_jar}; remote segments: {dirs}")
    ca = tls_ca(state)
    if ca is not None:
        print(f"SASL listeners use TLS: trust {ca} (ssl.ca.location)")
    if sasl:
        print("SASL mechanisms: PLAIN, and OAUTHBEARER with unsecured JWTs (sub: the user name)")
