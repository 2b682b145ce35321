"""Granting ACLs in the sandbox (over PLAINTEXT, whose ANONYMOUS principal is a super user
when the sandbox runs with an authorizer). The sandbox writes here; the auditor never does."""

from __future__ import annotations

from collections.abc import Iterable

from audit.collect.metadata.permissions import AUDITOR_PERMISSIONS, Permission
from audit.sandbox.traffic import client_conf

# confluent-kafka names Kafka's CLUSTER resource type BROKER (librdkafka's enum).
_RESOURCE_TYPES = {
    "topic": "TOPIC",
    "group": "GROUP",
    "cluster": "BROKER",
    "transactional-id": "TRANSACTIONAL_ID",
}


def grant(bootstrap: str, principal: str, permissions: Iterable[Permission] = AUDITOR_PERMISSIONS) -> None:
    """Allow ``principal`` (``User:name``) the ``permissions`` from any host."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(client_conf(bootstrap))
    bindings = [
        AclBinding(
            ResourceType[_RESOURCE_TYPES[p.resource]],
            p.name,
            ResourcePatternType.LITERAL,
            principal,
            "*",
            AclOperation[p.operation],
            AclPermissionType.ALLOW,
        )
        for p in permissions
    ]
    for future in admin.create_acls(bindings).values():
        future.result()
