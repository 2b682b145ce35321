"""The failover on hand-made snapshots, on the in-process engine: a mirror's state after a
stop (CM-FAILOVER-1, the stop's control records never read as the destination being ahead),
failover verify against a readiness run (CM-FAILOVER-2, -3) and failback readiness
(CM-FAILBACK-1 to 3). A released broker cannot write KIP-1279's pid-reset record, so the
markers that carry it are made here, as the batch tests make theirs.

Spark computes the same tables and summary: tests/spark/test_engine_parity.py holds them
equal, cell by cell, for the mirror state after a stop ("stopped"), for verify against a
readiness run of the same engine ("failover-verify") and for failback ("failback-*")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from audit.config_file import parse_config
from audit.failover_jobs import failback_readiness, failover_verify
from audit.jobs import READINESS
from audit.pipeline import audit_snapshots
from audit.snapshot import OpenTransactionRecord
from tests.snapshots import T0_MS, group, mirror, offset, part, write_markers, write_pair

CFG = parse_config("", env={})


def _statuses(summary: dict[str, Any]) -> dict[str, str]:
    return {k: v["status"] for k, v in summary["invariants"].items()}


def _examples(summary: dict[str, Any], invariant: str, *cols: str) -> set[tuple[Any, ...]]:
    inv = summary["invariants"][invariant]
    return {tuple(e[c] for c in cols) for check in inv["checks"] for e in check["examples"]}


def _open_txn(topic: str, partition: int) -> OpenTransactionRecord:
    return OpenTransactionRecord("partition", None, 7, 0, None, topic, partition, 90, T0_MS - 1000)


def _clean_stop(root: Path) -> tuple[Path, Path]:
    """KIP-1279's stop as its prototype writes it: orders-0 idle (one pid-reset record past
    the last mirrored offset), orders-1 with a transaction open on the source (an ABORT for
    it, then the pid-reset record); epochs bumped past the source's and the last mirrored."""
    return write_pair(
        root,
        [
            part("orders", 0, leader_epoch=5),
            part(
                "orders", 1, leader_epoch=5, last_stable_offset=90, open_txn_first_timestamp_ms=T0_MS - 1000
            ),
        ],
        [
            part("orders", 0, leader_epoch=7, high_watermark=101, last_stable_offset=101),
            part("orders", 1, leader_epoch=7, high_watermark=102, last_stable_offset=102),
        ],
        src_txns=[_open_txn("orders", 1)],
        dst_mirror=[mirror("orders", 0, last_epoch=6), mirror("orders", 1, last_epoch=6)],
    )


@pytest.mark.parametrize("markers", [False, True], ids=["bound", "counted"])
def test_a_clean_stop_passes_and_its_control_records_are_not_the_destination_ahead(
    markers: bool, tmp_path: Path
) -> None:
    src, dst = _clean_stop(tmp_path / "snap")
    if markers:
        write_markers(dst, [("orders", 0, 100, 7), ("orders", 1, 100, 0), ("orders", 1, 101, 7)])
    summary = audit_snapshots(src, dst, tmp_path / "run", CFG, engine="local").summary
    statuses = _statuses(summary)
    assert statuses["CM-FAILOVER-1"] == "pass", summary["invariants"]["CM-FAILOVER-1"]
    assert summary["invariants"]["CM-FAILOVER-1"]["evaluated"] == 2
    # The destination's LEO is 1 and 2 above the source's: control records, not data.
    assert statuses["CM-OFFSET-1"] == "pass", summary["invariants"]["CM-OFFSET-1"]
    assert summary["invariants"]["CM-FAILOVER-1"]["unchecked"] == 0


def test_without_the_mirror_state_the_stops_records_look_like_the_destination_ahead(tmp_path: Path) -> None:
    """What the auditor said before it read the mirror's state: CM-OFFSET-1 failed on a
    clean stop, and CM-FAILOVER-1 is skipped as not collected, never passed."""
    src, dst = _clean_stop(tmp_path / "snap")
    (dst / "mirror_partitions.parquet").unlink()
    summary = audit_snapshots(src, dst, tmp_path / "run", CFG, engine="local").summary
    assert _statuses(summary)["CM-OFFSET-1"] == "fail"
    failover = summary["invariants"]["CM-FAILOVER-1"]
    assert failover["status"] == "skipped" and "mirror_partitions" in failover["reason"]


