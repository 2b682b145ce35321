"""kafka-python's receive path as wire_receive installs it decodes exactly what the stock one
decodes, however the bytes are cut on their way in."""

from __future__ import annotations

import itertools
import socket
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol import parser
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.frame import KafkaBytes
from kafka.protocol.parser import KafkaProtocol

from audit.collect.batches import wire_receive

_TOPIC = FetchResponse.FetchableTopicResponse
_PARTITION = _TOPIC.PartitionData
_ABORTED = _PARTITION.AbortedTransaction


def _request() -> FetchRequest:
    return FetchRequest(
        version=12,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[],
        forgotten_topics_data=[],
        rack_id="",
    )


def _response(records: bytes | None, partitions: int, aborted: int) -> FetchResponse:
    return FetchResponse(
        version=12,
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[
            _TOPIC(
                topic="orders",
                partitions=[
                    _PARTITION(
                        partition_index=p,
                        error_code=0,
                        high_watermark=100 + p,
                        last_stable_offset=90,
                        log_start_offset=p,
                        aborted_transactions=[
                            _ABORTED(producer_id=7, first_offset=i) for i in range(aborted)
                        ],
                        preferred_read_replica=-1,
                        records=records,
                    )
                    for p in range(partitions)
                ],
            )
        ],
    )


def _received(
    responses: list[FetchResponse], cuts: list[int], buffer: object, monkeypatch: pytest.MonkeyPatch
) -> list[tuple[int, FetchResponse]]:
    """The responses as a parser with ``buffer`` as its KafkaBytes decodes them from the
    wire bytes cut at ``cuts``."""
    monkeypatch.setattr(parser, "KafkaBytes", buffer)
    protocol = KafkaProtocol()
    wire = b""
    for response in responses:
        response.with_header(correlation_id=protocol.send_request(_request()))
        wire += response.encode(header=True, framed=True)
    bounds = sorted({0, len(wire), *(c % (len(wire) + 1) for c in cuts)})
    out: list[tuple[int, FetchResponse]] = []
    for lo, hi in itertools.pairwise(bounds):
        out.extend(protocol.receive_bytes(wire[lo:hi]))
    return out


_responses = st.lists(
    st.builds(
        _response,
        st.one_of(st.none(), st.binary(max_size=3000)),
        st.integers(1, 3),
        st.integers(0, 2),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(responses=_responses, cuts=st.lists(st.integers(0, 1 << 16), max_size=30))
def test_responses_cut_anywhere_decode_as_kafka_pythons_own(
    responses: list[FetchResponse], cuts: list[int]
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        stock = _received(responses, cuts, KafkaBytes, monkeypatch)
        ours = _received(responses, cuts, wire_receive._buffer_factory(KafkaBytes), monkeypatch)
    assert len(ours) == len(stock) == len(responses)
    for (cid, got), (stock_cid, expected), sent in zip(ours, stock, responses, strict=True):
        assert cid == stock_cid
        assert got == expected == sent
        records = [p.records for t in got.responses for p in t.partitions]
        assert all(r is None or type(r) is bytes for r in records)  # FetchSession keeps them as they come


def test_a_response_buffer_is_not_written_after_it_is_read() -> None:
    frame = wire_receive._Frame(3)
    frame.write(b"ab")
    frame.write(b"c")
    assert frame.tell() == 3
    frame.seek(0)
    assert frame.read(2) == b"ab" and bytes(frame.read()) == b"c"
    with pytest.raises(ValueError):
        frame.write(b"d")


def _transport(sock: socket.socket) -> object:
    return types.SimpleNamespace(_sock=sock)


def test_the_transport_reads_everything_the_socket_holds_then_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire_receive, "RECV_BYTES", 4096)  # several reads a call
    ours, peer = socket.socketpair()
    with ours, peer:
        ours.setblocking(False)
        payload = bytes(range(256)) * 400
        peer.sendall(payload[:60_000])
        first, err = wire_receive._sock_recv(_transport(ours))
        assert err is None
        peer.sendall(payload[60_000:])
        rest, err = wire_receive._sock_recv(_transport(ours))
        assert err is None
        assert first + rest == payload


def test_a_closed_peer_ends_the_connection_with_an_error() -> None:
    ours, peer = socket.socketpair()
    with ours:
        ours.setblocking(False)
        peer.sendall(b"last words")
        peer.close()
        data, err = wire_receive._sock_recv(_transport(ours))
    assert data == b"last words"
    assert err is not None and "disconnected" in str(err)


def test_installed_once_into_kafka_pythons_own_classes() -> None:
    from kafka.net import transport

    assert wire_receive.install() and wire_receive.install()
    assert transport.KafkaTCPTransport._sock_recv is wire_receive._sock_recv
    assert parser.KafkaBytes.stock is KafkaBytes
    assert isinstance(parser.KafkaBytes(4), KafkaBytes)  # the length prefix keeps its own
    assert isinstance(parser.KafkaBytes(5), wire_receive._Frame)
