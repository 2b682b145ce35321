"""Every CM invariant on hand-made snapshots: one fault per partition or group, each caught
by exactly the invariant that owns it; a healthy pair passes. On the in-process engine:
tests/spark/test_engine_parity.py holds Spark's tables and summary equal to its own for
each of these pairs ("faulty", "healthy", "escaped-names", "behind-log-start")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from audit.config_file import parse_config
from audit.jobs import READINESS
from audit.pipeline import audit_snapshots
from audit.validate.figures import EXPECTED_LOSS, EXPECTED_REPROCESS, EXPECTED_UNSEEN, present
from tests.snapshots import faulty_pair, group, offset, part, write_pair

CFG = parse_config("scope:\n  groups:\n    exclude: ['private']\n", env={})


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The faulty pair audited by the in-process engine (Spark's run of it, and what Spark's
    run section says of where it ran: the parity test's "faulty" scenario)."""
    root = tmp_path_factory.mktemp("faulty-local")
    src, dst = faulty_pair(root)
    outcome = audit_snapshots(src, dst, root / "run", CFG, job=READINESS, engine="local")
    assert outcome.summary["run"]["engine"] == "local"
    assert "spark_master" not in outcome.summary["run"]
    summary: dict[str, Any] = json.loads((root / "run" / "summary.json").read_text())
    assert summary == json.loads(json.dumps(outcome.summary))
    return summary


def _keys(inv: dict[str, Any], *cols: str) -> set[tuple[Any, ...]]:
    return {tuple(e[c] for c in cols) for e in inv["examples"]}


@pytest.mark.parametrize(
    ("invariant", "status", "keys", "cols"),
    [
        ("CM-TOPIC-1", "fail", {("missing",)}, ("topic",)),
        ("CM-OFFSET-1", "fail", {("ahead", 0)}, ("topic", "partition")),
        ("CM-OFFSET-2", "fail", {("expired", 0)}, ("topic", "partition")),
        ("CM-LAG-1", "fail", {("lagging", 0)}, ("topic", "partition")),
        ("CM-EPOCH-1", "fail", {("epoch", 0)}, ("topic", "partition")),
        # "epoch" (DLE below SLE) is also short of headroom: it warns here as well as failing CM-EPOCH-1.
        ("CM-EPOCH-2", "warn", {("headroom", 0), ("epoch", 0)}, ("topic", "partition")),
        ("CM-EPOCH-3", "fail", {("g-epoch", "orders", 0)}, ("group_id", "topic", "partition")),
        ("CM-GROUP-1", "fail", {("g-ahead", "orders", 0)}, ("group_id", "topic", "partition")),
        ("CM-GROUP-2", "fail", {("g-live", "orders", 0)}, ("group_id", "topic", "partition")),
        ("CM-GROUP-3", "fail", {("private",)}, ("group_id",)),
        ("CM-TXN-1", "fail", {("txn", 0)}, ("topic", "partition")),
    ],
)
def test_each_fault_caught_by_its_invariant(
    faulty: dict[str, Any], invariant: str, status: str, keys: set[tuple[Any, ...]], cols: tuple[str, ...]
) -> None:
    inv = faulty["invariants"][invariant]
    assert inv["status"] == status, inv
    assert inv["violations"] == len(keys)
    assert _keys(inv, *cols) == keys
    assert inv["evaluated"] > inv["violations"]


def test_an_example_row_shows_the_values_its_check_rejected(faulty: dict[str, Any]) -> None:
    """Beside the key columns, each example carries the column(s) its expectation judged: one
    column (CM-EPOCH-1's headroom), and both of a column pair (CM-OFFSET-2's destination end
    against the source's log start)."""
    (epoch,) = faulty["invariants"]["CM-EPOCH-1"]["examples"]
    assert epoch["epoch_headroom"] == epoch["dst_leader_epoch"] - epoch["src_leader_epoch"] < 0
    (pair_check,) = (
        c for c in faulty["invariants"]["CM-OFFSET-2"]["checks"] if c["severity"] == "fail" and c["examples"]
    )
    (expired,) = pair_check["examples"]
    assert expired["dst_high_watermark"] < expired["src_log_start_offset"]


