"""What a refused admin call tells the user: a missing ACL names the permissions to grant
(the README's Permissions list, from ``AUDITOR_PERMISSIONS``), not only that it was refused.

The client is a real confluent-kafka AdminClient pointed at a closed loopback port: it is
built, never answered, and ``_fail`` composes the message from the error it is given."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from audit.collect.metadata.kafka_admin import KafkaAdmin
from audit.collect.metadata.permissions import AUDITOR_PERMISSIONS, _operation_word
from audit.config import ClusterConfig


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
    assert "Permissions in the README" in message
    for p in AUDITOR_PERMISSIONS:
        assert _operation_word(p.operation) in message and p.resource in message, (p, message)
    assert "\n" not in message


def test_other_failures_point_at_the_connection_not_at_acls(admin: KafkaAdmin) -> None:
    message = str(admin._fail("list_topics (metadata)", KafkaException(KafkaError(KafkaError._TRANSPORT))))
    assert "check bootstrap_servers, network and credentials" in message
    assert "Permissions" not in message
