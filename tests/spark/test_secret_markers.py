"""Nothing secret leaves the process: a unique marker planted in every place a configuration
(or a command line) can hold a secret, each command run as a user runs it (passing,
failing and erroring runs), and no marker in any file under the output root or in any line
of stdout or stderr. The nightly over the sandbox's SASL_SSL listener does the same with a
live cluster (tests/integration/test_credentials_live.py)."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from tests.cli import run_cli
from tests.snapshots import faulty_pair

# Where a secret can be written, each with its marker (the config text it is planted in).
PLACES: dict[str, str] = {
    "cluster property sasl.password": "source:\n  bootstrap_servers: 127.0.0.1:1\n  properties:\n"
    "    sasl.password: {m}\n    ssl.key.password: {m}x\n",
    "spark conf secret key (Hadoop .key)": "spark:\n  conf:\n    spark.hadoop.fs.s3a.secret.key: {m}\n"
    "    spark.hadoop.fs.s3a.access.key: AKIA{m}\n    spark.custom.store: s3a://ID{m}:{m}y@bucket/x\n"
    "    spark.my.opaque.setting: {m}z\n    spark.sql.shuffle.partitions: '2'\n"
    "  secret_conf: ['spark\\.my\\.opaque\\..*']\n",
    "segment path URI userinfo": "segments:\n  source:\n    read: files\n"
    "    paths: ['s3a://KEY{m}:{m}@bucket/kafka']\n",
    "pushgateway basic auth": "output:\n  pushgateway_url: 'https://pusher:{m}@127.0.0.1:9/'\n",
}


def _marker() -> str:
    return "MARKER" + secrets.token_hex(6)


def _config(tmp: Path, markers: dict[str, str]) -> Path:
    path = tmp / "audit.yaml"
    path.write_text("".join(PLACES[place].format(m=m) for place, m in markers.items()))
    return path


def _leaks(root: Path, outputs: list[str], markers: dict[str, str], config: Path) -> list[str]:
    found = []
    for place, marker in markers.items():
        for text in outputs:
            if marker in text:
                found.append(f"{place}: in the command's output")
        for f in root.rglob("*"):
            if f.is_file() and f != config and marker.encode() in f.read_bytes():
                found.append(f"{place}: in {f.relative_to(root)}")
    return found


@pytest.mark.usefixtures("spark")
def test_no_planted_secret_reaches_a_file_or_a_line_of_any_command(tmp_path: Path) -> None:
    markers = {place: _marker() for place in PLACES}
    config = _config(tmp_path, markers)
    src, dst = faulty_pair(tmp_path / "snap")
    root = tmp_path / "out"
    runs = [
        # Spark engine: the Spark settings reach a real session; the faulty pair fails.
        ("audit", "--source", str(src), "--destination", str(dst), "--out", str(root / "audit")),
        ("readiness", "--source", str(src), "--destination", str(dst), "--out", str(root / "ready")),
        # An erroring run: the segment path's credentials in its one error line.
        (
            "segments",
            "scan",
            "s3a://KEY{m}:{m}@bucket/kafka".format(m=markers["segment path URI userinfo"]),
            "--role",
            "source",
            "--out",
            str(root / "scan"),
        ),
        # An erroring live job: the config names no destination cluster.
        ("nightly", "--out", str(root / "nightly")),
    ]
    outputs, codes = [], []
    for args in runs:
        proc = run_cli(*args, "--config", str(config), timeout=900)
        outputs += [proc.stdout, proc.stderr]
        codes.append(proc.returncode)
    assert codes[0] == 1 and codes[1] == 1, (codes, outputs[1][-2000:], outputs[3][-2000:])
    assert codes[2] == 2 and codes[3] == 2, outputs[5] + outputs[7]
    assert len(list(root.rglob("*"))) > 20  # the runs wrote their reports, summaries, Data Docs
    assert (root / "audit" / "report" / "index.html").is_file()
    assert _leaks(tmp_path, outputs, markers, config) == []
    # Not vacuous: the config did carry them to the run, where they are shown redacted.
    report = (root / "audit" / "report" / "index.html").read_text()
    assert "s3a://***@bucket/kafka" in report and "***" in report