def test_stale_group_warns_but_never_fails(faulty: dict[str, Any]) -> None:
    checks = faulty["invariants"]["CM-GROUP-1"]["checks"]
    warn = next(c for c in checks if c["severity"] == "warn")
    assert not warn["success"]
    assert {(e["group_id"]) for e in warn["examples"]} == {"g-stale"}  # g-clamp sits at the clamp: fine


def test_scope_warns_for_streams_topics_and_groups(faulty: dict[str, Any]) -> None:
    inv = faulty["invariants"]["CM-SCOPE-1"]
    assert inv["status"] == "warn"
    found = {e.get("topic") or e.get("group_id") for c in inv["checks"] for e in c["examples"]}
    assert found == {"app-store-changelog", "app"}


def test_summary_contract(faulty: dict[str, Any]) -> None:
    assert faulty["verdict"] == "FAIL"
    assert faulty["readiness"] == "NO-GO"
    for data_inv in ("CM-DATA-1", "CM-DATA-2", "CM-TXN-2", "CM-FAILOVER-1"):
        assert faulty["invariants"][data_inv]["status"] == "skipped"
    # Loss: lagging 49900 + expired 600 + missing (all 100 retained); ahead is negative -> 0.
    assert faulty["expected_loss_records"] == 49_900 + 600 + 100
    # Reprocess: g-stale is 30 behind its clamp; g1 and g-clamp are exact, g-ahead is ahead.
    assert faulty["expected_reprocess_records"] == 30


def _healthy_pair(root: Path) -> tuple[Path, Path]:
    parts = [part("orders", partition=p, leader_epoch=5) for p in range(3)]
    dparts = [part("orders", partition=p, leader_epoch=8) for p in range(3)]
    return write_pair(
        root,
        parts,
        dparts,
        src_groups=[group("g")],
        dst_groups=[group("g")],
        src_offsets=[offset("g", 40, partition=p) for p in range(3)],
        dst_offsets=[offset("g", 40, partition=p, epoch=8) for p in range(3)],
    )


def test_healthy_pair_passes(tmp_path: Path) -> None:
    src, dst = _healthy_pair(tmp_path)
    outcome = audit_snapshots(src, dst, tmp_path / "run", CFG, job=READINESS, engine="local")
    statuses = {k: v["status"] for k, v in outcome.summary["invariants"].items()}
    assert outcome.summary["verdict"] == "PASS", statuses
    assert outcome.exit_code == 0
    assert outcome.summary["readiness"] == "GO"
    assert outcome.summary["expected_loss_records"] == 0
    # The report's tiles and the summary's figures come from the same declarations.
    page = outcome.report.read_text(encoding="utf-8")
    for shown in present(outcome.summary):
        assert f"{shown.figure.label} ({shown.figure.unit})<b>{shown.text}</b>" in page
    shown_figures = {s.figure for s in present(outcome.summary)}
    assert shown_figures == {EXPECTED_LOSS, EXPECTED_REPROCESS, EXPECTED_UNSEEN}
    assert statuses["CM-GROUP-3"] == "pass"
    assert statuses["CM-DATA-1"] == "skipped"


EVIL = "<script>alert(1)</script>"


def _evil_topic_pair(root: Path) -> tuple[Path, Path]:
    return write_pair(root, [part(EVIL), part("ok")], [part("ok", leader_epoch=8)])


def test_report_is_self_contained_and_escapes_names(tmp_path: Path) -> None:
    src, dst = _evil_topic_pair(tmp_path)
    outcome = audit_snapshots(src, dst, tmp_path / "run", CFG, engine="local")
    text = outcome.report.read_text()
    assert EVIL not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<script" not in text.lower()
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text
    assert outcome.summary["invariants"]["CM-TOPIC-1"]["status"] == "fail"