def _faulty_stop(root: Path) -> tuple[Path, Path]:
    topics = ("extra", "open-dst", "no-bump", "failed", "miscounted", "fine")
    return write_pair(
        root,
        [part(t, leader_epoch=5) for t in topics],
        [
            part("extra", leader_epoch=7, high_watermark=104, last_stable_offset=104),  # 4 > 1
            part("open-dst", leader_epoch=7, high_watermark=101, last_stable_offset=100),  # txn left open
            part("no-bump", leader_epoch=5, high_watermark=101, last_stable_offset=101),  # DLE == SLE
            part("failed", leader_epoch=7, high_watermark=100),
            part("miscounted", leader_epoch=7, high_watermark=101, last_stable_offset=101),
            part("fine", leader_epoch=7, high_watermark=101, last_stable_offset=101),
        ],
        dst_mirror=[
            mirror("extra"),
            mirror("open-dst"),
            mirror("no-bump", last_epoch=4),
            mirror(
                "failed",
                state="FAILED",
                last_offset=None,
                error="fetch from source failed: OFFSET_OUT_OF_RANGE",
            ),
            mirror("miscounted"),
            mirror("fine"),
        ],
    )


def test_each_fault_of_a_stop_fails_cm_failover_1_at_its_partition(tmp_path: Path) -> None:
    src, dst = _faulty_stop(tmp_path / "snap")
    summary = audit_snapshots(src, dst, tmp_path / "run", CFG, engine="local").summary
    inv = summary["invariants"]["CM-FAILOVER-1"]
    assert inv["status"] == "fail"

    def caught(word: str) -> set[str]:
        check = next(c for c in inv["checks"] if word in c["description"])
        return {e["topic"] for e in check["examples"]}

    assert caught("FAILED") == {"failed"}
    # 4 records past the last mirrored offset where at most 1 (the pid-reset) is allowed;
    # "miscounted" holds one, within the bound: only markers tell it apart (next test).
    assert caught("control records") == {"extra"}
    assert caught("no transaction") == {"open-dst"}
    assert caught("leader epoch") == {"no-bump"}
    failed = next(c for c in inv["checks"] if "FAILED" in c["description"])
    assert failed["examples"][0]["error_message"] == "fetch from source failed: OFFSET_OUT_OF_RANGE"


def test_counted_from_markers_the_control_records_must_be_exactly_those_past_the_last_mirrored_offset(
    tmp_path: Path,
) -> None:
    src, dst = _faulty_stop(tmp_path / "snap")
    # "miscounted": the record past the last mirrored offset is data, not a control record.
    write_markers(
        dst, [("extra", 0, o, 0) for o in (100, 101, 102)] + [("extra", 0, 103, 7), ("fine", 0, 100, 7)]
    )
    summary = audit_snapshots(src, dst, tmp_path / "run", CFG, engine="local").summary
    control = next(
        c for c in summary["invariants"]["CM-FAILOVER-1"]["checks"] if "control records" in c["description"]
    )
    assert {e["topic"] for e in control["examples"]} == {"miscounted", "open-dst", "no-bump"}
    assert {e["topic"]: e["stop_markers"] for e in control["examples"]}["miscounted"] == 0


def test_a_state_without_the_last_mirrored_offset_skips_that_check_for_those_partitions_and_says_so(
    tmp_path: Path,
) -> None:
    """The CLI's rows carry no LastMirrorOffset: the control-record count cannot be judged
    there; CM-OFFSET-1 allows the bound instead; the summary names the partitions."""
    src, dst = write_pair(
        tmp_path / "snap",
        [part("orders", 0, leader_epoch=5)],
        [part("orders", 0, leader_epoch=7, high_watermark=101, last_stable_offset=101)],
        dst_mirror=[mirror("orders", 0, last_offset=None, last_epoch=None)],
    )
    summary = audit_snapshots(src, dst, tmp_path / "run", CFG, engine="local").summary
    inv = summary["invariants"]["CM-FAILOVER-1"]
    assert inv["status"] == "warn"  # partial coverage is never a pass
    control = next(c for c in inv["checks"] if "control records" in c["description"])
    assert control["evaluated"] == 0
    (gap,) = inv["unchecked_gaps"]
    assert "LastMirrorOffset" in gap["missing"]
    assert gap["first"] == [{"topic": "orders", "partition": "0"}]
    assert _statuses(summary)["CM-OFFSET-1"] == "pass"


