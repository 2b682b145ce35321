"""Real share groups (KIP-932) in the sandbox, and their start offsets synced as KIP-1279 does.

A share group is made by Kafka's own ``KafkaShareConsumer`` (the Java client, driven
through py4j in a JVM of its own: no Python client has a share consumer): it reads a topic
from its start, acknowledges some records and, on request, keeps more acquired but not
acknowledged (in flight) until it is closed. The syncer sets a destination share group's
start offsets to ``clamp(source start offset) = max(dst log start, min(source, dst LEO))``
with the Java Admin, and leaves alone a group with members on the destination, as the
prototype's coordinator does. Both write only to the sandbox's own clusters.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from audit.collect.metadata.java_admin import (
    JavaAdmin,
    JavaCallError,
    ShareGroup,
    classpath,
    java_gateway,
    open_admin,
)
from audit.errors import SandboxError
from audit.sandbox.mirror import ends_by_tp
from audit.sandbox.traffic import client_conf

log = logging.getLogger(__name__)

_STRING = "org.apache.kafka.common.serialization.StringDeserializer"


def _jars() -> list[str]:
    jars = classpath("auto")
    if isinstance(jars, str):
        raise SandboxError(f"share groups need Kafka's Java client: {jars}")
    return jars


def _props(bootstrap: str) -> dict[str, str]:
    return {"bootstrap.servers": bootstrap, "client.id": "mirror-audit-sandbox"}


@contextmanager
def _admins(*bootstraps: str) -> Iterator[list[JavaAdmin]]:
    """One JVM, a Java Admin client per cluster."""
    with java_gateway(_jars()) as gateway:
        opened = []
        try:
            for bootstrap in bootstraps:
                cm = open_admin(gateway, _props(bootstrap), 30.0)
                opened.append((cm, cm.__enter__()))
            yield [admin for _, admin in opened]
        finally:
            for cm, _ in reversed(opened):
                cm.__exit__(None, None, None)


# The sandbox's writes through the Java Admin (audit/collect/ only reads): its own share
# groups cleaned up, a group config its consumers need, and the mirror emulator's sync.


def _delete_groups(admin: JavaAdmin, group_ids: Sequence[str]) -> None:
    """Delete share groups; a group the cluster does not know is already gone."""
    futures = admin.client.deleteShareGroups(list(group_ids)).deletedGroups()
    for gid in group_ids:
        try:
            admin.result(futures.get(gid))
        except JavaCallError as exc:
            if exc.cause != "GroupIdNotFoundException":
                raise


def _set_group_config(admin: JavaAdmin, group_id: str, key: str, value: str) -> None:
    """Set one dynamic group config."""
    jvm = admin.gateway.jvm
    resource = jvm.org.apache.kafka.common.config.ConfigResource(
        jvm.org.apache.kafka.common.config.ConfigResource.Type.GROUP, group_id
    )
    alter = jvm.org.apache.kafka.clients.admin.AlterConfigOp(
        jvm.org.apache.kafka.clients.admin.ConfigEntry(key, value),
        jvm.org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET,
    )
    admin.result(admin.client.incrementalAlterConfigs({resource: [alter]}).all())


def _alter_start_offsets(admin: JavaAdmin, group_id: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """Set a share group's start offsets (the mirror emulator's sync).

    The Admin call takes ``Map<TopicPartition, Long>``, and py4j hands a Python int
    below 2**31 to Java as an Integer (and every Long back as an int), so the map is
    filled inside the JVM: the offsets boxed there as Longs, each copied into the
    arguments of ``HashMap.put`` with ``System.arraycopy``, never through Python."""
    gateway = admin.gateway
    jvm = gateway.jvm
    items = sorted(offsets.items())
    longs = gateway.new_array(jvm.long, len(items))
    for i, (_, offset) in enumerate(items):
        longs[i] = offset
    boxed = jvm.java.util.Arrays.stream(longs).boxed().toArray()
    anything = jvm.java.lang.Class.forName("java.lang.Object")
    types = gateway.new_array(jvm.java.lang.Class, 2)
    types[0] = types[1] = anything
    put = jvm.java.lang.Class.forName("java.util.HashMap").getMethod("put", types)
    java_offsets = jvm.java.util.HashMap()
    for i, ((topic, partition), _) in enumerate(items):
        args = gateway.new_array(jvm.java.lang.Object, 2)
        args[0] = jvm.org.apache.kafka.common.TopicPartition(topic, partition)
        jvm.java.lang.System.arraycopy(boxed, i, args, 1, 1)
        put.invoke(java_offsets, args)
    admin.result(admin.client.alterShareGroupOffsets(group_id, java_offsets).all())


def share_groups_supported(bootstrap: str) -> bool:
    """Whether the cluster has share groups on: its finalized ``share.version`` feature is
    1 or more (4.2 and later by default; 4.1 as a preview turned on by hand; none before)."""
    with _admins(bootstrap) as (admin,):
        return admin.finalized_feature("share.version") >= 1


@dataclass
class ShareConsumer:
    """A running share consumer: acknowledged records are done; ``in_flight`` records it
    acquired and holds unacknowledged until ``close``."""

    acknowledged: int
    in_flight: int
    _gateway_cm: Any
    _consumer: Any

    def close(self) -> None:
        try:
            self._consumer.close()
        finally:
            self._gateway_cm.__exit__(None, None, None)


def start_share_consumer(
    bootstrap: str, group: str, topic: str, acknowledge: int, hold: int = 0, timeout: float = 60.0
) -> ShareConsumer:
    """A member of share group ``group`` reading ``topic`` from its earliest record: it
    acknowledges (ACCEPT) ``acknowledge`` records and commits; with ``hold``, it keeps the
    rest of the last batch it was given (at least ``hold`` records) acquired without
    acknowledging them (in flight) until ``close``, else it releases them to the group.
    The group reads from the start (``share.auto.offset.reset=earliest``, a group config
    set here)."""
    gateway_cm = java_gateway(_jars())
    gateway = gateway_cm.__enter__()
    try:
        jvm = gateway.jvm
        with open_admin(gateway, _props(bootstrap), 30.0) as admin:
            _set_group_config(admin, group, "share.auto.offset.reset", "earliest")
        props = jvm.java.util.Properties()
        for key, value in {
            **_props(bootstrap),
            "group.id": group,
            "key.deserializer": _STRING,
            "value.deserializer": _STRING,
            "share.acknowledgement.mode": "explicit",
            "max.poll.records": "5",
        }.items():
            props.setProperty(key, value)
        consumer = jvm.org.apache.kafka.clients.consumer.KafkaShareConsumer(props)
        consumer.subscribe([topic])
        accept = jvm.org.apache.kafka.clients.consumer.AcknowledgeType.ACCEPT
        release = jvm.org.apache.kafka.clients.consumer.AcknowledgeType.RELEASE
        acknowledged = held = 0
        deadline = time.monotonic() + timeout
        # In explicit mode every record a poll delivered must be acknowledged before the
        # next poll: once some are held, there is no next poll.
        while acknowledged < acknowledge and not held:
            if time.monotonic() > deadline:
                consumer.close()
                raise SandboxError(
                    f"share group {group}: {acknowledged} of {acknowledge} records acknowledged "
                    f"within {timeout:.0f}s"
                )
            records = consumer.poll(jvm.java.time.Duration.ofMillis(500)).iterator()
            while records.hasNext():
                record = records.next()
                if acknowledged < acknowledge:
                    consumer.acknowledge(record, accept)
                    acknowledged += 1
                elif hold:
                    held += 1
                else:
                    consumer.acknowledge(record, release)  # back to the group: not this member's
            if acknowledged:
                consumer.commitSync()
        if held < hold:
            consumer.close()
            raise SandboxError(f"share group {group}: {held} of {hold} records held (too few in the topic)")
        return ShareConsumer(acknowledged, held, gateway_cm, consumer)
    except BaseException:
        gateway_cm.__exit__(None, None, None)
        raise


def delete_share_groups(bootstrap: str, groups: list[str]) -> None:
    """Delete the sandbox's share groups (they must have no members): a test leaves the
    shared sandbox's clusters without the groups it made."""
    with _admins(bootstrap) as (admin,):
        _delete_groups(admin, groups)