def _behind_the_destinations_log_start(root: Path, extra_src: list[Any] = ()) -> tuple[Path, Path]:  # type: ignore[assignment]
    """orders-0: the destination deleted up to 100, g committed at 40 on the source and
    synced to 100 (the clamp: right) -> 60 it never sees; orders-1: the source itself starts
    at 30 and the destination at 100, g committed at 10 -> 70 (the 20 below the source's log
    start are gone everywhere, not the failover's doing); h on orders-0 is past both."""
    end = {"high_watermark": 200, "last_stable_offset": 200}
    src_parts = [part("orders", 0, **end), part("orders", 1, log_start_offset=30, **end)]
    dst_parts = [part("orders", p, log_start_offset=100, leader_epoch=8, **end) for p in range(2)]
    return write_pair(
        root,
        src_parts + list(extra_src),
        dst_parts,
        src_groups=[group("g"), group("h")],
        dst_groups=[group("g"), group("h")],
        src_offsets=[offset("g", 40), offset("g", 10, partition=1), offset("h", 150)]
        + [offset("g", 5, topic=p.topic) for p in extra_src],
        dst_offsets=[
            offset("g", 100, epoch=8),
            offset("g", 100, partition=1, epoch=8),
            offset("h", 150, epoch=8),
        ],
    )


def test_a_group_behind_the_destinations_log_start_warns_and_counts_what_it_never_sees(
    tmp_path: Path,
) -> None:
    """CM-GROUP-4 and expected_unseen_records: the clamp moved g's offsets right (CM-GROUP-1
    passes), yet its consumers would never see 130 records the source still holds. Beside
    the loss (0 here), never in it; a warning, so the answer stays GO."""
    src, dst = _behind_the_destinations_log_start(tmp_path / "snaps")
    summary = audit_snapshots(src, dst, tmp_path / "run", CFG, job=READINESS, engine="local").summary
    inv = summary["invariants"]["CM-GROUP-4"]
    assert (inv["status"], inv["violations"], inv["evaluated"]) == ("warn", 2, 3), inv
    assert {(e["group_id"], e["partition"], e["unseen_records"]) for e in inv["examples"]} == {
        ("g", 0, 60),
        ("g", 1, 70),
    }
    assert summary["invariants"]["CM-GROUP-1"]["status"] == "pass"
    assert (summary["expected_unseen_records"], summary["expected_loss_records"]) == (130, 0)
    assert summary["readiness"] == "GO", summary["readiness_reasons"]


def test_the_unseen_threshold_is_the_configs_and_the_figure_stays_what_it_is(tmp_path: Path) -> None:
    """(The in-process engine: the threshold is the suite's parameter, the same for both.)"""
    src, dst = _behind_the_destinations_log_start(tmp_path / "snaps")
    tolerant = parse_config("thresholds:\n  max_unseen_records: 70\n", env={})
    summary = audit_snapshots(
        src, dst, tmp_path / "tolerant", tolerant, job=READINESS, engine="local"
    ).summary
    assert summary["invariants"]["CM-GROUP-4"]["status"] == "pass"
    assert summary["expected_unseen_records"] == 130


def test_unseen_records_without_the_destination_partition_are_unknown_never_0(tmp_path: Path) -> None:
    """The guard is in the comparison's SQL, which both engines run (greatest() skips nulls
    in both dialects: tests/spark/test_engine_parity.py compares them cell by cell)."""
    src, dst = _behind_the_destinations_log_start(tmp_path / "snaps", [part("only-on-source")])
    summary = audit_snapshots(src, dst, tmp_path / "run", CFG, job=READINESS, engine="local").summary
    assert summary["expected_unseen_records"] is None
    assert summary["unknown_figures"]["expected_unseen_records"]["rows_unknown"] == 1
    assert summary["unknown_figures"]["expected_unseen_records"]["missing_inputs"] == {
        "the destination partition's log start offset": 1
    }
    assert summary["invariants"]["CM-GROUP-4"]["status"] != "pass"
    assert summary["invariants"]["CM-GROUP-4"]["unchecked"] == 1