# --------------------------------------------------------------------------- verify


def _before_stop(root: Path) -> tuple[Path, Path]:
    """Before the stop: orders-0 lags 10 records (predicted loss 10), orders-1 none."""
    return write_pair(
        root / "before",
        [part("orders", 0, high_watermark=100), part("orders", 1, high_watermark=50)],
        [
            part("orders", 0, high_watermark=90, leader_epoch=8),
            part("orders", 1, high_watermark=50, leader_epoch=8),
        ],
        src_groups=[group("g1"), group("g2"), group("g3")],
        dst_groups=[group("g1"), group("g2"), group("g3")],
        src_offsets=[offset("g1", 95), offset("g2", 40, partition=1), offset("g3", 30, partition=1)],
        dst_offsets=[offset("g1", 90), offset("g2", 40, partition=1), offset("g3", 30, partition=1)],
    )


def _readiness_run(root: Path) -> Path:
    src, dst = _before_stop(root)
    run = root / "readiness"
    outcome = audit_snapshots(src, dst, run, CFG, job=READINESS, engine="local")
    assert outcome.summary["expected_loss_records"] == 10
    return run


def _after_stop(
    root: Path, source_offset: int | None, g2: int = 40, g3: int | None = 30, log_start_1: int = 0
) -> Path:
    """The destination after the stop; ``g3`` None: that group has no commit there."""
    resumes = [offset("g1", 90), offset("g2", g2, partition=1)]
    if g3 is not None:
        resumes.append(offset("g3", g3, partition=1))
    _, dst = write_pair(
        root / "after",
        [],
        [
            part("orders", 0, high_watermark=91, last_stable_offset=91, leader_epoch=9),
            part(
                "orders",
                1,
                log_start_offset=log_start_1,
                high_watermark=51,
                last_stable_offset=51,
                leader_epoch=9,
            ),
        ],
        dst_groups=[group("g1"), group("g2"), group("g3")],
        dst_offsets=resumes,
        dst_mirror=[
            mirror("orders", 0, last_offset=90, last_epoch=8, source_offset=source_offset),
            mirror(
                "orders", 1, last_offset=50, last_epoch=8, source_offset=None if source_offset is None else 50
            ),
        ],
    )
    return dst


def _after_a_loss_above_the_prediction(root: Path) -> Path:
    """Producers wrote 4 more records on orders-0 after the check (the mirror saw 104 at the
    stop); g2 resumes 5 past what it processed, g3 past the destination's end."""
    return _after_stop(root, source_offset=104, g2=45, g3=70)


def _after_the_predicted_loss(root: Path) -> Path:
    return _after_stop(root, source_offset=None)


def _after_retention_took_records(root: Path) -> Path:
    """The destination deleted orders-1 up to 45 before the stop; g2 resumes at 45, g3 at 47."""
    return _after_stop(root, source_offset=None, g2=45, g3=47, log_start_1=45)


def test_verify_catches_a_loss_above_the_prediction_and_where_groups_resume(tmp_path: Path) -> None:
    before = _readiness_run(tmp_path)
    dst = _after_a_loss_above_the_prediction(tmp_path)
    outcome = failover_verify(CFG, before, tmp_path / "verify", destination=dst, engine="local")
    summary = outcome.summary
    assert outcome.exit_code == 1
    assert _statuses(summary)["CM-FAILOVER-2"] == "fail"
    assert _examples(
        summary, "CM-FAILOVER-2", "topic", "partition", "predicted_loss_records", "realized_loss_records"
    ) == {("orders", 0, 10, 14)}
    assert _statuses(summary)["CM-FAILOVER-3"] == "fail"
    failover = summary["failover"]
    assert (failover["predicted_loss_records"], failover["realized_loss_records"]) == (10, 14)
    assert failover["skipped_records"] == 5 + 0  # g3 is out of range, not counted as skipped past the end
    assert _statuses(summary)["CM-FAILOVER-1"] == "pass"
    assert summary["run"]["source_offsets_read_from"].startswith("the readiness run's source snapshot")
    report = outcome.report.read_text()
    assert "Failover: predicted and realized" in report


