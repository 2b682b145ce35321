"""MM2-DATA-1 to -4 against the sandbox's real MirrorMaker 2: in one session of it (started
and stopped a few times, as its operators would), MirrorMaker 2 itself makes each fault, and
each is caught with exact counts checked against kcat's reading of both topics (not the
auditor's own reader):

- skip: MirrorMaker 2 stopped, its committed source position moved forward in Connect's
  offsets topic, started again: the records in between stay on the source only (missing);
- stray: a record produced straight into the replica (unexplained);
- replay: MirrorMaker 2 stopped, its committed position moved back, started again: a task
  restarted behind its last commit copies those records again (duplicates);
- aborted transactions: copied while MirrorMaker 2 reads uncommitted, left behind while it
  reads committed, and never called missing either way (the auditor reads the source as
  MirrorMaker 2's consumer does: ``mirror.mm2.consumer_isolation``);
- compacted offset syncs: the offset-syncs topic is cleaned while the session runs, so only
  the newest sync of each partition is left when the audit reads it; the compared range and
  the counts stay right, and what it covers is stated.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from audit.collect.metadata.mm2_formats import decode_offset_sync
from audit.sandbox import mm2
from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import Record, client_conf, create_topic, high_watermark, produce, scan_messages
from tests.cleaner import cleaner_lines, prompt_cleaner
from tests.cli import run_in_process, submit_cli
from tests.kcat import kcat_records

# Source topics of this module, one partition each; "tick" only makes the offset-syncs
# topic roll a segment, so that the cleaner may compact what came before.
NAMES = ("skip", "stray", "dup", "txu", "txc", "tick")
UNCOMMITTED = ("skip", "stray", "dup", "txu")  # audited as read while MM2 read uncommitted
SKIPPED = 10
REPLAYED = 10
# MM2-DATA's statuses over UNCOMMITTED: records missing and unexplained, copies twice.
UNCOMMITTED_STATUSES = {
    "MM2-DATA-1": "fail",
    "MM2-DATA-2": "fail",
    "MM2-DATA-3": "warn",
    "MM2-DATA-4": "pass",
}
SYNCS_TOPIC = mm2.offset_syncs_topic(mm2.Mm2Options(offset_syncs_location="target"))


def _options(run: str, isolation: str | None = None) -> mm2.Mm2Options:
    return mm2.Mm2Options(
        topics=f"mm2r-{run}-.*",
        groups=f"mm2rg-{run}-none",
        # On the target: this module compacts its offset-syncs topic, which the other MM2
        # modules' (on the source) must keep whole.
        offset_syncs_location="target",
        consumer_isolation=isolation,  # type: ignore[arg-type]
    )


def _produce(bootstrap: str, topic: str, name: str, first: int, count: int) -> None:
    produce(
        bootstrap,
        topic,
        [
            Record(f"k{i % 3}".encode(), f"{name}-{i}".encode(), (("n", str(i).encode()),))
            for i in range(first, first + count)
        ],
        partition=0,
    )


def _abort(bootstrap: str, topic: str, name: str) -> None:
    """Five records in a transaction that is aborted (they and the marker take six offsets)."""
    txn = Producer(client_conf(bootstrap, **{"transactional.id": f"{topic}-writer"}))
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(5):
        txn.produce(topic, value=f"{name}-aborted-{i}".encode(), partition=0)
    txn.flush(30)
    txn.abort_transaction(30)


def _wait_replicas(sandbox: SandboxState, highs: dict[str, int], timeout: float = 120.0) -> None:
    dst = sandbox.cluster("destination").bootstrap
    deadline = time.monotonic() + timeout
    while True:
        now = {t: high_watermark(dst, t) for t in highs}
        if now == highs:
            return
        assert time.monotonic() < deadline, f"replicas at {now}, expected {highs}"
        time.sleep(0.5)


def _syncs(bootstrap: str, topics: set[str]) -> dict[str, int]:
    """How many offset syncs of each of ``topics`` the offset-syncs topic holds now."""
    out = dict.fromkeys(topics, 0)
    for msg in scan_messages(bootstrap, SYNCS_TOPIC, 0, 0, high_watermark(bootstrap, SYNCS_TOPIC)):
        sync = decode_offset_sync(msg.key(), msg.value())
        if sync.topic in out:
            out[sync.topic] += 1
    return out


def _compact_syncs_faster(sandbox: SandboxState) -> None:
    """The offset-syncs topic rolls a segment a second and is cleaned as soon as anything is
    dirty (with :func:`tests.cleaner.prompt_cleaner`, the cleaner looks every half second)."""
    admin = AdminClient(client_conf(sandbox.cluster("destination").bootstrap))
    op = AlterConfigOpType.SET
    topic = ConfigResource(
        "topic",
        SYNCS_TOPIC,
        incremental_configs=[
            ConfigEntry("segment.ms", "1000", incremental_operation=op),
            ConfigEntry("min.cleanable.dirty.ratio", "0.01", incremental_operation=op),
        ],
    )
    for future in admin.incremental_alter_configs([topic]).values():
        future.result(timeout=30)


@pytest.fixture(scope="module")
def faults(sandbox: SandboxState) -> Iterator[dict[str, str]]:
    """One MirrorMaker 2 session making every fault; yields the source topics by name."""
    run = uuid.uuid4().hex[:6]
    src, dst = sandbox.cluster("source").bootstrap, sandbox.cluster("destination").bootstrap
    topics = {n: f"mm2r-{run}-{n}" for n in NAMES}
    remote = {n: mm2.remote_topic(t, mm2.Mm2Options()) for n, t in topics.items()}
    for t in topics.values():
        create_topic(src, t)
    with prompt_cleaner(sandbox.cluster("destination")):
        try:
            # Reading uncommitted (MM2's default): the first copies, an aborted transaction among them.
            mm2.start(sandbox, _options(run))
            _compact_syncs_faster(sandbox)
            for n in ("skip", "stray", "dup"):
                _produce(src, topics[n], n, 0, 20)
            _produce(src, topics["txu"], "txu", 0, 5)
            _abort(src, topics["txu"], "txu")
            _produce(src, topics["txu"], "txu", 5, 5)
            _wait_replicas(
                sandbox, {remote["skip"]: 20, remote["stray"]: 20, remote["dup"]: 20, remote["txu"]: 15}
            )
            # A stray record in the replica, between two runs of copies.
            produce(dst, remote["stray"], [Record(None, b"stray-intruder")], partition=0)
            _produce(src, topics["stray"], "stray", 20, 20)
            _wait_replicas(sandbox, {remote["stray"]: 41})
            mm2.stop(sandbox)  # graceful: every position committed

            # Stopped: records arrive and MM2's committed position moves past SKIPPED of them;
            # another partition's position moves back over REPLAYED it had copied.
            _produce(src, topics["skip"], "skip", 20, 20)
            mm2.move_position(sandbox, topics["skip"], 0, SKIPPED)
            mm2.move_position(sandbox, topics["dup"], 0, -REPLAYED)
            mm2.start(sandbox, _options(run))
            _wait_replicas(sandbox, {remote["skip"]: 40 - SKIPPED, remote["dup"]: 20 + REPLAYED})
            mm2.stop(sandbox)

            # Reading committed: an aborted transaction stays behind; the tick rolls the syncs' log.
            mm2.start(sandbox, _options(run, "read_committed"))
            _produce(src, topics["txc"], "txc", 0, 5)
            _abort(src, topics["txc"], "txc")
            _produce(src, topics["txc"], "txc", 5, 5)
            time.sleep(1.5)
            _produce(src, topics["tick"], "tick", 0, 1)
            _wait_replicas(sandbox, {remote["txc"]: 10, remote["tick"]: 1})
            mm2.stop(sandbox)
            # The cleaner leaves each partition's newest sync: the older ones are gone.
            wanted = {topics[n] for n in UNCOMMITTED}
            deadline = time.monotonic() + 90
            while (left := _syncs(dst, wanted)) != dict.fromkeys(wanted, 1):
                assert time.monotonic() < deadline, (
                    f"offset syncs left after compaction: {left}\n"
                    + cleaner_lines(sandbox.cluster("destination"))
                )
                time.sleep(1)
            yield topics
        finally:
            mm2.stop(sandbox)


def _nightly(
    sandbox: SandboxState, tmp: Path, topics: list[str], isolation: str, run: str | None = None
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The nightly audit of ``topics`` with MM2's isolation (into ``tmp/run``, by default
    named after the isolation): its invariants and its mm2_record_partitions rows by
    source topic."""
    cfg = _nightly_config(sandbox, tmp, topics, isolation)
    out = tmp / (run or isolation)
    proc = run_in_process("nightly", "--config", str(cfg), "--out", str(out))
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    invariants = json.loads((out / "summary.json").read_text())["invariants"]
    rows = (
        ds.dataset(str(out / "compare" / "mm2_record_partitions.parquet"), format="parquet")
        .to_table()
        .to_pylist()
    )
    return invariants, {r["topic"]: r for r in rows}


