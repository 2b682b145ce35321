"""Mode mm2's records scan plan (audit/collect/records/digests.py): which ranges of which
side are read, and what a range that was not read whole says."""

from __future__ import annotations

from audit.collect.records.digests import _range_rows, digest_ranges
from audit.config_file import parse_config
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
    rows = dict(_range_rows(ranges, outcomes, CFG))
    assert (rows["source"].complete, rows["source"].read_to) == (True, 7)
    assert (rows["destination"].complete, rows["destination"].read_to) == (False, 1)
    assert rows["destination"].isolation == "read_committed"
    lost = dict(_range_rows(ranges, [], CFG))["destination"]
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
