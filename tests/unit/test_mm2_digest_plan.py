"""Mode mm2's records scan plan (audit/collect/records/digests.py): which ranges of which
side are read, and what a range that was not read whole says."""

from __future__ import annotations

from pathlib import Path

from audit.collect.records.digest_history import DigestHistory
from audit.collect.records.digests import digest_ranges, isolation_of
from audit.collect.records.plan import read_range_rows
from audit.config_file import parse_config
from audit.snapshot import RecordDigestCutRecord
from tests.snapshots import part

CFG = parse_config(
    "mode: mm2\nscope:\n  topics:\n    exclude: ['private']\n"
    "records:\n  chunk_records: 50\n  split_records: 100\n",
    env={},
)


def test_each_side_is_read_from_its_log_start_to_where_its_isolation_reads() -> None:
    src = [
        part("orders", 0, log_start_offset=10, high_watermark=250, last_stable_offset=240),
        part("private", 0, high_watermark=5),  # out of scope
        part("lonely", 0, high_watermark=5),  # no replica on the target
    ]
    dst = [part("source.orders", 0, log_start_offset=0, high_watermark=200, last_stable_offset=190)]
    ranges = digest_ranges(src, dst, CFG)
    # The source as MirrorMaker 2 reads it (read_uncommitted: to the high watermark), cut at
    # multiples of split_records; the replica read_committed (to its last stable offset).
    assert ranges == [
        ("source", "orders", 0, 10, 100, False),
        ("source", "orders", 0, 100, 200, False),
        ("source", "orders", 0, 200, 250, False),
        ("destination", "source.orders", 0, 0, 100, False),
        ("destination", "source.orders", 0, 100, 190, False),
    ]
    committed = parse_config("mode: mm2\nmirror:\n  mm2:\n    consumer_isolation: read_committed\n", env={})
    assert digest_ranges(src[:1], dst, committed)[0] == ("source", "orders", 0, 10, 240, False)


def test_an_empty_partition_is_stated_as_read_and_a_range_no_task_reported_as_unread() -> None:
    src = [part("orders", 0, log_start_offset=7, high_watermark=7, last_stable_offset=7)]
    dst = [part("source.orders", 0, log_start_offset=0, high_watermark=3, last_stable_offset=3)]
    ranges = digest_ranges(src, dst, CFG)
    assert ranges[0] == ("source", "orders", 0, 7, 7, False)
    outcomes = [("destination", "source.orders", 0, 0, 3, 1, "fetch at offset 1: Broker: Not leader")]
    rows = dict(read_range_rows(ranges, outcomes, lambda side: isolation_of(side, CFG)))
    assert (rows["source"].complete, rows["source"].read_to) == (True, 7)
    assert (rows["destination"].complete, rows["destination"].read_to) == (False, 1)
    assert rows["destination"].isolation == "read_committed"
    lost = dict(read_range_rows(ranges, [], lambda side: isolation_of(side, CFG)))["destination"]
    assert (lost.complete, lost.read_to, lost.detail) == (False, 0, "no task reported reading this range")


def test_a_setting_the_batch_reader_cannot_honour_stops_the_scan_naming_it() -> None:
    import pytest

    from audit.collect.records.digests import _require_batch_reader
    from audit.errors import ConfigError

    pytest.importorskip("mirror_audit_native")
    plain = {"bootstrap.servers": "x:1"}
    _require_batch_reader({"source": plain, "destination": plain})
    with pytest.raises(
        ConfigError, match=r"cannot use the destination settings: the property socket\.keepalive"
    ):
        _require_batch_reader({"source": plain, "destination": {**plain, "socket.keepalive.enable": "true"}})


def _cut(topic: str, src_through: int, dst_through: int) -> RecordDigestCutRecord:
    return RecordDigestCutRecord(topic, 0, src_through, dst_through, 0)


