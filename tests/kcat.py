"""kcat (librdkafka's console client, installed by ``make kcat``) as the live tests' oracle
for what a topic holds: a reader that is not the auditor's own."""

from __future__ import annotations

import shutil
import subprocess


def kcat() -> str:
    found = shutil.which("kcat") or shutil.which("kafkacat")
    assert found, "kcat is installed by make test (make kcat): run the suite through make"
    return found


def kcat_records(bootstrap: str, topic: str, isolation: str = "read_uncommitted") -> list[tuple[int, str]]:
    """(offset, value) of every record of partition 0, as kcat reads it (control records never
    shown; aborted ones only under read_uncommitted)."""
    args = ["-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q"]
    proc = subprocess.run(
        [kcat(), *args, "-X", f"isolation.level={isolation}", "-f", "%o %s\\n"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [(int(o), v) for o, v in (ln.split(" ", 1) for ln in proc.stdout.splitlines())]
