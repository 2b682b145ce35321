"""The groups a cluster holds and what they committed: the consumer groups librdkafka
lists and describes, the Kafka Streams and share groups only kafka-python's ListGroups
names, and the committed offsets (batched through kafka-python where the cluster allows).
Reads only: nothing here joins a group or commits.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Sequence
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions

from audit.collect.metadata.admin_base import (
    AdminBase,
    CommittedOffset,
    GroupInfo,
    _chunks,
    _describe,
    _enum_name,
    _known,
)
from audit.errors import ClusterError

log = logging.getLogger(__name__)


class GroupReads(AdminBase):
    """The group reads of ``KafkaAdmin``."""

    def list_groups(self) -> list[GroupInfo]:
        listing = self._result(
            "list_consumer_groups", self._admin.list_consumer_groups(request_timeout=self.timeout)
        )
        if listing.errors:
            log.warning(
                "%s: list_consumer_groups reported %d errors: %s",
                self.role,
                len(listing.errors),
                _describe(listing.errors[0]),
            )
        ids = [g.group_id for g in listing.valid]
        types = {g.group_id: _group_type(g) for g in listing.valid}
        states = {g.group_id: _enum_name(getattr(g, "state", "UNKNOWN")) for g in listing.valid}
        members: dict[str, int] = {}
        for chunk in _chunks(ids, 100):
            futures = self._admin.describe_consumer_groups(chunk, request_timeout=self.timeout)
            for gid in chunk:
                desc = self._result(f"describe_consumer_groups({gid})", futures[gid])
                members[gid] = len(desc.members or [])
                states[gid] = _enum_name(desc.state)
                if getattr(desc, "type", None) is not None:
                    types[gid] = _type_word(desc.type)
        return [GroupInfo(g, types[g], states[g], members.get(g, 0)) for g in ids]

    def groups_by_type(self, known: Collection[str]) -> tuple[list[GroupInfo], list[GroupInfo], str | None]:
        """Kafka Streams groups (KIP-1071, ``group.protocol=streams``) and share groups
        (KIP-932): librdkafka's group listing leaves both out, so the same ListGroups is
        asked through kafka-python, whose answer carries each group's type (ListGroups v5,
        brokers 4.0+). A streams group's committed offsets are read like any group's; a
        share group's start offsets only the Java client reads (``java_admin.py``), so its
        member count is left unknown here. Returns the streams groups, the share groups and,
        where they could not be listed, why (a manifest note: the group checks then cannot
        see them)."""
        from audit.collect.metadata.transactions import kafka_python_admin, kafka_python_settings

        settings = kafka_python_settings(self.cfg)
        if isinstance(settings, str):
            return [], [], f"streams and share groups not listed: {settings}"
        try:
            with kafka_python_admin(settings) as admin:
                listed = admin.list_groups()
        except Exception as exc:  # any failure is the note, never the snapshot's end
            log.warning("%s: streams and share groups could not be listed: %s", self.role, _describe(exc))
            return [], [], f"streams and share groups not listed: {_describe(exc)}"
        by_type: dict[str, list[GroupInfo]] = {"streams": [], "share": []}
        for g in listed:
            kind = g.get("group_type")
            if kind in by_type and g["group_id"] not in known:
                state = _state_word(str(g.get("group_state") or ""))
                by_type[kind].append(GroupInfo(str(g["group_id"]), kind, state, None))
        streams, share = (sorted(by_type[k], key=lambda g: g.group_id) for k in ("streams", "share"))
        return streams, share, None

    def committed_offsets(self, group_ids: Sequence[str]) -> dict[str, list[CommittedOffset]]:
        """Committed offsets per group: many groups per OffsetFetch request where the
        cluster allows it (KIP-709, brokers 3.0+), else one call per group. Through
        kafka-python even for one group: confluent-kafka reads commit metadata as a C string
        and runs past the end of metadata a Java client committed (no terminating NUL: a
        Kafka Streams application's), giving stray bytes or a UnicodeDecodeError."""
        ids = list(group_ids)
        if ids:
            batched = self.committed_offsets_batched(ids)
            if batched is not None:
                return batched
        return self.committed_offsets_per_group(ids)

    def committed_offsets_batched(self, group_ids: list[str]) -> dict[str, list[CommittedOffset]] | None:
        """Through kafka-python, whose ``list_group_offsets`` sends one OffsetFetch per
        coordinator for a whole batch of groups (librdkafka's asks one group per request,
        one request at a time per coordinator: thousands of round trips for thousands of
        groups). None where it cannot be used (a SASL mechanism kafka-python lacks, a broker
        before 3.0, any group-level error): the per-group path then answers, and names the
        group that fails."""
        from audit.collect.metadata.transactions import kafka_python_admin, kafka_python_settings

        settings = kafka_python_settings(self.cfg)
        if isinstance(settings, str):
            log.info("%s: batched OffsetFetch not used (%s): one group per request", self.role, settings)
            return None
        out: dict[str, list[CommittedOffset]] = {}
        try:
            with kafka_python_admin(settings) as admin:
                for chunk in _chunks(group_ids, GROUPS_PER_OFFSET_FETCH):
                    fetched = admin.list_group_offsets(chunk)
                    for gid in chunk:
                        rows = [
                            CommittedOffset(
                                tp.topic,
                                tp.partition,
                                int(om.offset),
                                _known(om.leader_epoch),
                                _committed_metadata(om.metadata),
                            )
                            for tp, om in (fetched.get(gid) or {}).items()
                            if om.offset is not None and om.offset >= 0
                        ]
                        out[gid] = sorted(rows, key=lambda c: (c.topic, c.partition))
        except Exception as exc:  # any refusal: the per-group calls give the precise error
            log.info(
                "%s: batched OffsetFetch not used (%s): one group per request", self.role, _describe(exc)
            )
            return None
        return out

    def committed_offsets_per_group(self, group_ids: Sequence[str]) -> dict[str, list[CommittedOffset]]:
        """Committed offsets per group; one call per group, at most ``max_concurrent_requests`` in flight."""
        out: dict[str, list[CommittedOffset]] = {}
        for chunk in _chunks(list(group_ids), self.cfg.max_concurrent_requests):
            futures = {
                gid: self._admin.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(gid)], request_timeout=self.timeout
                )[gid]
                for gid in chunk
            }
            for gid, fut in futures.items():
                try:
                    result = self._result(f"list_consumer_group_offsets({gid})", fut)
                except UnicodeDecodeError:
                    raise ClusterError(
                        f"{self.role} cluster ({self.cfg.bootstrap_servers}): group {gid}'s commit "
                        "metadata cannot be read by confluent-kafka (metadata committed without a "
                        "terminating NUL, as Java clients and Kafka Streams commit it); kafka-python "
                        "reads it: use settings kafka-python takes (see the batched OffsetFetch line "
                        "above)"
                    ) from None
                rows = []
                for tp in result.topic_partitions or []:
                    if tp.error is not None or tp.offset is None or tp.offset < 0:
                        continue
                    rows.append(
                        CommittedOffset(
                            tp.topic,
                            tp.partition,
                            int(tp.offset),
                            _known(getattr(tp, "leader_epoch", None)),
                            tp.metadata or None,
                        )
                    )
                out[gid] = rows
        return out


def _group_type(listing: Any) -> str:
    t = getattr(listing, "type", None)
    return _type_word(t) if t is not None else "unknown"


def _type_word(value: Any) -> str:
    word = _enum_name(value).lower()
    return word if word in ("consumer", "classic", "share", "streams") else "unknown"


def _state_word(state: str) -> str:
    """A group state as ListGroups spells it (``NotReady``) in the snapshot's words
    (``NOT_READY``, as librdkafka's enum names them); UNKNOWN where the broker gave none."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", state).upper() or "UNKNOWN"


def _committed_metadata(raw: str | None) -> str | None:
    """Commit metadata as its committer wrote it: librdkafka clients (confluent-kafka among
    them) commit it with their C string's terminating NUL, which the broker keeps and
    kafka-python returns; one trailing NUL is that artifact, not the committer's text."""
    if not raw:
        return None
    return (raw[:-1] or None) if raw.endswith("\x00") else raw


# Groups per batched OffsetFetch: one request per coordinator for each batch (its size grows
# with the groups' committed partitions, so batches stay well under a request's limits).
GROUPS_PER_OFFSET_FETCH = 1000