def test_past_a_cut_the_replica_is_read_after_it_and_the_source_from_the_lookback() -> None:
    cfg = parse_config(
        "mode: mm2\nrecords:\n  chunk_records: 100\n  split_records: 1000\n  mm2_replay_lookback: 30\n",
        env={},
    )
    src = [part("orders", 0, high_watermark=250, last_stable_offset=250)]
    dst = [part("source.orders", 0, high_watermark=240, last_stable_offset=240)]
    ranges = digest_ranges(src, dst, cfg, {("orders", 0): _cut("orders", 199, 189)})
    # Judged from source 200 / replica 190; the 30 source offsets before 200 read again so
    # a replayed copy of one of them is a duplicate.
    assert ranges == [
        ("source", "orders", 0, 170, 250, False),
        ("destination", "source.orders", 0, 190, 240, False),
    ]
    # Nothing new on the replica: nothing to explain, so no lookback.
    quiet = digest_ranges(src, dst, cfg, {("orders", 0): _cut("orders", 239, 239)})
    assert quiet == [
        ("source", "orders", 0, 240, 250, False),
        ("destination", "source.orders", 0, 240, 240, False),
    ]


def test_a_cut_is_dropped_where_it_no_longer_describes_the_partition(tmp_path: Path) -> None:
    history = DigestHistory.load(tmp_path, ("src-id", "dst-id"))
    history.data["partitions"] = {
        f"{topic}/0": {"topic_id": None, "src_through": u, "dst_through": d, "verified_from": 0}
        for topic, u, d in (
            ("kept", 99, 99),
            ("expired", 9, 9),  # the source's log start is 50 now
            ("truncated", 500, 99),  # past the source's end
            ("gone", 9, 9),  # no longer on the source
        )
    }
    src = [
        part("kept", 0, high_watermark=200),
        part("expired", 0, log_start_offset=50, high_watermark=200),
        part("truncated", 0, high_watermark=200),
    ]
    dst = [part(f"source.{t}", 0, high_watermark=200) for t in ("kept", "expired", "truncated")]
    cuts, dropped = history.cuts(src, dst, CFG)
    assert list(cuts) == [("kept", 0)]
    assert dropped == [
        "expired/0: the source's log start (50) passed the cut (9)",
        "truncated/0: the cut lies past the end of a side (truncated, or rebuilt)",
    ]


def test_a_run_keeps_the_cut_it_found_and_a_judged_partition_without_one_loses_its_own(
    tmp_path: Path,
) -> None:
    history = DigestHistory.load(tmp_path, ("src-id", "dst-id"))
    old = {"topic_id": "t", "src_through": 5, "dst_through": 5, "verified_from": 0}
    history.data["partitions"] = {"a/0": dict(old), "b/0": dict(old), "c/0": dict(old)}
    history.settle(
        [
            # judged, a cut found
            {
                "topic": "a",
                "partition": 0,
                "compared_src_records": 4,
                "clean_src_through": 9,
                "clean_dst_through": 8,
                "verified_from": 0,
            },
            # judged (a --full run), no clean pair before its first finding
            {
                "topic": "b",
                "partition": 0,
                "compared_src_records": 4,
                "clean_src_through": None,
                "clean_dst_through": None,
                "verified_from": None,
            },
            # not judged (a range unread): keeps its cut
            {
                "topic": "c",
                "partition": 0,
                "compared_src_records": None,
                "clean_src_through": None,
                "clean_dst_through": None,
                "verified_from": None,
            },
        ],
        {"a": "t", "b": "t", "c": "t"},
    )
    history.save()
    again = DigestHistory.load(tmp_path, ("src-id", "dst-id")).partitions()
    assert {k: (v["src_through"], v["dst_through"]) for k, v in again.items()} == {
        ("a", 0): (9, 8),
        ("c", 0): (5, 5),
    }
    # Another cluster pair's history proves nothing here.
    assert DigestHistory.load(tmp_path, ("src-id", "rebuilt")).partitions() == {}
