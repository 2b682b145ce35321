"""The sandbox a demo runs on: one of its own, or the one already running in the work dir.

A demo started where no sandbox runs starts one and stops it at the end, data and all. A
demo started on a sandbox that already runs there (``mirror-audit sandbox up``) uses it and
leaves it running: at the end it removes the topics and groups that appeared on either
cluster while it ran (its own, and those of the mirror it drove), so the next demo finds the
sandbox as this one did. Demos run one after another then start the brokers once, which is
how the test suite runs its demos. ``keep`` leaves either sandbox as the demo left it, for a
look around.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from audit.errors import SandboxError
from audit.sandbox.cluster import SandboxOptions, down, running_sandbox, up
from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import client_conf

log = logging.getLogger(__name__)

# Kafka's own topics (__consumer_offsets, __transaction_state, __share_group_state...) appear
# on first use and stay: they are the cluster's, not a demo's.
_INTERNAL_PREFIX = "__"
_GONE_SECONDS = 60.0


@dataclass(frozen=True)
class Footprint:
    """The topics and groups of each cluster at one moment."""

    topics: dict[str, frozenset[str]]
    groups: dict[str, frozenset[str]]


@contextlib.contextmanager
def demo_sandbox(workdir: Path, brokers: int, keep: bool, demo: str) -> Iterator[SandboxState]:
    """The sandbox for ``demo`` (its name, for messages) for the length of the block, with
    at least ``brokers`` brokers per cluster: the one running in ``workdir``, else a new
    one (see the module's docstring for what each is left as)."""
    running = running_sandbox(workdir)
    before: Footprint | None = None
    if running is not None:
        short = sorted(c.name for c in running.clusters if len(c.nodes) < brokers)
        if short:
            raise SandboxError(
                f"the {demo} needs {brokers} brokers per cluster and the sandbox running in {workdir} "
                f"has fewer ({', '.join(short)}): stop it (mirror-audit sandbox down) and let the demo "
                f"start its own, or start it with --brokers {brokers}"
            )
        before = footprint(running)
        state = running
        log.info("the %s runs on the sandbox already running in %s and leaves it running", demo, workdir)
    else:
        state = up(SandboxOptions(workdir=workdir, brokers_per_cluster=brokers))
    try:
        yield state
    finally:
        if keep:
            log.info("sandbox left running with the %s's topics: mirror-audit sandbox status / down", demo)
        elif before is None:
            down(workdir)
        else:
            remove_since(state, before)


def footprint(state: SandboxState) -> Footprint:
    topics, groups = {}, {}
    for cluster in state.clusters:
        admin = AdminClient(client_conf(cluster.bootstrap))
        topics[cluster.name] = frozenset(
            t for t in admin.list_topics(timeout=30).topics if not t.startswith(_INTERNAL_PREFIX)
        )
        groups[cluster.name] = frozenset(_group_ids(cluster.bootstrap))
    return Footprint(topics, groups)


def _group_ids(bootstrap: str) -> list[str]:
    """Every group of the cluster, share and streams groups included: librdkafka's listing
    leaves those out, kafka-python's ListGroups has them all (as the snapshot reads them)."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        return [str(g["group_id"]) for g in admin.list_groups()]
    finally:
        admin.close()


def remove_since(state: SandboxState, before: Footprint) -> None:
    """Delete the groups, then the topics, that appeared on each cluster since ``before``,
    and wait until the topics are gone from the metadata (a demo after this one creates
    them again). Groups go first: a group's offsets of a deleted topic would outlive it
    only until the coordinator's cleanup, but an empty group stays listed."""
    now = footprint(state)
    for cluster in state.clusters:
        admin = AdminClient(client_conf(cluster.bootstrap))
        _delete_groups(admin, cluster.name, sorted(now.groups[cluster.name] - before.groups[cluster.name]))
        topics = sorted(now.topics[cluster.name] - before.topics[cluster.name])
        if topics:
            for topic, future in admin.delete_topics(topics, operation_timeout=30).items():
                try:
                    future.result(timeout=60)
                except KafkaException as exc:
                    raise SandboxError(
                        f"removing the demo's topic {topic} on the {cluster.name} failed: {exc}"
                    ) from exc
            _wait_gone(admin, cluster.name, set(topics))
        log.info(
            "removed from the %s: %d topics, %d groups the demo made",
            cluster.name,
            len(topics),
            len(now.groups[cluster.name] - before.groups[cluster.name]),
        )


def _delete_groups(admin: AdminClient, cluster: str, groups: list[str]) -> None:
    """Delete ``groups``; one whose members are still leaving (a mirror's worker group just
    after its process stopped) is tried again for a while."""
    deadline = time.monotonic() + _GONE_SECONDS
    pending = list(groups)
    while pending:
        failed: list[str] = []
        for group, future in admin.delete_consumer_groups(pending, request_timeout=30).items():
            try:
                future.result()
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                code = err.code() if isinstance(err, KafkaError) else None
                if code == KafkaError.GROUP_ID_NOT_FOUND:
                    continue  # expired meanwhile
                if code != KafkaError.NON_EMPTY_GROUP or time.monotonic() > deadline:
                    raise SandboxError(
                        f"removing the demo's group {group} on the {cluster} failed: {exc}"
                    ) from exc
                failed.append(group)
        pending = failed
        if pending:
            time.sleep(0.5)


def _wait_gone(admin: AdminClient, cluster: str, topics: set[str]) -> None:
    deadline = time.monotonic() + _GONE_SECONDS
    while True:
        left = topics & set(admin.list_topics(timeout=30).topics)
        if not left:
            return
        if time.monotonic() > deadline:
            raise SandboxError(f"the demo's topics {sorted(left)} were still on the {cluster} after deletion")
        time.sleep(0.3)
