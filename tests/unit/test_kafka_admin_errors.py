"""What a refused admin call tells the user: a missing ACL names the permissions to grant
(docs/configuration.md's Permissions list, from ``AUDITOR_PERMISSIONS``), not only that it was refused.

The client is a real confluent-kafka AdminClient pointed at a closed loopback port: it is
built, never answered, and ``_fail`` composes the message from the error it is given."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from audit.collect.metadata.kafka_admin import KafkaAdmin
from audit.collect.metadata.permissions import AUDITOR_PERMISSIONS, operation_word
from audit.config import ClusterConfig
from audit.errors import ClusterError


@pytest.fixture
def admin() -> KafkaAdmin:
    return KafkaAdmin("source", ClusterConfig("127.0.0.1:9", timeout_seconds=1))


def test_an_authorization_failure_names_the_permissions_to_grant(admin: KafkaAdmin) -> None:
    err = admin._fail(
        "list_consumer_group_offsets", KafkaException(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED))
    )
    message = str(err)
    assert message.startswith("source cluster (127.0.0.1:9): list_consumer_group_offsets failed: ")
    assert "GROUP_AUTHORIZATION_FAILED" in message
    assert "Permissions in docs/configuration.md" in message
    for p in AUDITOR_PERMISSIONS:
        assert operation_word(p.operation) in message and p.resource in message, (p, message)
    assert "\n" not in message


def test_other_failures_point_at_the_connection_not_at_acls(admin: KafkaAdmin) -> None:
    message = str(admin._fail("list_topics (metadata)", KafkaException(KafkaError(KafkaError._TRANSPORT))))
    assert "check bootstrap_servers, network and credentials" in message
    assert "Permissions" not in message


class _Answers:
    """Stands in for the AdminClient's list_offsets only: each call answers the next of
    ``rounds`` per partition (an error code or an offset), as futures."""

    def __init__(self, rounds: list[dict[tuple[str, int], int | KafkaError]]) -> None:
        self.rounds = rounds
        self.asked: list[set[tuple[str, int]]] = []

    def list_offsets(self, request: dict[Any, Any], **_: object) -> dict[Any, Any]:
        from concurrent.futures import Future

        from confluent_kafka.admin import ListOffsetsResultInfo

        answers = self.rounds.pop(0)
        self.asked.append({(tp.topic, tp.partition) for tp in request})
        out = {}
        for tp in request:
            f: Future[Any] = Future()
            answer = answers[(tp.topic, tp.partition)]
            if isinstance(answer, KafkaError):
                f.set_exception(KafkaException(answer))
            else:
                f.set_result(ListOffsetsResultInfo(answer, -1, 4))
            out[tp] = f
        return out

    def poll(self, _timeout: float) -> int:
        return 0


def test_a_partition_whose_new_leader_has_no_offset_yet_is_asked_again_not_failed(admin: KafkaAdmin) -> None:
    """Just after a leader move the new leader answers OFFSET_NOT_AVAILABLE until its high
    watermark caught up (KIP-207): asked again, only that partition."""
    not_yet = KafkaError(KafkaError.OFFSET_NOT_AVAILABLE)
    fake = _Answers([{("t", 0): 10, ("t", 1): not_yet}, {("t", 1): not_yet}, {("t", 1): 21}])
    admin._admin = fake  # type: ignore[assignment]
    offsets = admin.list_offsets_per_partition([("t", 0), ("t", 1)], "latest")
    assert {k: v.offset for k, v in offsets.items()} == {("t", 0): 10, ("t", 1): 21}
    assert fake.asked == [{("t", 0), ("t", 1)}, {("t", 1)}, {("t", 1)}]


def test_an_error_that_is_not_a_moving_leader_fails_at_once(admin: KafkaAdmin) -> None:
    fake = _Answers([{("t", 0): KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)}])
    admin._admin = fake  # type: ignore[assignment]
    with pytest.raises(Exception, match="TOPIC_AUTHORIZATION_FAILED"):
        admin.list_offsets_per_partition([("t", 0)], "latest")
    assert len(fake.asked) == 1


def test_a_partition_without_a_live_leader_is_an_error_naming_its_broker_never_an_offset(
    admin: KafkaAdmin,
) -> None:
    """librdkafka answers ListOffsets for a partition whose leader is dead with offset -1001
    and no error (found killing a broker mid-snapshot): that was written to the snapshot as
    the high watermark. It is now asked again until the timeout, then an error naming the
    partition and the broker it was read from."""
    rounds: list[dict[tuple[str, int], int | KafkaError]] = [{("t", 0): 10, ("t", 1): -1001}]
    fake = _Answers(rounds + [{("t", 1): -1001}] * 200)
    admin._admin = fake  # type: ignore[assignment]
    admin._leaders[("t", 1)] = 2
    admin._brokers[2] = "127.0.0.1:9092"
    with pytest.raises(ClusterError) as info:
        admin.list_offsets_per_partition([("t", 0), ("t", 1)], "latest")
    message = str(info.value)
    assert "list_offsets(latest, t-1 on broker 2 (127.0.0.1:9092)) got no offset" in message
    assert "\n" not in message
    assert len(fake.asked) > 2 and all(asked == {("t", 1)} for asked in fake.asked[1:])


def test_an_empty_partitions_max_timestamp_is_an_answer_not_an_error(admin: KafkaAdmin) -> None:
    admin._admin = _Answers([{("t", 0): -1}])  # type: ignore[assignment]
    assert admin.list_offsets_per_partition([("t", 0)], "max_timestamp")[("t", 0)].offset == -1


class _KafkaPythonAdmin:
    """Stands in for kafka-python's admin client in ``list_offsets_batched``: answers from
    ``answers`` (offset per partition) or raises ``error``."""

    def __init__(self, answers: dict[tuple[str, int], int], error: Exception | None = None) -> None:
        self.answers, self.error, self.calls = answers, error, 0

    def list_partition_offsets(self, specs: dict[Any, Any], **_: object) -> dict[Any, Any]:
        from kafka.structs import OffsetAndTimestamp

        self.calls += 1
        if self.error is not None:
            raise self.error
        return {
            tp: OffsetAndTimestamp(self.answers[(tp.topic, tp.partition)], -1, 3)
            for tp in specs
            if (tp.topic, tp.partition) in self.answers
        }


def _batched_through(monkeypatch: pytest.MonkeyPatch, fake: _KafkaPythonAdmin) -> None:
    from contextlib import contextmanager

    from audit.collect.metadata import transactions

    @contextmanager
    def admin_of(_settings: Any) -> Any:
        yield fake

    monkeypatch.setattr(transactions, "kafka_python_admin", admin_of)


def test_what_the_batched_request_leaves_out_is_asked_a_partition_at_a_time(
    admin: KafkaAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A partition the batch does not answer, or answers with no offset, goes the librdkafka
    way; the others are not asked twice."""
    _batched_through(monkeypatch, _KafkaPythonAdmin({("t", 0): 10, ("t", 1): -1}))
    fake = _Answers([{("t", 1): 11, ("t", 2): 12}])
    admin._admin = fake  # type: ignore[assignment]
    offsets = admin.list_offsets([("t", 0), ("t", 1), ("t", 2)], "latest")
    assert {tp: o.offset for tp, o in offsets.items()} == {("t", 0): 10, ("t", 1): 11, ("t", 2): 12}
    assert offsets[("t", 0)].leader_epoch == 3 and offsets[("t", 0)].timestamp_ms is None
    assert fake.asked == [{("t", 1), ("t", 2)}]


