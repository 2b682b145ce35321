"""What the auditor's principal must be allowed on a secured cluster, and why.

Kafka answers a principal that lacks a Describe permission not with an error but with less:
topics and groups it may not describe are left out of the lists. So these are written down
once, here, for docs/configuration.md's Permissions section and for the live test that grants exactly
these on brokers with an authorizer and runs a whole nightly job over SASL. None of them
writes: no Write, Create, Alter, Delete or group Read (joining or committing).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Permission:
    resource: str  # topic | group | cluster | transactional-id (kafka-acls' resource words)
    name: str  # "*" for every one; the cluster resource is always named kafka-cluster
    operation: str  # Kafka's AclOperation name
    why: str


AUDITOR_PERMISSIONS: tuple[Permission, ...] = (
    Permission("topic", "*", "DESCRIBE", "topics, partitions, offsets and leader epochs (every snapshot)"),
    Permission(
        "topic",
        "*",
        "READ",
        "records (records scan), batches over the wire (segments read: wire), the producers of "
        "open transactions",
    ),
    Permission(
        "topic",
        "*",
        "DESCRIBE_CONFIGS",
        "cleanup.policy, to tell compacted topics apart (records); remote.storage.enable and "
        "local.retention.* (tiered storage: CM-TIER-*, MM2-TIER-1)",
    ),
    Permission("group", "*", "DESCRIBE", "consumer groups and their committed offsets (CM-GROUP-*)"),
    Permission(
        "cluster",
        "kafka-cluster",
        "DESCRIBE",
        "all groups listed at once; log dir sizes for records.max_bytes_per_run",
    ),
    Permission("transactional-id", "*", "DESCRIBE", "open transactions named by transactional id (CM-TXN-1)"),
)


def operation_word(operation: str) -> str:
    """kafka-acls' spelling of an AclOperation name: DESCRIBE_CONFIGS -> DescribeConfigs."""
    return "".join(part.capitalize() for part in operation.split("_"))


def permissions_summary(permissions: tuple[Permission, ...] = AUDITOR_PERMISSIONS) -> str:
    """One line for error messages, so a refused call says what to grant rather than only
    that something was refused: ``topic Describe, Read, DescribeConfigs; group Describe; ...``."""
    by_resource: dict[str, list[str]] = {}
    for p in permissions:
        by_resource.setdefault(p.resource, []).append(operation_word(p.operation))
    return "; ".join(f"{resource} {', '.join(ops)}" for resource, ops in by_resource.items())
