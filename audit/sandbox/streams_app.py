"""A Kafka Streams application of the sandbox's own: a real Streams group (KIP-1071,
``group.protocol=streams``) or a classic one on a cluster, with the repartition and
changelog topics a stateful application makes. Kafka Streams itself, from Maven Central,
runs ``resources/StreamsCountApp.java`` from its source (``java File.java``: no build step).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from audit.errors import SandboxError
from audit.java_runtime import find_java
from audit.sandbox.jars import ensure_streams_jars, resource_path
from audit.sandbox.processes import java_cmd, start_process, stop_process
from audit.sandbox.state import process_start_ticks

RUNNING = "streams state RUNNING"


@contextmanager
def streams_application(
    bootstrap: str,
    application_id: str,
    topic: str,
    workdir: Path,
    protocol: str = "streams",
    timeout: float = 120.0,
) -> Iterator[Path]:
    """Run the application until the block ends (stopped with SIGTERM: it commits and
    leaves its group); yields its log. Raises ``SandboxError`` with the log's last lines
    when it exits or does not reach RUNNING within ``timeout`` seconds."""
    jars = ensure_streams_jars()
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / f"streams-{application_id}.log"
    args = [bootstrap, application_id, topic, str(workdir / f"state-{application_id}"), protocol]
    cmd = java_cmd(find_java(), str(jars), 256, str(resource_path("StreamsCountApp.java")), args)
    pid, ticks = start_process(cmd, log_path)
    try:
        _wait_running(pid, ticks, log_path, timeout)
        yield log_path
    finally:
        stop_process(pid, ticks, 30.0)


def _wait_running(pid: int, ticks: int, log_path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log_path.read_text(errors="replace") if log_path.exists() else ""
        if RUNNING in text:
            return
        if process_start_ticks(pid) != ticks:
            raise SandboxError(f"the Kafka Streams application exited: {_tail(text)}")
        time.sleep(0.2)
    text = log_path.read_text(errors="replace")
    raise SandboxError(
        f"the Kafka Streams application did not reach RUNNING in {timeout:.0f}s: {_tail(text)}"
    )


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(ln.strip() for ln in text.strip().splitlines()[-lines:]) or "(no output)"