def test_a_client_kafka_python_cannot_use_is_not_tried_again_a_partition_error_is(
    admin: KafkaAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafka.errors import KafkaConnectionError, OffsetNotAvailableError

    settling = _KafkaPythonAdmin({}, OffsetNotAvailableError("leader settling"))
    _batched_through(monkeypatch, settling)
    admin._admin = _Answers([{("t", 0): 5}, {("t", 0): 6}])  # type: ignore[assignment]
    assert admin.list_offsets([("t", 0)], "latest")[("t", 0)].offset == 5
    assert admin.list_offsets([("t", 0)], "latest")[("t", 0)].offset == 6
    assert settling.calls == 2  # a broker's answer for one call: the next call tries again

    unreachable = _KafkaPythonAdmin({}, KafkaConnectionError("refused"))
    _batched_through(monkeypatch, unreachable)
    admin._admin = _Answers([{("t", 0): 7}, {("t", 0): 8}])  # type: ignore[assignment]
    assert admin.list_offsets([("t", 0)], "latest")[("t", 0)].offset == 7
    assert admin.list_offsets([("t", 0)], "latest")[("t", 0)].offset == 8
    assert unreachable.calls == 1  # not tried again by this client


def test_a_kafka_python_client_that_cannot_bootstrap_keeps_none_of_its_callers_alive() -> None:
    """kafka-python keeps a client that failed to bootstrap alive, its error in a future:
    the error raised to the caller is a copy, so the caller's frame (and the Kafka clients
    it holds: found as producers retrying stopped brokers at the end of a test run) is
    freed when the caller returns."""
    import gc
    import weakref

    from audit.collect.metadata.transactions import kafka_python_admin, kafka_python_settings

    settings = kafka_python_settings(ClusterConfig("127.0.0.1:9", timeout_seconds=1))
    assert isinstance(settings, dict)

    class Held:
        pass

    def caller() -> tuple[weakref.ref[Held], str]:
        held = Held()
        with pytest.raises(Exception) as info, kafka_python_admin(settings):
            pass
        return weakref.ref(held), str(info.value)

    ref, error = caller()
    gc.collect()
    assert ref() is None
    assert "127.0.0.1:9" in error  # the copy still says what failed
