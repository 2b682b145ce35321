"""Verdicts on names, evaluated once in Python for both engines to join.

Scope patterns are the configuration's (RE2, ``audit.regex``), so the verdict a comparison
joins is the one ``config`` validates and the snapshot used; the engines never evaluate a
pattern in a dialect of their own. Names are metadata: the distinct topics and groups of a
cluster pair, however many partitions and records there are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from audit import regex
from audit.config import AuditConfig
from audit.schemas import AUX_TABLES

# <application.id>-<store or operator name>-changelog / -repartition: a Kafka Streams
# application's internal topics (CM-SCOPE-1).
STREAMS_TOPIC = r"^(.+)-(?:[^-].*-)?(?:changelog|repartition)$"


def topic_scope_rows(topics: Iterable[str], in_scope: Callable[[str], bool]) -> list[tuple[Any, ...]]:
    """``topic_scope``: (topic, in_scope, streams_internal) per distinct topic name."""
    return [(t, in_scope(t), regex.search(STREAMS_TOPIC, t)) for t in sorted(set(topics))]


def group_scope_rows(groups: Iterable[str], cfg: AuditConfig) -> list[tuple[Any, ...]]:
    """``group_scope``: (group_id, in_scope, excluded) per distinct group id; ``excluded``
    means named by an exclude pattern, as opposed to merely not included."""
    scope = cfg.scope
    rows = []
    for g in sorted(set(groups)):
        excluded = scope.group_excluded(g)  # once per name: RE2's binding costs ~5 us a call
        rows.append((g, not excluded and regex.any_full_match(scope.groups.include, g), excluded))
    return rows


def topic_name_rows(
    source_topics: Iterable[str], replica_topics: Iterable[str], cfg: AuditConfig
) -> list[tuple[Any, ...]]:
    """``topic_names`` (mode mm2): (source topic, its replica's name on the target) for every
    source topic seen, and for every target topic that is a replica of this source."""
    mm2 = cfg.mirror.mm2
    pairs = {(t, mm2.remote_topic(t)) for t in source_topics}
    for r in replica_topics:
        source = mm2.source_topic(r)
        if source is not None:
            pairs.add((source, r))
    return sorted(pairs)


def params_row(
    cfg: AuditConfig, src_started_at_ms: int, dst_markers_collected: bool, share_offsets_read: dict[str, bool]
) -> list[tuple[Any, ...]]:
    """``run_params``: what the queries need of the configuration and the snapshots
    (``share_offsets_read``: per role, whether its snapshot holds share groups' start
    offsets)."""
    row = {
        "src_started_at_ms": src_started_at_ms,
        "preserves_topic_ids": cfg.mirror.preserves_topic_ids,
        "preserves_batch_epochs": cfg.mirror.preserves_batch_epochs,
        "sync_group_offsets": cfg.mirror.mm2.sync_group_offsets,
        "dst_markers_collected": dst_markers_collected,
        "src_share_offsets_read": share_offsets_read["source"],
        "dst_share_offsets_read": share_offsets_read["destination"],
        "mm2_exactly_once": cfg.mirror.mm2.exactly_once,
        "mm2_read_committed": cfg.mirror.mm2.consumer_isolation == "read_committed",
        "tiered_destination_fails": cfg.mirror.tiered_destination == "fail",
    }
    return [named_row("run_params", row)]


def named_row(table: str, row: dict[str, Any]) -> tuple[Any, ...]:
    """A row of an auxiliary table given by column name, in its declared columns' order: a
    parameter is set by its name, never by its place in a tuple (a column added to the
    declaration and not here, or named here and not declared, fails at once)."""
    names = [c.name for c in AUX_TABLES[table]]
    if set(row) != set(names):
        raise AssertionError(
            f"{table}: columns {sorted(set(names) ^ set(row))} set here or declared, not both"
        )
    return tuple(row[n] for n in names)