def _nightly_config(sandbox: SandboxState, tmp: Path, topics: list[str], isolation: str) -> Path:
    """The nightly's configuration (``tmp/<isolation>.yaml``): mode mm2 over ``topics``,
    records read, MM2's isolation."""
    cfg = tmp / f"{isolation}.yaml"
    cfg.write_text(
        "mode: mm2\n"
        f"source:\n  bootstrap_servers: {sandbox.cluster('source').bootstrap}\n  timeout_seconds: 30\n"
        f"destination:\n  bootstrap_servers: {sandbox.cluster('destination').bootstrap}\n"
        "  timeout_seconds: 30\n"
        f"mirror:\n  mm2:\n    offset_syncs_topic_location: target\n    consumer_isolation: {isolation}\n"
        "records:\n  enabled: true\n"
        "readiness:\n  nightly_data_max_age_hours: 24\n"
        "spark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: '2'\n"
        f"scope:\n  topics:\n    include: {json.dumps(topics)}\n  groups:\n    include: ['mm2rg-none']\n"
    )
    return cfg


def _by_topic(path: Path, *cols: str) -> dict[str, list[tuple[Any, ...]]]:
    """A scanned table's ``cols`` per topic (every partition: these topics have one)."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for r in ds.dataset(str(path), format="parquet").to_table().to_pylist():
        out.setdefault(r["topic"], []).append(tuple(r[c] for c in cols))
    return out


def _statuses(inv: dict[str, Any]) -> dict[str, str]:
    return {i: inv[i]["status"] for i in ("MM2-DATA-1", "MM2-DATA-2", "MM2-DATA-3", "MM2-DATA-4")}


def test_skip_stray_replay_and_aborted_records_read_uncommitted_are_counted_exactly(
    sandbox: SandboxState, faults: dict[str, str], tmp_path: Path
) -> None:
    src, dst = sandbox.cluster("source").bootstrap, sandbox.cluster("destination").bootstrap
    inv, rows = _nightly(sandbox, tmp_path, [faults[n] for n in UNCOMMITTED], "read_uncommitted")
    assert _statuses(inv) == UNCOMMITTED_STATUSES
    oracle = {}
    for n in UNCOMMITTED:
        source = kcat_records(src, faults[n])
        replica = kcat_records(dst, mm2.remote_topic(faults[n], mm2.Mm2Options()))
        src_values = {v for _, v in source}
        seen: set[str] = set()
        dups = []
        for o, v in replica:
            if v in seen:
                dups.append(o)
            seen.add(v)
        oracle[n] = {
            "missing": [o for o, v in source if v not in seen],
            "unexplained": [o for o, v in replica if v not in src_values],
            "duplicates": dups,
            "records": (len(source), len(replica)),
        }
    # kcat agrees with what was done, so it can judge the auditor.
    assert len(oracle["skip"]["missing"]) == SKIPPED and len(oracle["dup"]["duplicates"]) == REPLAYED
    assert len(oracle["stray"]["unexplained"]) == 1 and oracle["txu"]["records"] == (15, 15)

    # The runs of offsets holding records, kept by the scan as it read (MM2-SKIP-1's
    # evidence), are those of the records kcat reads: txu's abort marker splits its run.
    snapshot = tmp_path / "read_uncommitted" / "source"
    runs = _by_topic(snapshot / "record_digest_runs.parquet", "start_offset", "end_offset")
    for n in UNCOMMITTED:
        consecutive: list[tuple[int, int]] = []
        for o, _ in kcat_records(src, faults[n]):
            if consecutive and consecutive[-1][1] == o:
                consecutive[-1] = (consecutive[-1][0], o + 1)
            else:
                consecutive.append((o, o + 1))
        assert sorted(runs[faults[n]]) == consecutive, n
    assert len(runs[faults["txu"]]) >= 2, runs[faults["txu"]]
    # Each partition was matched as it was read, both sides read whole: its tally is in the
    # snapshot, and no digest of its records was kept (a row per record nobody needs).
    scanned = _by_topic(snapshot / "record_alignments.parquet", "fallback", "digests_kept")
    assert {n: scanned[faults[n]] for n in UNCOMMITTED} == {n: [(None, False)] for n in UNCOMMITTED}
    for side in ("source", "destination"):
        kept = tmp_path / "read_uncommitted" / side / "record_digests.parquet"
        assert ds.dataset(str(kept), format="parquet").count_rows() == 0, side
    note = json.loads((snapshot / "manifest.json").read_text())["notes"]["records"]
    assert (note["matched_as_read"], note["digests_kept_partitions"]) == (len(UNCOMMITTED), 0), note

    for n in UNCOMMITTED:
        row, want = rows[faults[n]], oracle[n]
        got = (
            (row["missing_records"], row["first_missing_offset"]),
            (row["unexplained_records"], row["first_unexplained_offset"]),
            (row["duplicate_records"], row["first_duplicate_offset"]),
        )
        expected = tuple(
            (len(offsets), min(offsets) if offsets else None)
            for offsets in (want["missing"], want["unexplained"], want["duplicates"])
        )
        assert got == expected, (n, row)
        assert row["order_breaks"] == 0, (n, row)
        # The range covers every record of both sides, from the only sync compaction left.
        assert (row["compared_src_records"], row["compared_dst_records"]) == want["records"], (n, row)
        assert row["uncompared_src_offsets"] == 0, (n, row)
        assert row["compared_src_end"] == row["src_high_watermark"], (n, row)
        # Matched as the records streamed through the aligner, not row by row.
        assert row["matching"] == "aligned", (n, row)

    # The first missing record, fetched from the source by the nightly, its content
    # abbreviated in summary.json and the report.
    (first,) = inv["MM2-DATA-1"]["first_missing"]
    skipped_from = oracle["skip"]["missing"][0]
    assert (first["topic"], first["offset"], first["missing_records"]) == (
        faults["skip"],
        skipped_from,
        SKIPPED,
    )
    assert first["source_record"].startswith(
        f"key=k{skipped_from % 3} (2 bytes) value=skip-{skipped_from} (7 bytes) ts="
    ), first
    assert first["source_record"].endswith(f"headers=[n={skipped_from} (2 bytes)]"), first
    nightly_report = (tmp_path / "read_uncommitted" / "report" / "index.html").read_text()
    assert "First missing record per partition" in nightly_report
    assert f"value=skip-{skipped_from} (7 bytes)" in nightly_report

    # Readiness scans no records: it reports this nightly's results with their age and, as
    # the config asks, says NO-GO for the records it found missing and unexplained.
    ready = run_in_process(
        "readiness", "--config", str(tmp_path / "read_uncommitted.yaml"), "--out", str(tmp_path / "ready")
    )
    assert ready.returncode == 1, ready.stdout + ready.stderr
    summary = json.loads((tmp_path / "ready" / "summary.json").read_text())
    nightly = summary["nightly_data"]
    assert nightly["run"] == "read_uncommitted" and 0 <= nightly["age_seconds"] < 3600, nightly
    assert {i: r["status"] for i, r in nightly["invariants"].items()} == _statuses(inv)
    reasons = summary["readiness_reasons"]
    assert "MM2-DATA-1 fail in the latest nightly run (read_uncommitted)" in reasons, reasons
    assert "MM2-DATA-2 fail in the latest nightly run (read_uncommitted)" in reasons, reasons
    # Nothing about the CM data-level invariants, which do not apply in mode mm2.
    assert not [r for r in reasons if "CM-" in r], reasons
    # Its age as the nightly's own summary gives it (minutes pass on a busy machine).
    age = f"{nightly['age_seconds'] / 3600:.1f} h ago"
    line = f"data-level checks from the latest nightly run (read_uncommitted, {age})"
    assert line in ready.stdout, ready.stdout
    report = (tmp_path / "ready" / "report" / "index.html").read_text()
    assert f"from the latest nightly run read_uncommitted, {age}: MM2-DATA-1 fail" in report

    # The next nightly judges only past where this one left each partition verified: the
    # healthy partition has nothing new to judge, its records counted as verified earlier;
    # every fault is found again, from just before it.
    inv2, again = _nightly(sandbox, tmp_path, [faults[n] for n in UNCOMMITTED], "read_uncommitted", "again")
    assert _statuses(inv2) == _statuses(inv)
    healthy = again[faults["txu"]]
    retained = healthy["src_high_watermark"] - healthy["src_log_start_offset"]
    assert (healthy["compared_src_records"], healthy["verified_src_offsets"]) == (0, retained), healthy
    assert (healthy["uncompared_src_offsets"], healthy["missing_records"]) == (0, 0), healthy
    assert healthy["src_read_start"] == healthy["src_high_watermark"], healthy  # no record read again
    for n, column in (
        ("skip", "missing_records"),
        ("stray", "unexplained_records"),
        ("dup", "duplicate_records"),
    ):
        first = f"first_{column.removesuffix('_records')}_offset"
        assert (again[faults[n]][column], again[faults[n]][first]) == (
            rows[faults[n]][column],
            rows[faults[n]][first],
        )
        assert again[faults[n]]["compared_src_start"] > rows[faults[n]]["compared_src_start"], again[
            faults[n]
        ]


def test_the_nightly_on_a_standalone_cluster_matches_each_partition_as_it_reads(
    sandbox: SandboxState, faults: dict[str, str], standalone: Any, tmp_path: Path
) -> None:
    """Mode mm2's nightly submitted by spark-submit to a standalone master and two workers:
    the scan's tasks, in the executors, read both sides of each partition and align them
    as they stream, and every fault comes out counted where MirrorMaker 2 made it, as the
    nightly in this process counts it (the first test, against kcat)."""
    topics = [faults[n] for n in UNCOMMITTED]
    _nightly_config(sandbox, tmp_path, topics, "read_uncommitted")
    out = tmp_path / "cluster"
    proc = submit_cli(
        standalone.master_url,
        "nightly",
        "--config",
        str(tmp_path / "read_uncommitted.yaml"),
        "--out",
        str(out),
    )
    assert proc.returncode == 1, proc.stderr[-3000:]  # MM2-DATA-1 and -2 fail
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["spark_master"] == standalone.master_url
    assert summary["run"]["spark_executors_ran_tasks"] == 2
    assert _statuses(summary["invariants"]) == UNCOMMITTED_STATUSES
    note = json.loads((out / "source" / "manifest.json").read_text())["notes"]["records"]
    assert (note["matched_as_read"], note["digests_kept_partitions"]) == (len(UNCOMMITTED), 0), note
    rows = _by_topic(
        out / "compare" / "mm2_record_partitions.parquet",
        "matching",
        "compared_src_records",
        "compared_dst_records",
        "missing_records",
        "unexplained_records",
        "duplicate_records",
        "first_missing_offset",
        "first_unexplained_offset",
        "first_duplicate_offset",
        "order_breaks",
    )
    assert {n: rows[faults[n]] for n in UNCOMMITTED} == {
        "skip": [("aligned", 40, 40 - SKIPPED, SKIPPED, 0, 0, 20, None, None, 0)],
        "stray": [("aligned", 40, 41, 0, 1, 0, None, 20, None, 0)],
        "dup": [("aligned", 20, 20 + REPLAYED, 0, 0, REPLAYED, None, None, 20, 0)],
        "txu": [("aligned", 15, 15, 0, 0, 0, None, None, None, 0)],
    }


def test_an_aborted_transaction_mirror_maker_reads_committed_is_not_missing(
    sandbox: SandboxState, faults: dict[str, str], tmp_path: Path
) -> None:
    src, dst = sandbox.cluster("source").bootstrap, sandbox.cluster("destination").bootstrap
    topic = faults["txc"]
    inv, rows = _nightly(sandbox, tmp_path, [topic], "read_committed")
    assert _statuses(inv) == dict.fromkeys(_statuses(inv), "pass")
    committed = kcat_records(src, topic, "read_committed")
    everything = kcat_records(src, topic)
    replica = kcat_records(dst, mm2.remote_topic(topic, mm2.Mm2Options()))
    # The aborted records are on the source, only for a reader of uncommitted records.
    assert (len(everything), len(committed), len(replica)) == (15, 10, 10)
    assert [v for _, v in committed] == [v for _, v in replica]
    row = rows[topic]
    assert (row["compared_src_records"], row["compared_dst_records"]) == (len(committed), len(replica))
    assert (row["missing_records"], row["unexplained_records"], row["duplicate_records"]) == (0, 0, 0)
