"""What differs between the supported Kafka releases, on each release but the default.

The whole suite runs against the default release (``DEFAULT_KAFKA_VERSION``). What a broker
release changes is what the auditor reads from it and how: the admin calls of the snapshot
(offsets, epochs, committed offsets and their epochs, groups and their types, transactions,
share groups through the Java client), the record and batch collectors over the wire and
from the log files, and the sandbox's mirror emulator that makes the evidence. What it reads
is then compared and judged by code that does not depend on the release. So on a sandbox of
each other release, started here:

- the faulty demo's sandbox is prepared (the emulator mirrors, syncs groups and share
  groups, moves leaders, leaves a transaction open, corrupts one record), and the nightly
  job runs with the in-process engine: the snapshot and the records scan on this release,
  then every metadata invariant judged, which must name exactly the demo's metadata faults;
  the records scan's chunks must differ exactly where the demo corrupted a record, narrowed
  to that record (the evidence CM-DATA-1 judges; ``make demo`` judges it on Spark on the
  default release);
- the segment scan and the wire fetch: the same source partitions read from the broker's
  log files and over the wire (Fetch) must give the same batches and markers, cell by cell;
- a demo on a sandbox of its own stops it at the end (the suite's other demos share one);
- MirrorMaker 2, on the oldest line only (3.9: its own connect-mirror and a broker before
  the 4.0 protocol clean-up): the faulty MM2 demo's faults caught exactly, each named by its
  rows (tests/mm2_demo_faults.py; the suite runs that demo here only), a whole run, since what
  it proves is MirrorMaker 2's own topics and formats as that release writes them, read and
  judged record by record. On 4.1 and 4.3 it is left out: the default suite already runs
  4.3.1's connect-mirror (the fallback for 4.4.0's, which Maven Central lacks) and MM2 is a
  client whose protocol use does not change between these lines.

docs/compatibility.md lists this split.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from audit.pipeline import nightly
from audit.sandbox import demo, demo_mm2
from audit.sandbox.injected import InjectedFaults
from audit.sandbox.jars import DEFAULT_KAFKA_VERSION, TESTED_KAFKA_VERSIONS, version_tuple
from audit.validate.invariants import CLUSTER_MIRRORING
from tests import mm2_demo_faults
from tests.cli import run_in_process

pytestmark = pytest.mark.integration

OTHER_VERSIONS = [v for v in TESTED_KAFKA_VERSIONS if v != DEFAULT_KAFKA_VERSION]
MM2_VERSIONS = {"3.9.1"}
# Judged by the Spark engine only (the data level); the in-process nightly skips them.
DATA_LEVEL = frozenset(inv.id for inv in CLUSTER_MIRRORING if inv.spark_only)


def _rows(path: Path, topics: set[str], order: str) -> list[dict[str, Any]]:
    drop = ("file", "position", "crc_valid")
    return sorted(
        (
            {k: v for k, v in r.items() if k not in drop}
            for r in pq.read_table(path).to_pylist()
            if r["topic"] in topics
        ),
        key=lambda r: (r["topic"], r["partition"], r[order]),
    )


def _first_difference(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> str:
    for x, y in zip(a, b, strict=False):
        if x != y:
            return f"wire {x} != files {y}: {sorted(k for k in x if x.get(k) != y.get(k))}"
    return f"{len(a)} rows over the wire, {len(b)} from the files"


@pytest.mark.parametrize("version", OTHER_VERSIONS)
def test_what_the_auditor_reads_is_read_alike_on_each_supported_release(
    version: str, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MIRROR_AUDIT_KAFKA_VERSION", version)
    with demo.prepared(healthy=False, workdir=tmp_path / "sandbox") as state:
        assert state.kafka_version == version
        outcome = nightly(demo.demo_config(state, tmp_path / "reports"), engine="local")
        metadata = InjectedFaults(
            fail=demo.INJECTED.fail - DATA_LEVEL, warn=(demo.INJECTED.warn or frozenset()) - DATA_LEVEL
        )
        assert metadata.problems(outcome.summary) == [], outcome.summary["invariants"]
        assert demo.INJECTED.fail & DATA_LEVEL == {"CM-DATA-1"}  # what the chunks below stand for
        # The records scan on this release: both sides' chunks equal but the one holding the
        # corrupted record, narrowed to it.
        topic, partition, corrupted = demo.CORRUPTED
        src_chunks, dst_chunks = (
            {
                (c["topic"], c["partition"], c["chunk_start"]): c
                for c in pq.read_table(outcome.run_dir / side / "record_chunks.parquet").to_pylist()
            }
            for side in ("source", "destination")
        )
        differing = {
            k
            for k in src_chunks.keys() & dst_chunks.keys()
            if src_chunks[k]["checksum"] != dst_chunks[k]["checksum"]
        }
        ((t, p, start),) = differing
        assert (t, p) == (topic, partition) and start <= corrupted < dst_chunks[(t, p, start)]["chunk_end"]
        assert len(src_chunks) >= 10 and src_chunks.keys() - dst_chunks.keys() == {
            k
            for k in src_chunks
            if k[0] == "audit-log" and k[1] == 2  # not on the destination
        }
        (divergence,) = pq.read_table(
            outcome.run_dir / "destination" / "record_divergences.parquet"
        ).to_pylist()
        assert (divergence["topic"], divergence["partition"], divergence["offset"], divergence["kind"]) == (
            topic,
            partition,
            corrupted,
            "payload_differs",
        )
        # Share groups: none before 4.2 (nothing in scope, never an error); the demo's from 4.2.
        share_note = json.loads((outcome.run_dir / "source" / "manifest.json").read_text())["notes"]
        if (version_tuple(version) or (0, 0, 0)) < (4, 2, 0):
            assert share_note["share_groups"].startswith("nothing in scope"), share_note
        else:
            assert share_note["share_groups"].startswith("1 share groups, start offsets read"), share_note

        # The same source partitions from the log files and over the wire.
        topics = {"orders", "audit-log"}
        config = tmp_path / "wire.yaml"
        config.write_text(
            f"source:\n  bootstrap_servers: {state.cluster('source').bootstrap}\n  timeout_seconds: 20\n"
            "scope:\n  topics:\n    include: [orders, audit-log]\n"
        )
        snap = tmp_path / "wire-source"
        shutil.copytree(outcome.run_dir / "source", snap)
        proc = run_in_process(
            "segments", "fetch", "--config", str(config), "--role", "source", "--out", str(snap)
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        # Every replica of the source holds the same log; node 1's copy is read.
        data = Path(state.cluster("source").node(1).node_dir) / "data"
        dirs = sorted(d for d in data.iterdir() if d.is_dir() and d.name.rsplit("-", 1)[0] in topics)
        proc = run_in_process(
            "segments", "scan", *map(str, dirs), "--out", str(tmp_path / "seg"), "--role", "source", "--deep"
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        # The wire reads up to the snapshot's high watermarks; the files may have grown
        # since (the demo's open transaction times out into an ABORT marker).
        high = {
            (p["topic"], p["partition"]): p["high_watermark"]
            for p in pq.read_table(snap / "partitions.parquet").to_pylist()
        }
        seg = [
            r
            for r in _rows(tmp_path / "seg" / "batches.parquet", topics, "base_offset")
            if r["base_offset"] < high[(r["topic"], r["partition"])]
        ]
        assert len(seg) >= 5 and all(
            r["crc_valid"] is not False
            for r in pq.read_table(tmp_path / "seg" / "batches.parquet").to_pylist()
        )
        wire = _rows(snap / "batches.parquet", topics, "base_offset")
        assert len(wire) == len(seg), _first_difference(wire, seg)
        assert wire == seg, _first_difference(wire, seg)
        markers = [
            m
            for m in _rows(tmp_path / "seg" / "markers.parquet", topics, "offset")
            if m["offset"] < high[(m["topic"], m["partition"])]
        ]
        assert [m["marker"] for m in markers if m["topic"] == "orders"][:3] == ["COMMIT", "ABORT", "COMMIT"]
        assert _rows(snap / "markers.parquet", topics, "offset") == markers
        note = json.loads((snap / "manifest.json").read_text())["notes"]["batches"]
        assert note["read"] == "wire"
    # The demo started this sandbox, so it stopped it.
    assert not (tmp_path / "sandbox" / "state.json").exists()


@pytest.mark.parametrize("version", sorted(MM2_VERSIONS))
def test_mirror_maker_2_audit_runs_on_the_oldest_supported_line(
    version: str, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MIRROR_AUDIT_KAFKA_VERSION", version)
    outcome = demo_mm2.run_mm2_demo(
        healthy=False, workdir=tmp_path / "sandbox", output_root=tmp_path / "reports"
    )
    assert outcome.exit_code == 1
    mm2_demo_faults.assert_caught_exactly(outcome.summary)
    # Its own release's connect-mirror ran (no fallback): Kafka's clients log their version.
    mm2_log = (tmp_path / "sandbox" / "mm2" / "mirror-maker.log").read_text(errors="replace")
    assert f"Kafka version: {version}" in mm2_log
    assert not (tmp_path / "sandbox" / "state.json").exists()  # its own sandbox, stopped
