"""kafka-python's receive path without its per-response copies, for the raw fetches.

The wire readers (``wire.FetchSession``: the batch scan and mode mm2's record scan) receive
Fetch responses of up to 4 MiB. kafka-python 3.0 receives them in 4 KiB ``recv`` calls, each
a pass of its event loop in Python, and then copies each response about six times on its way
to the decoder: the chunks joined, sliced again into a zero-filled buffer the size of the
response (fresh pages, faulted in one by one), that buffer sliced and copied twice more to
be decoded. Measured over 156 MB of lz4 batches from a local broker, one reader: 0.42-0.49 s
of CPU stock, 0.20-0.27 s with the two changes below. In mode mm2's scan that was a third of
the process's CPU per record (docs/benchmarks.md, "The receive path").

Two changes, both inside kafka-python's own classes and both semantically neutral:

- the plain TCP transport reads up to ``RECV_BYTES`` per ``recv`` instead of 4 KiB (a TLS
  socket hands over one TLS record per call whatever the size asked, so its transport is
  left as it is);
- the parser collects a response's chunks as they arrive (``_Frame``) and joins them once,
  when the response is whole; the decoder then reads the joined bytes through a
  memoryview, and only the fields it decodes are copied out (the records, once).

Nothing of the Kafka protocol is written here: framing, correlation and decoding stay
kafka-python's. What is replaced is private to kafka-python, so :func:`install` first
checks that the two pieces have the shape they had when this was written (3.0.x) and
otherwise leaves kafka-python as it is, slower but correct; tests/unit/test_wire_receive.py
decodes the same responses, cut at random points, through both paths and compares them.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger(__name__)

# One readable event brings what the socket holds (a few hundred KiB on loopback); larger
# reads were no faster (64 KiB to 1 MiB measured, docs/benchmarks.md).
RECV_BYTES = 256 << 10
# The parser's 4-byte length prefix keeps kafka-python's own buffer (it is reused in place).
_HEADER_BYTES = 4

_lock = threading.Lock()


class _Frame:
    """One response's payload, as kafka-python's parser fills and reads its buffer
    (``write`` while receiving; then ``seek(0)`` and ``read``), without a buffer of the
    response's size filled with zeros first and copied into: the chunks are kept as
    received and joined once, at the first ``seek``. ``read()`` (the rest, what the decoder
    asks for) is a memoryview over the joined bytes; ``read(n)`` (header fields) is bytes."""

    __slots__ = ("_data", "_filled", "_idx", "_parts", "_size")

    def __init__(self, size: int) -> None:
        self._size = size
        self._parts: list[bytes] = []
        self._filled = 0
        self._data: memoryview | None = None
        self._idx = 0

    def __len__(self) -> int:
        return self._size

    def write(self, data: bytes) -> None:
        if self._data is not None:
            raise ValueError("a response buffer is written only before it is read")
        self._parts.append(data)
        self._filled += len(data)

    def tell(self) -> int:
        return self._filled if self._data is None else self._idx

    def seek(self, idx: int) -> None:
        if self._data is None:
            parts = self._parts
            # join of one bytes object is that object: a response within one chunk is not copied
            self._data = memoryview(parts[0] if len(parts) == 1 else b"".join(parts))
            self._parts = []
        self._idx = idx

    def read(self, nbytes: int | None = None) -> bytes | memoryview:
        if self._data is None:
            raise ValueError("a response buffer is read only after seek")
        start = self._idx
        end = self._size if nbytes is None else min(self._size, start + nbytes)
        self._idx = end
        view = self._data[start:end]
        return view if nbytes is None else bytes(view)


def _buffer_factory(stock: Any) -> Any:
    def buffer(size: int) -> Any:
        return stock(size) if size <= _HEADER_BYTES else _Frame(size)

    buffer.stock = stock  # type: ignore[attr-defined]
    return buffer


def _sock_recv(self: Any) -> tuple[bytes, Exception | None]:
    """kafka-python's ``KafkaTCPTransport._sock_recv`` with ``RECV_BYTES`` a call: everything
    the socket holds, and the error that ends the connection (a peer that closed it)."""
    from kafka import errors

    received: list[bytes] = []
    err: Exception | None = None
    while True:
        try:
            data = self._sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            break
        except BaseException as exc:  # as kafka-python's own: the connection is closed with it
            log.debug("receiving from %s failed", self, exc_info=True)
            err = errors.KafkaConnectionError(exc)
            break
        if not data:
            err = errors.KafkaConnectionError("socket disconnected")
            break
        received.append(data)
    return b"".join(received), err


def install() -> bool:
    """Install both changes into kafka-python, once per process; False (and kafka-python
    left as it is) where its private pieces are not the ones this was written against."""
    from kafka.net import transport
    from kafka.protocol import parser
    from kafka.protocol.frame import KafkaBytes

    tcp = transport.KafkaTCPTransport
    with _lock:
        if tcp._sock_recv is _sock_recv:
            return True
        expected = (
            getattr(parser, "KafkaBytes", None) is KafkaBytes
            and callable(getattr(tcp, "_sock_recv", None))
            and callable(getattr(parser.KafkaProtocol, "_process_response", None))
        )
        if not expected:
            log.debug("kafka-python's receive path is not the one expected: left as it is")
            return False
        parser.KafkaBytes = _buffer_factory(KafkaBytes)
        tcp._sock_recv = _sock_recv
        return True
