"""The sandbox smoke path behind ``mirror-audit demo`` until the full audit demo lands.

Brings both clusters up, writes and reads a few records on each, and shows the clusters
are independent (distinct cluster ids), then tears the sandbox down unless asked to keep it.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from audit.errors import ExitCode, SandboxError
from audit.sandbox.cluster import SandboxOptions, default_workdir, down, up
from audit.sandbox.traffic import Record, create_topic, produce, read_partition

log = logging.getLogger(__name__)


def run_smoke(workdir: Path | None = None, keep: bool = False) -> int:
    workdir = workdir or default_workdir()
    state = up(SandboxOptions(workdir=workdir))
    try:
        ids = set()
        for cluster in state.clusters:
            topic = f"smoke-{int(time.time())}"
            create_topic(cluster.bootstrap, topic, partitions=1)
            sent = [Record(f"k{i}".encode(), f"v{i}".encode(), (("h", b"1"),)) for i in range(10)]
            produce(cluster.bootstrap, topic, sent)
            got = [r for _, r in read_partition(cluster.bootstrap, topic, 0, 0, len(sent))]
            if got != sent:
                raise SandboxError(
                    f"{cluster.name}: read back {len(got)} records that differ from the 10 produced"
                )
            ids.add(cluster.cluster_id)
            log.info(
                "%s (%s, cluster id %s): produced and read back %d records",
                cluster.name,
                cluster.bootstrap,
                cluster.cluster_id,
                len(got),
            )
        if len(ids) != len(state.clusters):
            raise SandboxError("the sandbox clusters share a cluster id")
        print("sandbox smoke test passed: both clusters accept and serve records")
        return ExitCode.OK
    finally:
        if keep:
            log.info("sandbox left running (mirror-audit sandbox down to stop it)")
        else:
            down(workdir)
