"""The container image as a platform team runs it (docs/operations.md, "Running in a container").

``make image`` builds it from a Debian bookworm base; no registry is reachable from the
machines this suite runs on, so ``make image-base`` first builds that base from Debian's
packages (mmdebstrap: the same distribution and packages as the default base) and the test
passes it as the build argument. The image then runs ``readiness`` and ``nightly`` against
the healthy demo's brokers as deploy/kubernetes's pods run them: its own non-root user, a
read-only root with /tmp writable, the configuration mounted read-only and the output root
a mounted volume. The verdicts must be the healthy demo's (GO, PASS), read through the
compiled batch reader and the Kafka Java client the image carries, and every file written
to the volume must belong to the image's user. Its configuration carries the Spark settings
of every CLI run the suite starts (tests/spark_conf/spark-defaults.conf: the client compiler,
expressions interpreted), which the image's own environment would not pass on.

podman runs with deploy/container/containers.conf (runc, cgroupfs, no default ulimits:
what this machine's kernel and cgroups allow)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from audit.sandbox import demo
from tests.dist import Built

REPO = Path(__file__).resolve().parents[2]
CONTAINERS_CONF = REPO / "deploy" / "container" / "containers.conf"
SUITE_SPARK_DEFAULTS = REPO / "tests" / "spark_conf" / "spark-defaults.conf"
IMAGE = "localhost/kafka-mirror-audit:suite"
IMAGE_UID = 10001
CONFIG_DIR = "/etc/mirror-audit"
OUTPUT_ROOT = "/var/lib/mirror-audit/reports"
NO_PODMAN = (
    "podman, runc or mmdebstrap is not installed: `make container-tools` installs Debian's "
    "(`make test` does it where they are missing)"
)

# deploy/kubernetes's pods: a read-only root, /tmp an emptyDir, HOME there.
AS_THE_PODS_RUN = ("--read-only", "--tmpfs", "/tmp", "--env", "HOME=/tmp")

pytestmark = pytest.mark.timeout(2400)


def _env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


def _run(cmd: list[str], timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def _tail(proc: subprocess.CompletedProcess[str]) -> str:
    return (proc.stdout[-3000:] + "\n" + proc.stderr[-3000:]).strip()


@pytest.fixture(scope="module")
def image(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The image, built by the Makefile's own targets as a user would build it, carrying the
    wheel the wheel's test installs (one build for both); removed after the module (the base
    is kept: ``make image-base`` reuses it)."""
    if not all(shutil.which(tool) for tool in ("podman", "runc", "mmdebstrap")):
        pytest.fail(NO_PODMAN)
    base = _run(["make", "image-base"])
    assert base.returncode == 0, _tail(base)
    context = tmp_path_factory.mktemp("image-context")
    made = _run(
        [
            *("make", "image", f"IMAGE={IMAGE}", "IMAGE_BASE=$(LOCAL_BASE)", f"IMAGE_CONTEXT={context}"),
            f"PROJECT_WHEEL={built.wheel}",
        ]
    )
    assert made.returncode == 0, _tail(made)
    # The image carries that very wheel.
    assert (context / "wheels" / built.wheel.name).read_bytes() == built.wheel.read_bytes()
    yield IMAGE
    _run(["podman", "image", "rm", "--force", IMAGE], timeout=300)
    _run(["podman", "image", "prune", "--force"], timeout=300)


def _suite_spark_defaults() -> dict[str, str]:
    """The Spark settings of every CLI run the suite starts (tests/spark_conf says why),
    which a run in the image gets from its configuration file: the image's environment
    is its own."""
    found = {}
    for line in SUITE_SPARK_DEFAULTS.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, value = line.split(None, 1)
            found[key] = value.strip()
    return found


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The healthy demo's clusters, and a configuration directory naming their brokers."""
    root = tmp_path_factory.mktemp("image-run")
    with demo.prepared(healthy=True, workdir=root / "sandbox") as state:
        config_dir = root / "config"
        config_dir.mkdir()
        config_dir.chmod(0o755)
        (config_dir / "audit.yaml").write_text(
            "source:\n"
            f"  bootstrap_servers: {state.cluster('source').bootstrap}\n"
            "  timeout_seconds: 20\n"
            "destination:\n"
            f"  bootstrap_servers: {state.cluster('destination').bootstrap}\n"
            "  timeout_seconds: 20\n"
            "records:\n  enabled: true\n  chunk_records: 50\n"
            "spark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: '4'\n"
            + "".join(f"    {k}: {json.dumps(v)}\n" for k, v in _suite_spark_defaults().items())
            + f"output:\n  root: {OUTPUT_ROOT}\n"
        )
        (config_dir / "audit.yaml").chmod(0o644)
        yield config_dir


def _in_image(image: str, config_dir: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One run of the image as deploy/kubernetes's pods run it."""
    return _run(
        [
            *("podman", "run", "--rm", "--network", "host", *AS_THE_PODS_RUN),
            *("--volume", f"{config_dir}:{CONFIG_DIR}:ro", "--volume", f"{out}:{OUTPUT_ROOT}"),
            image,
            *args,
            *("--config", f"{CONFIG_DIR}/audit.yaml"),
        ],
        timeout=900,
    )


def _output_root(tmp_path: Path) -> Path:
    """A volume for the output root that the image's user may write, as a pod's fsGroup
    makes it."""
    out = tmp_path / "reports"
    out.mkdir()
    os.chown(out, IMAGE_UID, IMAGE_UID)
    return out


def _owners(root: Path) -> set[tuple[int, int]]:
    return {(p.stat().st_uid, p.stat().st_gid) for p in [root, *root.rglob("*")]}


def test_the_image_runs_as_its_own_user_with_mirror_audit_as_entry_point(image: str) -> None:
    inspected = _run(["podman", "image", "inspect", image])
    assert inspected.returncode == 0, _tail(inspected)
    (config,) = [i["Config"] for i in json.loads(inspected.stdout)]
    assert config["User"] == f"{IMAGE_UID}:{IMAGE_UID}"
    assert config["Entrypoint"] == ["mirror-audit"]
    helped = _run(["podman", "run", "--rm", image, "--help"], timeout=120)
    assert helped.returncode == 0, _tail(helped)
    assert "readiness" in helped.stdout and "nightly" in helped.stdout


def test_readiness_in_the_image_says_go_for_the_healthy_mirror(
    image: str, mirrored: Path, tmp_path: Path
) -> None:
    out = _output_root(tmp_path)
    proc = _in_image(image, mirrored, out, "readiness", "--output", "json")
    assert proc.returncode == 0, _tail(proc)
    result: dict[str, Any] = json.loads(proc.stdout)
    assert result["outcome"] == "GO", result
    assert _owners(out) == {(IMAGE_UID, IMAGE_UID)}


def test_nightly_in_the_image_passes_reading_records_and_share_groups(
    image: str, mirrored: Path, tmp_path: Path
) -> None:
    out = _output_root(tmp_path)
    proc = _in_image(image, mirrored, out, "nightly")
    assert proc.returncode == 0, _tail(proc)
    (summary_path,) = out.glob("*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["verdict"] == "PASS", summary["invariants"]
    notes = json.loads((summary_path.parent / "source" / "manifest.json").read_text())["notes"]
    # The compiled reader and the Kafka Java client travel in the image.
    assert notes["records"]["reader"] == "batches", notes
    assert notes["share_groups"].startswith("1 share groups, start offsets read"), notes
    assert (summary_path.parent / "report" / "index.html").is_file()
    assert _owners(out) == {(IMAGE_UID, IMAGE_UID)}
