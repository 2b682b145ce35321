"""The two engines are interchangeable: on the same snapshots, Spark and the in-process
engine write the same comparison tables (column names, order, types and every cell) and
reach the same summary, report and failover plan. A difference here means one engine's
compare logic drifted.

The behaviours themselves are asserted on the in-process engine, by the modules whose snapshot
pairs the scenarios below reuse; one scenario per pair, configuration and job those modules
check, so that what they assert of the in-process engine holds of Spark too. Each runs its
job once per engine: the audit writes its comparison tables beside its summary
(``<run>/compare``), which are compared with it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow.parquet as pq
import pytest

from audit.compare.engines import ENGINES, EngineName
from audit.compare.tables import OPTIONAL
from audit.config import AuditConfig
from audit.config_file import parse_config
from audit.errors import InputError
from audit.failover_jobs import failback_readiness, failover_verify
from audit.jobs import READINESS
from audit.pipeline import RunOutcome, audit_snapshots, compare_snapshots
from audit.profiles import Profile, failback_profile, failover_verify_profile, profile, profile_of
from audit.report.failover_plan import PLAN_DIR
from audit.snapshot import GroupRecord
from audit.validate.invariants import ALL
from audit.validate.results import MAX_EXAMPLES, NOT_COLLECTED
from tests.run_files import kept_keys, unchecked_keys
from tests.snapshots import (
    after_stop_without_last_mirrored_offset,
    before_stop_pair,
    faulty_pair,
    group,
    mirror,
    offset,
    part,
    share,
    write_pair,
)
from tests.spark.test_hostile_inputs import _hostile_names_pair
from tests.unit import test_audit_invariants as invariants
from tests.unit import test_compare as compare
from tests.unit import test_coverage as coverage
from tests.unit import test_failover as failover
from tests.unit import test_mm2_invariants as mm2

KEYS = {
    c.table: c.key
    for p in (
        profile("cluster-mirroring"),
        profile("mm2"),
        failover_verify_profile(Path()),
        failback_profile(),
    )
    for c in p.comparisons
}

FAULTY_CFG = parse_config("scope:\n  groups:\n    exclude: ['private']\n", env={})

# Scope patterns, topic ids compared, and the null cases the derived columns must agree on.
EDGE_CFG = parse_config(
    "scope:\n"
    "  topics:\n    include: ['orders.*', 'app-.*', '__consumer_offsets']\n    exclude: ['orders-tmp']\n"
    "  groups:\n    include: ['g.*', 'app']\n    exclude: ['g-private.*']\n"
    "mirror:\n  preserves_topic_ids: true\n",
    env={},
)


def _edge_pair(root: Path) -> tuple[Path, Path]:
    src = [
        part("orders", 0, leader_epoch=None, max_timestamp_ms=None),
        part("orders", 1, topic_id=None),
        part("orders-tmp"),
        part("orders-ids", topic_id="a"),
        part("app-x-repartition", last_stable_offset=40, open_txn_first_timestamp_ms=None),
        part("__consumer_offsets"),
        part("only-src", log_start_offset=90, high_watermark=90),
    ]
    dst = [
        # Both lag (10 records): a time lag is needed and one side has no newest timestamp.
        part("orders", 0, leader_epoch=7, high_watermark=90),
        part("orders", 1, topic_id=None, max_timestamp_ms=None, high_watermark=90),
        part("orders-ids", topic_id="b"),
        part("app-x-repartition", leader_epoch=None),
        part("only-dst"),
    ]
    return write_pair(
        root,
        src,
        dst,
        # g-streams: a Kafka Streams group (KIP-1071) by its type alone, its member count
        # unknown (no client here describes a streams group).
        src_groups=[
            group("g1"),
            group("g-private-1"),
            group("app", "STABLE", 3),
            GroupRecord("g-streams", "streams", "NOT_READY", None),
            # g-share: a share group (KIP-932), its start offset synced 4 past the clamp.
            GroupRecord("g-share", "share", "STABLE", 1),
        ],
        dst_groups=[group("g1", "COMPLETING_REBALANCING"), group("h", "STABLE", 0), group("app")],
        src_offsets=[
            offset("g1", 5),
            offset("g1", 500, partition=1),
            offset("g-private-1", 1),
            offset("app", 7, topic="app-x-repartition"),
            offset("g-streams", 6),
            offset("g1", 3, topic="only-src"),
            offset("nobody", 1, topic="unknown-topic"),
        ],
        dst_offsets=[
            offset("g1", 4, epoch=9),
            offset("g-private-1", 1),
            offset("h", 2, topic="only-dst"),
            offset("h", 2, topic="gone-from-dst"),  # no partition, no source commit: no clamp
            offset("app", 8, topic="app-x-repartition", epoch=1),
        ],
        src_share=[share("g-share", 5)],
        dst_share=[share("g-share", 9)],
    )


def _empty_pair(root: Path) -> tuple[Path, Path]:
    return write_pair(root, [], [])


def _stopped_pair(root: Path) -> tuple[Path, Path]:
    """After a stop: one partition clean, one a control record over the bound (an open
    transaction left on the destination), one FAILED, one still mirroring."""
    return write_pair(
        root,
        [part("orders", p, high_watermark=100, leader_epoch=5) for p in range(4)],
        [
            part("orders", 0, high_watermark=101, leader_epoch=7),
            part("orders", 1, high_watermark=103, last_stable_offset=101, leader_epoch=5),
            part("orders", 2, high_watermark=100, leader_epoch=7),
            part("orders", 3, high_watermark=90, leader_epoch=7),
        ],
        dst_mirror=[
            mirror("orders", 0),
            mirror("orders", 1),
            mirror("orders", 2, state="FAILED", last_offset=None, last_epoch=None),
            mirror("orders", 3, state="MIRRORING", last_offset=None, last_epoch=None),
        ],
    )


Job = Literal["compare", "audit", "readiness", "verify", "failback"]


@dataclass(frozen=True)
class Scenario:
    """A snapshot pair, its configuration and the job both engines run on it: "compare" (the
    compare stage alone), "audit", "readiness", "verify" (readiness over the pair, then
    failover verify of each destination of ``after`` against that run, the same engine's)
    or "failback" (failback readiness). ``refused``: the job's input error on both engines
    (the compare stage's tables are still compared)."""

    make: Callable[[Path], tuple[Path, Path]]
    cfg: AuditConfig
    job: Job = "readiness"
    after: tuple[tuple[str, Callable[[Path], Path]], ...] = ()
    refused: str | None = None


SCENARIOS = {
    "faulty": Scenario(faulty_pair, FAULTY_CFG),
    "stopped": Scenario(_stopped_pair, AuditConfig()),
    "edge": Scenario(_edge_pair, EDGE_CFG),
    # No in-scope source partition: an input error on both engines, never a GO over nothing.
    "empty": Scenario(_empty_pair, AuditConfig(), refused="no in-scope source partition"),
    # Mode mm2 runs the same way on both engines since its comparisons are SQL too.
    "mm2-faulty": Scenario(lambda root: mm2._pair(root, faulty=True), mm2.CFG),
    "mm2-healthy": Scenario(lambda root: mm2._pair(root, faulty=False), mm2.CFG),
    "mm2-healthy-audit": Scenario(lambda root: mm2._pair(root, faulty=False), mm2.CFG, "audit"),
    "mm2-without-mm2-tables": Scenario(mm2._without_mm2_tables, mm2.CFG, "audit"),
    # Issue 55's reproduction: 200 records passed over on a plain topic, then the same gap
    # where the snapshot could not say what explains it (unchecked, never passed).
    "mm2-skipped": Scenario(lambda root: mm2._skipped_pair(root, mm2.PLAIN), mm2.MM2_ONLY),
    "mm2-skipped-audit": Scenario(lambda root: mm2._skipped_pair(root, mm2.PLAIN), mm2.MM2_ONLY, "audit"),
    "mm2-skipped-unexplained": Scenario(lambda root: mm2._skipped_pair(root, None), mm2.MM2_ONLY),
    # tests/unit/test_audit_invariants.py ("faulty" above is its faulty pair).
    "healthy": Scenario(invariants._healthy_pair, invariants.CFG),
    "escaped-names": Scenario(invariants._evil_topic_pair, invariants.CFG, "audit"),
    "behind-log-start": Scenario(invariants._behind_the_destinations_log_start, invariants.CFG),
    # tests/unit/test_coverage.py
    "coverage-nothing-to-check": Scenario(coverage._healthy_pair, coverage.CFG),
    "coverage-one-epoch-missing": Scenario(coverage._one_epoch_missing, coverage.CFG),
    "coverage-accepted-gap": Scenario(coverage._one_epoch_missing, coverage.ACCEPTING_CFG),
    "coverage-mirrored-partition-absent": Scenario(
        coverage._mirrored_partition_absent_from_both, coverage.CFG
    ),
    "coverage-mirror-state-omits-a-partition": Scenario(
        coverage._mirror_state_omitting_a_partition, coverage.CFG
    ),
    "coverage-verify-without-last-mirrored-offset": Scenario(
        before_stop_pair, coverage.CFG, "verify", (("after", after_stop_without_last_mirrored_offset),)
    ),
    "coverage-failback-without-last-mirrored-offset": Scenario(
        coverage._failback_without_the_last_mirrored_offset, coverage.CFG, "failback"
    ),
    # tests/unit/test_failover.py ("stopped" above is a mirror state after a stop).
    "failover-verify": Scenario(
        failover._before_stop,
        failover.CFG,
        "verify",
        (
            ("loss-above-prediction", failover._after_a_loss_above_the_prediction),
            ("predicted-loss", failover._after_the_predicted_loss),
            ("retention", failover._after_retention_took_records),
        ),
    ),
    "failback-truncates-0": Scenario(lambda root: failover._failback_pair(root, 0), failover.CFG, "failback"),
    "failback-truncates-20": Scenario(
        lambda root: failover._failback_pair(root, 20), failover.CFG, "failback"
    ),
    # tests/spark/test_hostile_inputs.py
    "hostile-names": Scenario(_hostile_names_pair, parse_config("", env={}), "audit"),
    # tests/unit/test_compare.py: the compare stage alone.
    "compare-lag-and-headroom": Scenario(compare._lagging_pair, AuditConfig(), "compare"),
    "compare-clamp": Scenario(compare._clamped_pair, AuditConfig(), "compare"),
    "compare-scope": Scenario(compare._scoped_pair, compare.SCOPE_CFG, "compare"),
}


def _sorted_rows(path: Path, key: tuple[str, ...]) -> tuple[Any, list[dict[str, Any]]]:
    table = pq.read_table(path)
    rows = sorted(table.to_pylist(), key=lambda r: tuple(str(r[k]) for k in key))
    return table.schema, rows


def _assert_same_tables(spark_dir: Path, local_dir: Path, prof: Profile) -> None:
    """Both engines' ``<run>/compare``: the same tables, each the same columns, types and cells."""
    tables = {p.stem for p in spark_dir.glob("*.parquet")}
    # Tables whose input is optional (the mirror state, record digests) are written by both
    # or neither.
    assert tables == {p.stem for p in local_dir.glob("*.parquet")}
    assert tables >= set(prof.tables) - OPTIONAL
    for table in sorted(tables):
        s_schema, s_rows = _sorted_rows(spark_dir / f"{table}.parquet", KEYS[table])
        l_schema, l_rows = _sorted_rows(local_dir / f"{table}.parquet", KEYS[table])
        assert l_schema.names == s_schema.names, table
        assert [str(t) for t in l_schema.types] == [str(t) for t in s_schema.types], table
        assert len(l_rows) == len(s_rows), table
        for s_row, l_row in zip(s_rows, l_rows, strict=True):
            assert l_row == s_row, (table, {k: (s_row[k], l_row[k]) for k in s_row if s_row[k] != l_row[k]})


def _comparable(summary: dict[str, Any], root: Path | None = None) -> dict[str, Any]:
    """The summary minus what legitimately differs (when and how it ran, and where: ``root``,
    the engine's own output root, reads as one placeholder); examples compared as sets, and
    only where every offending row is listed (beyond that, which rows are shown depends on
    each engine's row order)."""
    text = json.dumps(summary)
    if root is not None:
        text = text.replace(json.dumps(str(root))[1:-1], "<root>")
    out: dict[str, Any] = json.loads(text)
    for when in ("started_at", "finished_at", "duration_seconds", "stage_seconds", "engine"):
        out["run"].pop(when)
    # Where Spark ran it: only the Spark engine says (and a cluster says another master).
    out["run"].pop("spark_master", None)
    out["run"].pop("spark_executors_ran_tasks", None)
    spark_only = {i.id for i in ALL.values() if i.spark_only}
    for inv_id, inv in out["invariants"].items():
        if inv_id in spark_only:  # skipped by both, as not collected or not applicable
            assert inv["status"] == "skipped", (inv_id, inv)
            reason = inv.pop("reason")
            if reason.startswith(NOT_COLLECTED):
                # The in-process engine adds that it never computes them: what they need is
                # the same.
                inv["needs"] = reason.rpartition("needs ")[2]
            else:
                inv["reason"] = reason
        inv.pop("examples_seen", None)  # the streaks start at each run's own time
        for check in [inv, *inv.get("checks", [])]:
            examples = check.pop("examples", [])
            if check.get("violations", check.get("unexpected", 0)) <= MAX_EXAMPLES:
                check["example_set"] = sorted(json.dumps(e, sort_keys=True) for e in examples)
    plan = out.get("failover_plan")
    if plan is not None and root is None:
        plan.pop("path")  # each run writes its own, under an output root of its own
    previous = (out.get("changes") or {}).get("previous_run")
    if previous is not None:
        previous.pop("started_at")  # when the run before it (the same engine's) started
    return out


@pytest.fixture
def report_data(monkeypatch: pytest.MonkeyPatch) -> dict[Path, Any]:
    """What each run's report was rendered from, by report: the summary and the engine's
    slices of the comparison tables (``ReportData``); the rest is the same code on both."""
    from audit.report import html

    rendered: dict[Path, Any] = {}
    real = html.render_report

    def render(summary: dict[str, Any], data: Any, *args: Any) -> Path:
        report = real(summary, data, *args)
        rendered[report] = data
        return report

    monkeypatch.setattr(html, "render_report", render)
    return rendered


def _runs(
    scenario: Scenario, src: Path, dst: Path, after: dict[str, Path], root: Path, engine: EngineName
) -> dict[str, tuple[RunOutcome, Profile]]:
    """The scenario's job on ``engine`` under ``root``: each run, and the profile it ran."""
    cfg = scenario.cfg
    if scenario.job == "audit":
        return {"audit": (audit_snapshots(src, dst, root / "audit", cfg, engine=engine), profile_of(cfg))}
    if scenario.job == "failback":
        outcome = failback_readiness(cfg, root / "failback", source=src, destination=dst, engine=engine)
        return {"failback": (outcome, failback_profile())}
    before = root / "readiness"
    runs = {
        "readiness": (audit_snapshots(src, dst, before, cfg, job=READINESS, engine=engine), profile_of(cfg))
    }
    for name, destination in after.items():
        outcome = failover_verify(
            cfg, before, root / f"verify-{name}", destination=destination, engine=engine
        )
        runs[f"verify {name}"] = (outcome, failover_verify_profile(before))
    return runs


def _files(directory: Path) -> dict[str, bytes]:
    return {str(f.relative_to(directory)): f.read_bytes() for f in directory.rglob("*") if f.is_file()}


def _assert_same_run(
    label: str,
    spark_run: RunOutcome,
    local_run: RunOutcome,
    prof: Profile,
    roots: tuple[Path, Path],
    rendered: dict[Path, Any],
) -> None:
    """One run of the job on each engine: the same tables, summary, report and plan."""
    for engine, run in (("spark", spark_run), ("local", local_run)):
        assert run.summary["run"]["engine"] == engine, label
        written = json.loads((run.run_dir / "summary.json").read_text())
        assert written == json.loads(json.dumps(run.summary)), (label, engine)
    # Where Spark ran it: the application's master, and the executors that ran its tasks
    # (local: the driver). The in-process engine says nothing of Spark.
    assert spark_run.summary["run"]["spark_master"] == "local[2]", label
    assert spark_run.summary["run"]["spark_executors_ran_tasks"] == 1, label
    assert "spark_master" not in local_run.summary["run"], label
    _assert_same_tables(spark_run.run_dir / "compare", local_run.run_dir / "compare", prof)
    spark_root, local_root = roots
    assert _comparable(local_run.summary, local_root) == _comparable(spark_run.summary, spark_root), label
    # The report is rendered from the summary and the engine's slices of its tables: the same
    # (values and their types: a 0.0 for a 0 would show as such).
    assert rendered[local_run.report] == rendered[spark_run.report], label
    assert repr(rendered[local_run.report]) == repr(rendered[spark_run.report]), label
    # Mode mm2's readiness writes its failover plan from the engine's rows: the same files.
    plans = [run.run_dir / PLAN_DIR for run in (spark_run, local_run)]
    assert plans[0].is_dir() == plans[1].is_dir() == ("failover_plan" in local_run.summary), label
    assert _files(plans[0]) == _files(plans[1]), label
    # Each keeps every violating row's key for the history, the same keys (a nightly on
    # Spark and a readiness check on DuckDB under one root follow the same rows).
    assert kept_keys(spark_run.run_dir) == kept_keys(local_run.run_dir), label
    # An invariant may warn for rows it could not check alone (coverage, no violation):
    # those rows are kept apart, in unchecked.parquet, the same by both engines.
    assert unchecked_keys(spark_run.run_dir) == unchecked_keys(local_run.run_dir), label
    invariants = local_run.summary["invariants"]
    unchecked = {k for k, v in invariants.items() if v["unchecked"]}
    assert set(unchecked_keys(local_run.run_dir)) == unchecked, label
    failing = {
        k: v
        for k, v in invariants.items()
        if v["status"] in ("fail", "warn") and (v["violations"] or not v["unchecked"])
    }
    kept = kept_keys(local_run.run_dir)
    assert set(kept) == set(failing), label
    for inv_id, inv in failing.items():
        checks = inv["checks"]
        counted = [c["unexpected"] for c in checks if not c["success"] and c["severity"] == inv["status"]]
        # One check: its rejected rows are the violations; several: a row may fail two.
        assert max(counted) <= len(kept[inv_id]) <= sum(counted), (label, inv_id)
        if len(counted) == 1:
            assert len(kept[inv_id]) == inv["violations"], (label, inv_id)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_engines_write_the_same_tables_and_reach_the_same_summary(
    spark: Any, tmp_path: Path, report_data: dict[Path, Any], scenario: str
) -> None:
    s = SCENARIOS[scenario]
    src, dst = s.make(tmp_path / "snap")
    after = {name: make(tmp_path / f"after-{name}") for name, make in s.after}
    if s.job == "compare" or s.refused is not None:
        compared = [compare_snapshots(src, dst, tmp_path / e, s.cfg, e) for e in ENGINES]
        assert set(compared[0].paths) == set(compared[1].paths)
        _assert_same_tables(tmp_path / "spark" / "compare", tmp_path / "local" / "compare", profile_of(s.cfg))
        if s.refused is not None:
            for engine in ENGINES:
                with pytest.raises(InputError, match=s.refused):
                    audit_snapshots(src, dst, tmp_path / "runs" / engine, s.cfg, job=READINESS, engine=engine)
        return
    spark_root, local_root = tmp_path / "spark", tmp_path / "local"
    on_spark = _runs(s, src, dst, after, spark_root, "spark")
    local = _runs(s, src, dst, after, local_root, "local")
    assert on_spark.keys() == local.keys()
    for label, (spark_run, prof) in on_spark.items():
        local_run, _ = local[label]
        _assert_same_run(label, spark_run, local_run, prof, (spark_root, local_root), report_data)
    # Not vacuous: the scenarios do exercise failing invariants and non-zero figures.
    if scenario == "faulty":
        summary = on_spark["readiness"][0].summary
        assert summary["readiness"] == "NO-GO"
        assert summary["expected_loss_records"] > 0


def test_edge_scenario_covers_the_null_cases(tmp_path: Path) -> None:
    """Guards the parity test's reach: the edge pair must keep producing the nulls and
    classifications it exists for, or a parity pass would prove less than it claims."""
    src, dst = _edge_pair(tmp_path / "snap")
    local = compare_snapshots(src, dst, tmp_path / "local", EDGE_CFG, "local")
    parts = local.frames["partitions"].set_index(["topic", "partition"])
    assert parts["epoch_headroom"].isna().sum() >= 2
    assert parts["lag_seconds"].isna().sum() >= 2
    assert not parts.loc[("only-dst", 0), "src_present"]
    topics = local.frames["topics"].set_index("topic")
    assert not topics.loc["orders-ids", "topic_mirrored"]  # ids differ where the mirror keeps them
    assert topics.loc["orders", "topic_mirrored"]
    groups = local.frames["groups"].set_index("group_id")
    assert set(groups["classification"]) == {"active-on-destination", "excluded", "out-of-scope", "synced"}
    assert groups.loc["app", "streams_application"]
    assert groups.loc["g-streams", "streams_application"] and not groups.loc["g1", "streams_application"]
    offsets = local.frames["group_offsets"]
    shared = offsets.set_index("group_id").loc["g-share"]
    assert (shared["src_group_type"], shared["sync_delta"]) == ("share", 4)
    assert offsets["expected_offset"].isna().any()
    assert offsets["sync_delta"].isna().any()
