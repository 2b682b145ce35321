"""A large mirrored estate on the sandbox, for the scale benchmark and its smoke test:
topics of 100 partitions on both clusters, and consumer groups committing on 5 partitions
each, the same on both sides (what an offset-preserving mirror that keeps up produces)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import MAX_PARTITIONS_PER_REQUEST, commit_groups, create_topics

log = logging.getLogger(__name__)

PARTITIONS_PER_TOPIC = 100
PARTITIONS_PER_GROUP = 5


@dataclass(frozen=True)
class Workload:
    topics: tuple[str, ...]
    groups: tuple[str, ...]
    create_requests: int
    create_seconds: float
    commit_seconds: float

    @property
    def partitions(self) -> int:
        return len(self.topics) * PARTITIONS_PER_TOPIC


def make_workload(
    state: SandboxState,
    partitions: int,
    prefix: str = "scale",
    max_partitions_per_request: int = MAX_PARTITIONS_PER_REQUEST,
) -> Workload:
    """``partitions`` (rounded to whole topics) on each cluster, created in chunks the
    controller accepts, and one group per 5 partitions committing at offset 0 on both."""
    names = [f"{prefix}-{i:04d}" for i in range(max(1, partitions // PARTITIONS_PER_TOPIC))]
    commits: dict[str, dict[tuple[str, int], int]] = {}
    for t, name in enumerate(names):
        for first in range(0, PARTITIONS_PER_TOPIC, PARTITIONS_PER_GROUP):
            commits[f"{prefix}-group-{t:04d}-{first:03d}"] = {
                (name, p): 0 for p in range(first, first + PARTITIONS_PER_GROUP)
            }
    requests, create_seconds, commit_seconds = 0, 0.0, 0.0
    for cluster in state.clusters:
        started = time.perf_counter()
        requests = create_topics(
            cluster.bootstrap, names, PARTITIONS_PER_TOPIC, 1, max_partitions_per_request
        )
        create_seconds = max(create_seconds, time.perf_counter() - started)
        started = time.perf_counter()
        commit_groups(cluster.bootstrap, commits)
        commit_seconds = max(commit_seconds, time.perf_counter() - started)
        log.info(
            "%s: %d topics in %d requests (%.1fs), %d groups committed (%.1fs)",
            cluster.name,
            len(names),
            requests,
            create_seconds,
            len(commits),
            commit_seconds,
        )
    return Workload(
        tuple(names), tuple(commits), requests, round(create_seconds, 1), round(commit_seconds, 1)
    )
