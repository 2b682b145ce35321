"""Narrowing: each chunk whose checksums differ is read again on both clusters, record by
record, down to its first divergent record (offset, kind, both sides abbreviated)."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from typing import Any

from audit.collect.records.chunks import frame
from audit.collect.records.plan import SIDES
from audit.collect.records.read import RangeReader, consumer_settings, cyclic_gc_paused
from audit.config import RecordsConfig

# The kinds of first divergence ``first_divergence`` names (record_divergences.kind):
# payload_differs (key or value), timestamp_differs, headers_differs, missing_record (the
# destination lacks a record the source has, later ones shifted), duplicate_record (the
# destination repeats the record before), extra_record (a record where the source has
# none), gap_pattern_differs (a record on one side, a gap: marker or compaction hole, on
# the other), compaction_only (a compacted topic: different offsets held, equal where
# both hold one), none_found (equal on a re-read: the chunk changed since the scan).


def _escaped(text: str) -> str:
    """Printable characters as they are, everything else as a Python-style escape, and a
    backslash doubled: lossless, so a NUL byte never looks like a literal '.', and safe to
    show in a terminal or a report. Bytes that are not UTF-8 arrive as surrogates
    (``surrogateescape``) and come out as ``\\xNN``."""
    out = []
    for ch in text:
        if "\udc80" <= ch <= "\udcff":
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        elif ch == "\\":
            out.append("\\\\")
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            # \u, never \x, for a decoded character: U+009B and the raw byte 0x9b (not
            # UTF-8, \x9b above) must not print alike.
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
    return "".join(out)


def _abbrev(value: bytes | None, limit: int = 48) -> str:
    """A value for a divergence message: null told apart from empty, its length, and at
    most ``limit`` bytes of it escaped losslessly."""
    if value is None:
        return "null"
    text = _escaped(value[:limit].decode("utf-8", "surrogateescape"))
    return f"{text}{'...' if len(value) > limit else ''} ({len(value)} bytes)"


def describe_record(m: Any) -> str:
    """One record, abbreviated: header values are shown too, or a headers_differs
    divergence would print the same line for both sides."""
    if m is None:
        return "no record"
    headers = ", ".join(f"{_escaped(k)}={_abbrev(v, 24)}" for k, v in m.headers() or [])
    return f"key={_abbrev(m.key())} value={_abbrev(m.value())} ts={m.timestamp()[1]} headers=[{headers}]"


def _same_record(a: Any, b: Any) -> bool:
    return (a.key(), a.value(), a.timestamp()[1], a.headers() or []) == (
        b.key(),
        b.value(),
        b.timestamp()[1],
        b.headers() or [],
    )


def first_divergence(
    src: Iterator[Any], dst: Iterator[Any], compacted: bool
) -> tuple[int | None, str, Any, Any]:
    """(offset, kind, source message, destination message) of the first difference of two
    offset-ordered streams of messages, or (None, "none_found" | "compaction_only", ...).
    Streams are consumed one record at a time: memory stays flat whatever the range."""
    s, d = next(src, None), next(dst, None)
    prev_src = None
    skipped = False
    while s is not None or d is not None:
        so = s.offset() if s is not None else None
        do = d.offset() if d is not None else None
        if s is not None and d is not None and so is not None and so == do:
            if frame(so, s.timestamp()[1], s.key(), s.value(), s.headers()) != frame(
                so, d.timestamp()[1], d.key(), d.value(), d.headers()
            ):
                nxt = next(src, None)
                if prev_src is not None and _same_record(d, prev_src):
                    return so, "duplicate_record", s, d
                if nxt is not None and _same_record(d, nxt):
                    return so, "missing_record", s, d
                if (s.key(), s.value()) != (d.key(), d.value()):
                    return so, "payload_differs", s, d
                if s.timestamp()[1] != d.timestamp()[1]:
                    return so, "timestamp_differs", s, d
                return so, "headers_differs", s, d
            prev_src, s, d = s, next(src, None), next(dst, None)
            continue
        if compacted:  # an offset one side compacted away: compare only what both hold
            skipped = True
            if do is None or (so is not None and so < do):
                prev_src, s = s, next(src, None)
            else:
                d = next(dst, None)
            continue
        if do is None or (so is not None and so < do):
            return so, "missing_record" if d is None else "gap_pattern_differs", s, None
        return do, "extra_record" if s is None else "gap_pattern_differs", None, d
    return None, "compaction_only" if skipped else "none_found", None, None


def _narrow_task(
    clients: dict[str, dict[str, str]], cfg: RecordsConfig
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from audit.schemas import arrow_schema

        schema = arrow_schema("record_divergences")
        readers = {
            side: RangeReader(consumer_settings(clients[side], cfg.isolation), cfg.timeout_seconds)
            for side in SIDES
        }
        try:
            for rb in batches:
                rows = []
                for r in rb.to_pylist():
                    topic, partition, lo, hi = r["topic"], r["partition"], r["chunk_start"], r["chunk_end"]

                    def stream(
                        side: str, topic: str = topic, partition: int = partition, lo: int = lo, hi: int = hi
                    ) -> Generator[Any, None, None]:
                        for batch in readers[side].read(topic, partition, lo, hi):
                            yield from batch

                    try:
                        src_it, dst_it = stream("source"), stream("destination")
                        with cyclic_gc_paused():
                            offset, kind, s, d = first_divergence(src_it, dst_it, bool(r["compacted"]))
                        src_it.close()
                        dst_it.close()
                    except Exception as exc:
                        offset, kind, s, d = None, "not_narrowed", None, None
                        r["detail"] = f"{type(exc).__name__}: {exc}"[:300]
                    rows.append(
                        {
                            "topic": topic,
                            "partition": partition,
                            "chunk_start": lo,
                            "chunk_end": hi,
                            "offset": offset,
                            "kind": kind,
                            "source_record": describe_record(s) if offset is not None else None,
                            "destination_record": describe_record(d) if offset is not None else None,
                            "detail": r.get("detail"),
                        }
                    )
                if rows:
                    yield pa.RecordBatch.from_pylist(rows, schema=schema)
        finally:
            for reader in readers.values():
                reader.close()

    return run


def narrow(spark: Any, mismatches: Any, clients: dict[str, dict[str, str]], cfg: RecordsConfig) -> Any:
    """First divergence of each mismatching chunk (at most ``narrow_max_chunks``, the
    earliest of each partition first), re-reading only those chunks on both clusters."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from audit.schemas import spark_schema

    ranked = mismatches.withColumn(
        "n", F.row_number().over(Window.partitionBy("topic", "partition").orderBy("chunk_start"))
    )
    picked = ranked.orderBy("n", "topic", "partition").limit(cfg.narrow_max_chunks).drop("n")
    picked = picked.repartition(max(1, spark.sparkContext.defaultParallelism))
    return picked.mapInArrow(_narrow_task(clients, cfg), spark_schema("record_divergences"))
