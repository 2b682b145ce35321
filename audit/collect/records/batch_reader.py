"""The batch reader: records checksummed straight from the record batches of Fetch
responses (``records.reader: batches``).

Why: the librdkafka readers pay for a message object per record (a malloc, a header list
and a copy per header, freed on another thread), which bounds them well below the speed of
the wire (docs/benchmarks.md, "Where the reader's time goes"). Here kafka-python's
FetchSession (collect/batches/wire.py: its connections, SASL, TLS and leader handling)
fetches raw batches and hands each response's bytes to the compiled walker
(native/src/batches.rs: the codecs by their crates, the v2 records walked with no
allocation per record, hashed exactly as the other readers hash them). The rows are the
other readers' rows, cell by cell (tests/integration/test_records_live.py).

It connects only as librdkafka would: a client property kafka-python has no keyword for
is refused by name (``BatchSettingsError``), and ``records.reader: auto`` then reads with
the librdkafka reader instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from audit.collect.batches.wire import FetchResult, FetchSession
from audit.collect.metadata.transactions import kafka_python_from

log = logging.getLogger(__name__)

Range = tuple[str, int, int, int]  # topic, partition, start, end
WaveResult = tuple[list[tuple[Range, list[dict[str, Any]]]], list[tuple[Range, str]]]

# Bytes asked per Fetch: large enough that a response's fixed cost (a round trip, the
# broker's bookkeeping) is small beside its records, small enough that the buffers a
# response passes through are reused by the allocator instead of mapped fresh and faulted
# in page by page (16 MiB cost mimalloc-preloaded workers half as much CPU again, 1 MiB more
# Python per record than 4: measured,
# docs/benchmarks.md "The batch reader").
FETCH_BYTES = 4 << 20
# While a range makes no progress (records not yet stable under read_committed, a broker
# catching up), the broker holds the request this long instead of answering empty at once.
WAIT_MS = 500

# librdkafka consumer properties that shape how librdkafka itself consumes (read.py's
# consumer_settings): nothing of them concerns how a connection is made, so the batch
# reader, which fetches in its own way, may leave them out. Any other property it cannot
# map is refused.
CONSUMER_ONLY = frozenset(
    {
        "group.id",
        "client.id",
        "enable.auto.commit",
        "enable.auto.offset.store",
        "allow.auto.create.topics",
        "auto.offset.reset",
        "isolation.level",
        "enable.partition.eof",
        "fetch.queue.backoff.ms",
        "queued.min.messages",
        "queued.max.messages.kbytes",
        "fetch.max.bytes",
        "max.partition.fetch.bytes",
    }
)


class BatchSettingsError(ValueError):
    """A client setting the batch reader cannot honour (the message names it)."""


@dataclass(frozen=True)
class FetchSettings:
    """What the batch reader connects with: kafka-python's keywords and the isolation."""

    kafka_python: dict[str, Any]
    read_committed: bool


def fetch_settings(consumer: dict[str, Any], timeout: float) -> FetchSettings:
    """The batch reader's settings from the librdkafka consumer settings of
    ``read.consumer_settings``; BatchSettingsError naming what it cannot honour."""
    found = kafka_python_from(consumer, timeout, ignored=CONSUMER_ONLY)
    if isinstance(found, str):
        raise BatchSettingsError(found)
    return FetchSettings(found, consumer.get("isolation.level") == "read_committed")


def available() -> bool:
    """Whether the compiled package has the batch walker."""
    from audit.collect.records import native

    module = native.load()
    return module is not None and hasattr(module, "BatchRange")


class RangeFailed(Exception):
    """A range that could not be read to its end (the message says where and why)."""


