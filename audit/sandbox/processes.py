"""Java processes the sandbox starts (brokers, MirrorMaker 2, Kafka's command-line tools):
started in their own session from the sandbox's jars, stopped by pid and /proc start time
so that a recycled pid is never signalled."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from audit.errors import SandboxError
from audit.java_runtime import find_java
from audit.sandbox.jars import resource_path, uses_reload4j
from audit.sandbox.state import SandboxState, process_start_ticks

log = logging.getLogger(__name__)

# Popen handles of the processes this process started, so they are reaped (no zombies) on stop.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}

# A sandbox JVM lives for minutes on a small heap and a trickle of loopback traffic: the
# client compiler alone and the serial collector start four brokers with about a quarter
# less CPU (33 CPU-seconds to 25 for ``sandbox up --brokers 2`` on two cores), which the
# suite and ``make demo`` feel. The benchmarks, which read the brokers as fast as they
# serve, ask for the server compiler and G1 (``SANDBOX_JVM=server``), as production runs.
SANDBOX_JVM = "MIRROR_AUDIT_SANDBOX_JVM"
_JVM_FLAGS = {
    "quick": ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"),
    "server": ("-XX:+UseG1GC",),
}


def jvm_flags() -> tuple[str, ...]:
    """The compiler and collector flags of the sandbox's JVMs (``$MIRROR_AUDIT_SANDBOX_JVM``:
    ``quick``, the default, or ``server``)."""
    choice = os.environ.get(SANDBOX_JVM, "quick")
    if choice not in _JVM_FLAGS:
        raise SandboxError(f"${SANDBOX_JVM} is {choice!r}: use 'quick' (the default) or 'server'")
    return _JVM_FLAGS[choice]


def java_cmd(
    java: str, jars: str, heap_mb: int, main: str, args: Sequence[str], extra_jars: Sequence[str] = ()
) -> list[str]:
    """The command running ``main`` from the jar directory ``jars``, ``extra_jars`` after it
    on the class path (a MirrorMaker 2 formatter for Kafka's console consumer)."""
    return [
        java,
        f"-Xms{max(64, heap_mb // 2)}m",
        f"-Xmx{heap_mb}m",
        *jvm_flags(),
        "-Djava.awt.headless=true",
        _logging_option(jars),
        "-cp",
        os.pathsep.join([f"{jars}/*", *extra_jars]),
        main,
        *args,
    ]


def _logging_option(jars: str) -> str:
    """The logging configuration for the jars' backend: Kafka 3.x logs through reload4j
    (log4j 1 syntax, ``-Dlog4j.configuration``), 4.x through log4j2."""
    if uses_reload4j(jars):
        return f"-Dlog4j.configuration=file:{resource_path('log4j.properties')}"
    return f"-Dlog4j2.configurationFile={resource_path('log4j2.properties')}"


def dump_log_class(jars: str) -> str:
    """kafka-dump-log's main class in these jars: the Java rewrite in kafka-tools
    (``org.apache.kafka.tools.DumpLogSegments``, Kafka 4.3 and later), else the Scala one in
    the broker jar (``kafka.tools.DumpLogSegments``)."""
    import zipfile

    for tools in Path(jars).glob("kafka-tools-[0-9]*.jar"):
        with zipfile.ZipFile(tools) as jar:
            if "org/apache/kafka/tools/DumpLogSegments.class" in jar.namelist():
                return "org.apache.kafka.tools.DumpLogSegments"
    return "kafka.tools.DumpLogSegments"


def run_tool(
    state: SandboxState,
    main_class: str,
    args: Sequence[str],
    timeout: float = 120.0,
    heap_mb: int = 256,
    extra_jars: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's own command-line tools (a Java main class) from the sandbox jars."""
    cmd = java_cmd(find_java(), state.jars, heap_mb, main_class, args, extra_jars)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def start_java(
    java: str,
    jars: str,
    heap_mb: int,
    main: str,
    args: Sequence[str],
    log_path: Path,
    extra_jars: Sequence[str] = (),
) -> tuple[int, int]:
    """Start a long-running JVM (a broker, MirrorMaker 2) in its own session, output to
    ``log_path``, ``extra_jars`` after ``jars`` on its class path (a tiered broker's remote
    storage manager); returns its pid and /proc start time, the pair it is stopped by."""
    return start_process(java_cmd(java, jars, heap_mb, main, args, extra_jars), log_path)


def start_process(cmd: Sequence[str], log_path: Path, env: dict[str, str] | None = None) -> tuple[int, int]:
    """Start a long-running process in its own session (so a terminal's Ctrl-C reaches only
    the command that started it), output to ``log_path``; returns its pid and /proc start
    time, the pair ``stop_process`` checks before it signals."""
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(
            list(cmd),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
    _CHILDREN[proc.pid] = proc
    ticks = None
    for _ in range(50):
        ticks = process_start_ticks(proc.pid)
        if ticks is not None or proc.poll() is not None:
            break
        time.sleep(0.01)
    return proc.pid, ticks if ticks is not None else -1


def stop_process(pid: int, ticks: int, timeout: float) -> None:
    """Stop a process ``start_java`` started, if it is still that process (pid and start time)."""
    if process_start_ticks(pid) != ticks:
        _CHILDREN.pop(pid, None)
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process_start_ticks(pid) != ticks:
            break
        time.sleep(0.1)
    else:
        log.warning("process %d did not stop within %.0fs; killing it", pid, timeout)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        while process_start_ticks(pid) == ticks:
            time.sleep(0.05)
    child = _CHILDREN.pop(pid, None)
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=5)