def test_a_readiness_run_reads_each_snapshot_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot pair is read once and handed on: the scope and offset checks before the
    comparison and the in-process engine share one read of each metadata table."""
    import collections

    from audit import snapshot

    reads: collections.Counter[tuple[str, str]] = collections.Counter()
    real = snapshot.read_arrow

    def counted(directory: Any, table: str, columns: Any = None) -> Any:
        reads[(Path(directory).name, table)] += 1
        return real(directory, table, columns)

    monkeypatch.setattr(snapshot, "read_arrow", counted)
    src, dst = faulty_pair(tmp_path)
    audit_snapshots(src, dst, tmp_path / "run", CFG, job=READINESS, engine="local")
    assert reads[(src.name, "partitions")] == 1, reads
    assert {k: n for k, n in reads.items() if n > 1} == {}


def test_a_readiness_check_writes_data_docs_only_where_asked(tmp_path: Path) -> None:
    """Its answer is wanted in seconds: GX's Data Docs (about 2.5 s of import alone) only
    with output.readiness_data_docs; the report says where the results are instead."""
    src, dst = _healthy_pair(tmp_path)
    plain = audit_snapshots(src, dst, tmp_path / "plain", CFG, job=READINESS, engine="local")
    assert not (tmp_path / "plain" / "validation" / "data_docs").exists()
    assert plain.summary["run"]["data_docs"] is False
    assert "No Great Expectations Data Docs for this run" in plain.report.read_text(encoding="utf-8")
    assert (tmp_path / "plain" / "validation" / "results.json").is_file()
    asked = parse_config("output:\n  readiness_data_docs: true\n", env={})
    docs = audit_snapshots(src, dst, tmp_path / "docs", asked, job=READINESS, engine="local")
    assert (tmp_path / "docs" / "validation" / "data_docs" / "index.html").is_file()
    assert docs.summary["run"]["data_docs"] is True
    assert 'href="../validation/data_docs/index.html"' in docs.report.read_text(encoding="utf-8")


def test_the_total_lag_is_unknown_where_a_partitions_lag_is_not_the_known_ones_sum(tmp_path: Path) -> None:
    """A partition in scope absent from the destination has no lag to add: the run's total
    lag, its topic's lag and their metrics are unknown, with the reason, where they used to
    be the sum of the partitions that had one; the report's tile says so. With every
    partition present the total is the sum, a partition ahead counting 0."""
    src_parts = [part("orders", 0, high_watermark=100), part("orders", 1), part("audit", 0)]
    dst_parts = [part("orders", 0, high_watermark=70), part("orders", 1, high_watermark=120)]
    src, dst = write_pair(tmp_path / "snaps", src_parts, dst_parts)
    outcome = audit_snapshots(src, dst, tmp_path / "run", CFG, engine="local")
    run = outcome.summary["run"]
    assert run["total_lag_records"] is None
    unknown = run["unknown_figures"]["total_lag_records"]
    assert (unknown["rows_unknown"], unknown["rows"], unknown["known_part"]) == (1, 3, 30)
    assert unknown["missing_inputs"] == {"the destination partition": 1}
    by_topic = {t["topic"]: t["lag_records"] for t in outcome.summary["lag_by_topic"]}
    assert by_topic == {"audit": None, "orders": 30}
    metrics = (outcome.run_dir / "metrics.prom").read_text()
    assert "\nmirror_audit_lag_records" not in metrics
    topic_lines = [ln for ln in metrics.splitlines() if ln.startswith("mirror_audit_topic_lag_records{")]
    assert [ln.rsplit(",", 1)[1] for ln in topic_lines] == ['topic="orders"} 30.0']  # audit's: unknown
    assert "total lag (records)" in outcome.report.read_text()
    assert "unknown for 1 of 3 in-scope partitions: the destination partition is missing for 1" in (
        outcome.report.read_text()
    )

    src, dst = write_pair(tmp_path / "whole", src_parts[:2], dst_parts)
    run = audit_snapshots(src, dst, tmp_path / "run-whole", CFG, engine="local").summary["run"]
    assert run["total_lag_records"] == 30 and "total_lag_records" not in run.get("unknown_figures", {})
