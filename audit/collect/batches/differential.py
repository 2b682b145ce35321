"""Both batch walkers over the same bytes, side by side: the differential check the
property tests and the coverage-guided fuzzer (``make fuzz``) run on every input.

The columnar walk (``columns.walk_columns``, for mapped files) and the row walker
(``format.walk``) must give the same rows and the same issues for any bytes, combined as
``segments.walk_range`` combines them; and every byte must be accounted for: inside a
row's batch or inside an issue's [position, end_position) (an old-format entry, a batch
with impossible offsets, the rest of a range after damage, zero padding at the end).
"""

from __future__ import annotations

from typing import Any

from audit.collect.batches.columns import walk_columns
from audit.collect.batches.format import ScanSink, walk


def _walk_rows(
    data: bytes, start: int, sink: ScanSink, deep: bool, partial_tail_ok: bool, where: tuple[str, int, str]
) -> None:
    topic, partition, file = where
    walk(
        lambda pos, n: data[pos : pos + n],
        start,
        len(data),
        len(data),
        sink,
        topic=topic,
        partition=partition,
        file=file,
        deep=deep,
        partial_tail_ok=partial_tail_ok,
    )


def row_walk(
    data: bytes,
    deep: bool,
    partial_tail_ok: bool = False,
    start: int = 0,
    where: tuple[str, int, str] = ("t", 0, "seg.log"),
) -> ScanSink:
    """The row walker alone over ``data`` from ``start``: the reference."""
    sink = ScanSink()
    _walk_rows(data, start, sink, deep, partial_tail_ok, where)
    return sink


def combined_walk(
    data: bytes, deep: bool, partial_tail_ok: bool = False
) -> tuple[list[dict[str, Any]], ScanSink]:
    """Rows and issues as the scan of a mapped file gets them: the columnar run, then the
    row walker from where it stopped."""
    import pyarrow as pa

    from audit.collect.batches.scan import scan_schema_arrow

    sink = ScanSink()
    schema = scan_schema_arrow()
    batches, at = walk_columns(
        data, 0, len(data), len(data), sink, schema, topic="t", partition=0, file="seg.log", deep=deep
    )
    if at < len(data):
        _walk_rows(data, at, sink, deep, partial_tail_ok, ("t", 0, "seg.log"))
    rows = pa.Table.from_batches(batches, schema=schema).to_pylist() if batches else []
    return rows + sink.rows(), sink


def _unaccounted(data: bytes, rows: list[dict[str, Any]], sink: ScanSink) -> int | None:
    """The first byte of ``data`` in no row's batch and no issue's [position,
    end_position), or None when every byte is accounted for."""
    spans: dict[int, int] = {r["position"]: r["position"] + r["size_bytes"] for r in rows}
    for issue in sink.issues:
        if issue.position is None:
            continue
        if issue.end_position is None or issue.end_position <= issue.position:
            return issue.position  # an issue at a byte must say where its bytes end
        spans[issue.position] = max(spans.get(issue.position, 0), issue.end_position)
    at = 0
    while at < len(data):
        nxt = spans.get(at)
        if nxt is None or nxt <= at:
            return at
        at = nxt
    return None


def check(data: bytes, deep: bool = True) -> None:
    """Raise AssertionError where the two walks disagree or a byte is unaccounted for; any
    other exception escaping a walker is a finding too."""
    reference = row_walk(data, deep)
    rows, sink = combined_walk(data, deep)

    def key(r: dict[str, Any]) -> Any:
        return r["position"]

    assert sorted(rows, key=key) == sorted(reference.rows(), key=key), "the walkers' rows differ"
    assert sorted((i.position, i.end_position, i.kind, i.detail) for i in sink.issues) == sorted(
        (i.position, i.end_position, i.kind, i.detail) for i in reference.issues
    ), "the walkers' issues differ"
    lost = _unaccounted(data, reference.rows(), reference)
    assert lost is None, f"byte {lost} is in no batch and no issue"