def test_verify_passes_a_failover_that_lost_what_readiness_predicted(tmp_path: Path) -> None:
    """Without the mirror's record of the source's offsets, those of the readiness run's
    source snapshot stand in, and the run says so per partition."""
    before = _readiness_run(tmp_path)
    dst = _after_the_predicted_loss(tmp_path)
    outcome = failover_verify(CFG, before, tmp_path / "verify", destination=dst, engine="local")
    assert outcome.exit_code == 0, _statuses(outcome.summary)
    assert outcome.summary["failover"]["realized_loss_records"] == 10
    assert outcome.summary["failover"]["reprocessed_records"] == 0


def test_verify_counts_what_retention_took_as_never_seen_not_as_skipped(tmp_path: Path) -> None:
    """The destination deleted orders-1 up to 45 before the stop; g2 had processed up to 40
    and resumes at 45 (the clamp: the sync did right). Its consumers never see 40-44, which
    is retention's doing: ``unseen_records`` 5, not skipped, CM-FAILOVER-3 passes. g3
    (processed 30) resumes at 47: 2 skipped past the log start (the sync's fault), 15 unseen."""
    before = _readiness_run(tmp_path)
    dst = _after_retention_took_records(tmp_path)
    outcome = failover_verify(CFG, before, tmp_path / "verify", destination=dst, engine="local")
    failover = outcome.summary["failover"]
    assert (failover["skipped_records"], failover["unseen_records"]) == (2, 5 + 15)
    assert _examples(outcome.summary, "CM-FAILOVER-3", "group_id", "skipped_records", "unseen_records") == {
        ("g3", 2, 15)
    }


def test_verify_where_every_group_resumes_at_the_log_start_passes_and_counts_only_the_unseen(
    tmp_path: Path,
) -> None:
    """The same deletion, both groups resuming at orders-1's log start: nothing skipped
    (CM-FAILOVER-3 passes), 5 + 15 unseen. On the in-process engine: the same SQL."""
    before = _readiness_run(tmp_path)
    dst = _after_stop(tmp_path / "clean", source_offset=None, g2=45, g3=45, log_start_1=45)
    outcome = failover_verify(CFG, before, tmp_path / "verify-clean", destination=dst, engine="local")
    assert _statuses(outcome.summary)["CM-FAILOVER-3"] == "pass"
    assert (
        outcome.summary["failover"]["skipped_records"],
        outcome.summary["failover"]["unseen_records"],
    ) == (0, 20)


def test_verify_counts_the_unseen_as_readiness_does_from_the_sources_log_start(tmp_path: Path) -> None:
    """Issue 53, 9: g committed at 50, the source kept from 80, the destination from 100.
    Readiness (CM-GROUP-4) counts 20 never seen: 50-79 are gone from the source as well, the
    group could not read them whatever the failover did. Verify over the same data says
    20 too, not 50: it takes CM-GROUP-4's column rather than a formula of its own."""
    src, before_dst = write_pair(
        tmp_path / "before",
        [part("orders", 0, log_start_offset=80, high_watermark=200)],
        [part("orders", 0, log_start_offset=100, high_watermark=200, leader_epoch=8)],
        src_groups=[group("g")],
        dst_groups=[group("g")],
        src_offsets=[offset("g", 50)],
        dst_offsets=[offset("g", 100)],
    )
    before = tmp_path / "readiness"
    readiness = audit_snapshots(src, before_dst, before, CFG, job=READINESS, engine="local")
    assert readiness.summary["expected_unseen_records"] == 20
    _, after_dst = write_pair(
        tmp_path / "after",
        [],
        [part("orders", 0, log_start_offset=100, high_watermark=201, last_stable_offset=201, leader_epoch=9)],
        dst_groups=[group("g")],
        dst_offsets=[offset("g", 100)],
        dst_mirror=[mirror("orders", 0, last_offset=200, last_epoch=8, source_offset=200)],
    )
    outcome = failover_verify(
        CFG, before, tmp_path / "verify", source=src, destination=after_dst, engine="local"
    )
    failover = outcome.summary["failover"]
    assert (failover["unseen_records"], failover["skipped_records"]) == (20, 0)


