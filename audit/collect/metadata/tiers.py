"""Tiered storage (KIP-405) of the partitions in scope: whether each topic keeps a remote
tier, how much its brokers keep locally, and where each partition's local log starts.

Why it is read: a KIP-1279 mirror fails destination partitions whose topic has tiered
storage enabled (CM-TIER-1), and a mirror whose position is below the source's local log
start reads from the remote tier, slower and through the remote storage manager's own
failures (CM-TIER-2, MM2-TIER-1).

The topic's settings come from DescribeConfigs (``remote.storage.enable``,
``local.retention.ms``, ``local.retention.bytes``), read in the one DescribeConfigs of the
snapshot (``TOPIC_CONFIGS``, with ``cleanup.policy`` for mode mm2's partition traits).
The local log start comes from ListOffsets' earliest-local spec (KIP-1005), which
librdkafka does not offer: it is read with Kafka's own Java Admin
(``OffsetSpec.earliestLocal()``, Kafka clients 3.9 and later, brokers 3.9 and later), in a
JVM started only when a topic in scope has a remote tier. A topic without one has its
local log start at its log start by definition, so nothing is asked. Whatever could not be
read stays null with the reason (``tier_detail``), never the log start in its place.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from audit.config import ClusterConfig
from audit.snapshot import PartitionRecord

log = logging.getLogger(__name__)

TIER_CONFIGS = ("remote.storage.enable", "local.retention.ms", "local.retention.bytes")
# What a snapshot reads of each topic's config, in one DescribeConfigs: the tiers, and
# whether the topic is compacted (mode mm2's partition traits, MM2-SKIP-1).
TOPIC_CONFIGS = (*TIER_CONFIGS, "cleanup.policy")
TopicConfigs = dict[str, dict[str, str | None]]


@dataclass(frozen=True)
class TopicTier:
    """A topic's tiered-storage settings as DescribeConfigs gave them."""

    remote_storage: bool
    local_retention_ms: int | None
    local_retention_bytes: int | None


def topic_tiers(configs: TopicConfigs) -> dict[str, TopicTier]:
    """Per topic whose config was read, its tiered-storage settings."""
    return {
        topic: TopicTier(
            remote_storage=(c["remote.storage.enable"] or "false").lower() == "true",
            local_retention_ms=_int(c["local.retention.ms"]),
            local_retention_bytes=_int(c["local.retention.bytes"]),
        )
        for topic, c in configs.items()
    }


def _int(value: str | None) -> int | None:
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def earliest_local_offsets(
    cluster_cfg: ClusterConfig, java_classpath: str, tps: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], int] | str:
    """Each partition's earliest local offset (ListOffsets' earliest-local spec) read with
    Kafka's Java Admin, or why none could be read (no Java client here, a client or broker
    older than 3.9, a refusal)."""
    if not tps:
        return {}
    from audit.collect.metadata.java_admin import JavaCallError, java_admin, java_error

    with java_admin(cluster_cfg, java_classpath) as java:
        if isinstance(java, str):
            return java
        jvm = java.gateway.jvm
        try:
            spec = jvm.org.apache.kafka.clients.admin.OffsetSpec.earliestLocal()
        except Exception as exc:  # a Kafka client older than 3.9 has no such spec
            why = java_error(exc)
            return f"the Kafka Java client here has no earliest-local offset spec (3.9+ needed): {why}"
        request = {jvm.org.apache.kafka.common.TopicPartition(t, p): spec for t, p in tps}
        try:
            listed = java.result(java.client.listOffsets(request).all())
        except JavaCallError as exc:  # refused (ACLs), a broker older than 3.9, a timeout
            return f"earliest local offsets not read: {exc}"
        except Exception as exc:  # the gateway itself failed
            return f"earliest local offsets not read: {java_error(exc)}"
        out: dict[tuple[str, int], int] = {}
        for tp in listed.keySet():
            offset = int(listed.get(tp).offset())
            if offset >= 0:
                out[(str(tp.topic()), int(tp.partition()))] = offset
        return out


def with_tiers(
    role: str,
    configs: tuple[TopicConfigs, str | None],
    cluster_cfg: ClusterConfig,
    java_classpath: str,
    partitions: Sequence[PartitionRecord],
) -> tuple[list[PartitionRecord], str]:
    """The partitions with their tiered-storage columns filled from their topics' configs
    (``TOPIC_CONFIGS`` as read, and why some were not: None, all read), and the manifest's
    note on what was read."""
    topics = sorted({p.topic for p in partitions})
    tiers, config_why = topic_tiers(configs[0]), configs[1]
    tiered = [(p.topic, p.partition) for p in partitions if (t := tiers.get(p.topic)) and t.remote_storage]
    local = earliest_local_offsets(cluster_cfg, java_classpath, tiered)
    local_why = local if isinstance(local, str) else None
    starts = {} if isinstance(local, str) else local
    out = []
    for p in partitions:
        tier = tiers.get(p.topic)
        if tier is None:
            out.append(
                dataclasses.replace(p, tier_detail=config_why or "the topic's config was not returned")
            )
            continue
        start: int | None = p.log_start_offset
        detail = None
        if tier.remote_storage:
            start = starts.get((p.topic, p.partition))
            if start is None:
                detail = local_why or "the broker returned no earliest local offset"
        out.append(
            dataclasses.replace(
                p,
                remote_storage=tier.remote_storage,
                local_log_start_offset=start,
                local_retention_ms=tier.local_retention_ms,
                local_retention_bytes=tier.local_retention_bytes,
                tier_detail=detail,
            )
        )
    n_tiered = len({t for t, _ in tiered})
    whys = "; ".join(w for w in (config_why, local_why) if w)
    note = f"{len(topics)} topics' tiered storage read, {n_tiered} with a remote tier" + (
        f" ({whys})" if whys else ""
    )
    if whys:
        log.warning("%s: tiered storage: %s", role, whys)
    return out, note
