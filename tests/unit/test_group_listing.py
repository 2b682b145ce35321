"""Streams groups (KIP-1071) in the snapshot: librdkafka's listing leaves them out, so they
are listed through kafka-python, their states in the snapshot's words, and where that client
cannot be used the manifest says the streams groups were not listed (never a silent none).

Pure parts only: the live listing of a real Kafka Streams application's group is in
tests/integration/test_audit_live.py."""

from __future__ import annotations

import pytest

from audit.collect.metadata.group_reads import _state_word, _type_word
from audit.collect.metadata.kafka_admin import KafkaAdmin
from audit.config import ClusterConfig


@pytest.mark.parametrize(
    ("listed", "word"),
    [
        ("NotReady", "NOT_READY"),
        ("Stable", "STABLE"),
        ("Empty", "EMPTY"),
        ("Reconciling", "RECONCILING"),
        ("", "UNKNOWN"),
    ],
)
def test_a_listed_state_is_spelled_as_the_snapshot_spells_states(listed: str, word: str) -> None:
    assert _state_word(listed) == word


def test_streams_is_a_group_type_and_an_unknown_type_stays_unknown() -> None:
    assert _type_word("STREAMS") == "streams"
    assert _type_word("SOMETHING_NEW") == "unknown"


def test_without_a_usable_kafka_python_client_the_note_says_typed_groups_were_not_listed() -> None:
    cfg = ClusterConfig(
        "127.0.0.1:9",
        timeout_seconds=1,
        # librdkafka's unsecured JWT login: kafka-python has no such token source.
        properties={
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "enable.sasl.oauthbearer.unsecure.jwt": "true",
        },
    )
    streams, share, note = KafkaAdmin("source", cfg).groups_by_type(set())
    assert streams == [] and share == []
    assert note is not None and note.startswith("streams and share groups not listed: ")
    assert "token_provider" in note