def test_an_unknown_figure_names_the_missing_destination_commit_not_the_partition(tmp_path: Path) -> None:
    """Issue 53, 9: orders-1 is on the destination, g3 never committed there. Where g3
    resumes is unknown, so are the records skipped and reprocessed, and their reason names
    the commit, never 'the destination partition' (it is there); the records never seen
    need no commit (CM-GROUP-4's count) and stay known."""
    before = _readiness_run(tmp_path)
    dst = _after_stop(tmp_path, source_offset=None, g3=None)
    outcome = failover_verify(CFG, before, tmp_path / "verify", destination=dst, engine="local")
    failover = outcome.summary["failover"]
    assert failover["skipped_records"] is None and failover["reprocessed_records"] is None
    for name in ("skipped_records", "reprocessed_records"):
        unknown = failover["unknown_figures"][name]
        assert unknown["reason"] == (
            "unknown for 1 of 3 synced group partitions: the group's commit on the destination "
            "(where its consumers resume) is missing for 1"
        )
        assert "destination partition" not in unknown["reason"]
        assert unknown["missing_inputs"] == {
            "the group's commit on the destination (where its consumers resume)": 1
        }
    assert failover["unseen_records"] == 0
    assert "unseen_records" not in failover["unknown_figures"]


# --------------------------------------------------------------------------- failback


def test_failback_readiness_is_go_when_the_old_source_holds_nothing_past_the_stop(tmp_path: Path) -> None:
    src, dst = write_pair(
        tmp_path / "snap",
        [part("orders", 0, high_watermark=90), part("orders", 1, high_watermark=50)],
        [
            part("orders", 0, high_watermark=91, leader_epoch=9),
            part("orders", 1, high_watermark=51, leader_epoch=9),
        ],
        src_groups=[group("g1")],
        src_offsets=[offset("g1", 90)],
        dst_mirror=[mirror("orders", 0, last_offset=90), mirror("orders", 1, last_offset=50)],
    )
    outcome = failback_readiness(CFG, tmp_path / "failback", source=src, destination=dst, engine="local")
    assert outcome.summary["readiness"] == "GO" and outcome.exit_code == 0, _statuses(outcome.summary)
    assert outcome.summary["failback_truncation_records"] == 0
    assert {_statuses(outcome.summary)[i] for i in ("CM-FAILBACK-1", "CM-FAILBACK-2", "CM-FAILBACK-3")} == {
        "pass"
    }


def _failback_pair(root: Path, after_stop: int) -> tuple[Path, Path]:
    """The old source holds 10 records never mirrored on orders-0 (100 > 90) and
    ``after_stop`` produced since; g1 committed past the truncation point; a transaction is
    open on orders-1 when records were produced after the stop."""
    busy = after_stop > 0
    return write_pair(
        root,
        [
            part("orders", 0, high_watermark=100 + after_stop, last_stable_offset=100 + after_stop),
            part(
                "orders",
                1,
                high_watermark=50 + after_stop,
                last_stable_offset=50 if busy else 50 + after_stop,
            ),
        ],
        [
            part("orders", 0, high_watermark=91, leader_epoch=9),
            part("orders", 1, high_watermark=51, leader_epoch=9),
        ],
        src_groups=[group("g1")],
        src_offsets=[offset("g1", 95)],
        dst_mirror=[mirror("orders", 0, last_offset=90), mirror("orders", 1, last_offset=50)],
    )


@pytest.mark.parametrize("after_stop", [0, 20])
def test_failback_readiness_counts_what_mirroring_back_would_truncate(
    after_stop: int, tmp_path: Path
) -> None:
    """See ``_failback_pair``: 10 records never mirrored and ``after_stop`` produced since."""
    busy = after_stop > 0
    src, dst = _failback_pair(tmp_path / "snap", after_stop)
    outcome = failback_readiness(CFG, tmp_path / "failback", source=src, destination=dst, engine="local")
    summary = outcome.summary
    assert summary["failback_truncation_records"] == 10 + after_stop + after_stop
    assert summary["readiness"] == "NO-GO" and outcome.exit_code == 1
    assert _examples(summary, "CM-FAILBACK-1", "topic", "partition", "truncate_records") == {
        ("orders", 0, 10 + after_stop),
        *([("orders", 1, after_stop)] if busy else []),
    }
    assert _statuses(summary)["CM-FAILBACK-2"] == "warn"
    assert _statuses(summary)["CM-FAILBACK-3"] == ("fail" if busy else "pass")