class BatchWaves:
    """The batch reader's side of ``read.chunk_ranges``: the ranges of a wave read in turn
    over one FetchSession, each range whole or failed with why (nothing of a failed range
    is returned: its chunks are not verified).

    Each response's successor is asked for before its records are walked (its offset is in
    the batch headers, ``resume_offset``): the walk runs without the GIL while kafka-python's
    IO thread receives the next response, so a task is not idle while its broker answers."""

    def __init__(self, consumer: dict[str, Any], timeout: float) -> None:
        import mirror_audit_native

        self._native = mirror_audit_native
        self._settings = fetch_settings(consumer, timeout)
        self._timeout_ms = int(timeout * 1000)
        self._session: FetchSession | None = None
        self._ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="batch-fetch-ahead")

    def _connected(self) -> FetchSession:
        if self._session is None:
            self._session = FetchSession(self._settings.kafka_python, self._timeout_ms)
        return self._session

    def read_wave(self, wave: list[Range], size: int, timeout: float) -> WaveResult:
        done: list[tuple[Range, list[dict[str, Any]]]] = []
        failed: list[tuple[Range, str]] = []
        try:
            self._connected()
        except Exception as exc:  # every range of the wave unread, the connection not retried per range
            why = f"no connection (kafka-python): {type(exc).__name__}: {str(exc)[:200]}"
            return done, [(r, why) for r in wave]
        for r in wave:
            try:
                done.append((r, self._read(r, size, timeout)))
            except (RangeFailed, self._native.ReaderError) as why:
                failed.append((r, str(why)))
            except Exception as exc:  # kafka-python's own errors, a lost connection: this range only
                failed.append((r, f"{type(exc).__name__}: {str(exc)[:300]}"))
        return done, failed

    def _read(self, r: Range, size: int, timeout: float) -> list[dict[str, Any]]:
        reading = self.open_range(r, size)
        for _ in self.fed(reading, r, timeout):
            pass
        rows: list[dict[str, Any]] = reading.finish()
        return rows

    def open_range(self, r: Range, size: int, digests: bool = False) -> Any:
        """The compiled walker of one range under this reader's isolation (``digests``:
        keeping each record's content digest too, mode mm2)."""
        topic, partition, start, end = r
        committed = self._settings.read_committed
        return self._native.BatchRange(topic, partition, start, end, size, committed, digests)

    def fed(self, reading: Any, r: Range, timeout: float) -> Iterator[int]:
        """Feeds ``reading`` (a ``BatchRange`` of ``r``) response by response until the
        range is read, yielding the offset reached after each response (what the caller
        takes from the walker between two responses is bounded by one fetch); RangeFailed
        where a fetch is refused or makes no progress."""
        topic, partition, _, end = r
        session = self._connected()
        committed = self._settings.read_committed
        deadline = time.monotonic() + timeout

        def fetch(offset: int, wait: int) -> FetchResult:
            return session.fetch(
                topic, partition, offset, FETCH_BYTES, read_committed=committed, max_wait_ms=wait
            )

        ahead: tuple[int, Future[FetchResult]] | None = None
        wait = 0
        while not reading.done:
            at = reading.next
            result = ahead[1].result() if ahead is not None and ahead[0] == at else fetch(at, wait)
            ahead = None
            if result.error_code != 0:
                raise RangeFailed(
                    f"fetch at offset {at}: {self._native.broker_error(result.error_code)} "
                    f"(log start {result.log_start_offset}, high watermark {result.high_watermark})"
                )
            after = self._native.resume_offset(result.records, at)
            if at < after < end:
                ahead = (after, self._ahead.submit(fetch, after, 0))
            reading.feed(result.records, list(result.aborted))
            if reading.next > at:
                wait = 0
                yield reading.next
                # From when the caller asks for more: a caller reading another range between
                # two responses (mode mm2's scan reads both sides in turns) is no stall.
                deadline = time.monotonic() + timeout
            elif time.monotonic() > deadline:
                raise RangeFailed(
                    f"no progress for {timeout:.0f}s at offset {at} of the range ending at {end} "
                    f"(high watermark {result.high_watermark})"
                )
            else:
                wait = WAIT_MS

    def close(self) -> None:
        self._ahead.shutdown(wait=True)  # a fetch still on its way finishes on the session it uses
        if self._session is not None:
            self._session.close()
            self._session = None