READ_TRIES = 3


def _read(admin: JavaAdmin, groups: list[str]) -> list[ShareGroup]:
    for attempt in range(1, READ_TRIES + 1):
        try:
            return admin.share_groups(groups)
        except JavaCallError as exc:
            if attempt == READ_TRIES:
                raise SandboxError(f"share groups {groups}: not read in {READ_TRIES} tries: {exc}") from None
            log.warning("share groups %s not read (%s): reading again", groups, exc)
            time.sleep(2.0)
    raise AssertionError("unreachable")


def sync_share_group_offsets(
    src_bootstrap: str,
    dst_bootstrap: str,
    groups: list[str],
    adjust: Callable[[str, str, int, int], int] | None = None,
) -> int:
    """Set each destination share group inactive there to clamp(source start offset), as
    KIP-1279's coordinator syncs share groups; a group with members on the destination is
    left alone. ``adjust(group, topic, partition, clamped)`` lets a test inject a faulty
    value. Returns the offsets written.

    The groups are read again, up to ``READ_TRIES`` times, where the Java Admin's read
    fails (a share coordinator of a busy sandbox that has not answered): a coordinator's
    sync that fails is retried at its next cycle too."""
    dst_offsets = AdminClient(client_conf(dst_bootstrap))
    written = 0
    with _admins(src_bootstrap, dst_bootstrap) as (src, dst):
        members = {g.group_id: g.member_count for g in _read(dst, groups)}
        for source_group in _read(src, groups):
            if members.get(source_group.group_id, 0) > 0:
                log.info("share group %s is active on the destination: not synced", source_group.group_id)
                continue
            starts = {(o.topic, o.partition): o.start_offset for o in source_group.offsets}
            if not starts:
                continue
            tps = [TopicPartition(t, p) for t, p in starts]
            low = ends_by_tp(dst_offsets, tps, OffsetSpec.earliest())
            high = ends_by_tp(dst_offsets, tps, OffsetSpec.latest())
            targets = {}
            for key, offset in sorted(starts.items()):
                clamped = max(low[key][0], min(offset, high[key][0]))
                targets[key] = adjust(source_group.group_id, key[0], key[1], clamped) if adjust else clamped
            _alter_start_offsets(dst, source_group.group_id, targets)
            written += len(targets)
    return written