def test_verify_reads_a_readiness_run_of_another_version_where_its_columns_suffice(tmp_path: Path) -> None:
    """Comparison tables carry a format version (compare/formats.json): failover verify reads
    the readiness run's partitions where the columns it needs are there, whatever else the
    other version wrote or left out, and otherwise refuses it naming both formats."""
    import json

    import pyarrow.parquet as pq

    from audit.compare.failover import BEFORE_COLUMNS
    from audit.errors import InputError
    from audit.schemas import comparison_format

    before = _readiness_run(tmp_path)
    formats = json.loads((before / "compare" / "formats.json").read_text())
    assert formats["tables"]["partitions"] == comparison_format("partitions")
    dst = _after_the_predicted_loss(tmp_path)
    path = before / "compare" / "partitions.parquet"
    # An older version: no formats.json, and only the columns failover verify reads.
    (before / "compare" / "formats.json").unlink()
    pq.write_table(pq.read_table(path, columns=list(BEFORE_COLUMNS)), path)
    outcome = failover_verify(CFG, before, tmp_path / "verify", destination=dst, engine="local")
    assert outcome.summary["failover"]["realized_loss_records"] == 10
    # One it needs gone: refused with the formats, never a bare missing-column error.
    pq.write_table(pq.read_table(path, columns=[c for c in BEFORE_COLUMNS if c != "lag_records"]), path)
    with pytest.raises(InputError) as refused:
        failover_verify(CFG, before, tmp_path / "verify2", destination=dst, engine="local")
    message = str(refused.value)
    assert "is format 0 of table 'partitions' (written before format versions were recorded)" in message
    assert f"writes format {comparison_format('partitions')} and needs its column lag_records" in message


def _after_a_stop_of_state(root: Path, records: tuple[Any, ...]) -> Path:
    """The destination after the stop (``_after_stop``'s, source's end unknown), its mirror
    state the records given."""
    _, dst = write_pair(
        root / "after",
        [],
        [
            part("orders", 0, high_watermark=91, last_stable_offset=91, leader_epoch=9),
            part("orders", 1, high_watermark=51, last_stable_offset=51, leader_epoch=9),
        ],
        dst_groups=[group("g1"), group("g2"), group("g3")],
        dst_offsets=[offset("g1", 90), offset("g2", 40, partition=1), offset("g3", 30, partition=1)],
        dst_mirror=list(records),
    )
    return dst


# What KIP-1279's CLI rows say of the same stop: state and last mirrored offset, no epoch.
KIP_1279_ROWS = [
    {"mirror": "link-1", "topic": "orders", "partition": 0, "state": "STOPPED", "lastMirrorOffset": 90},
    {"mirror": "link-1", "topic": "orders", "partition": 1, "state": "STOPPED", "lastMirrorOffset": 50},
]


@pytest.mark.parametrize("fixture", ["rest_mirrors_stopped.json", "cli_describe_stopped.json"])
def test_cluster_linkings_state_drives_failover_verify_as_the_equivalent_kip_1279_state(
    tmp_path: Path, fixture: str
) -> None:
    """A promoted Cluster Linking mirror topic (the REST API's or the CLI's JSON) gives
    failover verify the answers KIP-1279's state of the same stop gives: the loss realized
    (10, as predicted) and where groups resume, measured against the same last mirrored
    offsets; the stop's epoch check unchecked, naming the LastMirrorEpoch neither reports,
    never passed."""
    from audit.collect.metadata.mirror_state import parse_mirror_state, read_mirror_state

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "cluster_linking"
    outcomes = {}
    for name, state in (
        ("cluster-linking", read_mirror_state(fixtures / fixture)),
        ("kip-1279", parse_mirror_state(KIP_1279_ROWS, "rows.json")),
    ):
        before = _readiness_run(tmp_path / name)
        dst = _after_a_stop_of_state(tmp_path / name, state.records)
        outcomes[name] = failover_verify(
            CFG, before, tmp_path / name / "verify", destination=dst, engine="local"
        )
    linked, kip = outcomes["cluster-linking"].summary, outcomes["kip-1279"].summary
    assert _statuses(linked) == _statuses(kip)
    assert linked["failover"] == kip["failover"]
    assert (linked["readiness"], outcomes["cluster-linking"].exit_code) == (
        kip["readiness"],
        outcomes["kip-1279"].exit_code,
    )
    assert linked["failover"]["realized_loss_records"] == 10
    assert linked["readiness"] == "NO-GO"  # over a gap: GO only over full coverage
    assert _statuses(linked)["CM-FAILOVER-1"] not in ("pass", "skipped")
    (gap,) = {g["missing"] for g in linked["invariants"]["CM-FAILOVER-1"]["unchecked_gaps"]}
    assert gap == "mirror state field LastMirrorEpoch"
