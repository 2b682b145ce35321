"""The package as a user installs it: the sdist and the wheel built as a release would be
(once, for the image too: tests/packaging/conftest.py), the wheel installed into a new
virtual environment and run from a directory outside the checkout, where nothing of the
repository can be found by accident."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.dist import Built
from tests.dist import run as _run
from tests.snapshots import faulty_pair

REPO = Path(__file__).resolve().parents[2]
CONFIG = "scope:\n  groups:\n    exclude: ['private']\n"


@pytest.fixture(scope="module")
def installed(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a new virtual environment with only the built wheel (and its
    dependencies from the package index) installed."""
    root = tmp_path_factory.mktemp("wheel")
    venv = root / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)], cwd=root).returncode == 0
    pip = _run([str(venv / "bin" / "pip"), "install", "--quiet", str(built.wheel)], cwd=root, timeout=1800)
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    return venv / "bin"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory outside the checkout with a snapshot pair and a config file in it."""
    work = tmp_path_factory.mktemp("outside")
    assert REPO not in work.parents
    faulty_pair(work / "snaps")
    (work / "audit.yaml").write_text(CONFIG)
    return work


def _summary(run: Path) -> dict[str, Any]:
    data = json.loads((run / "summary.json").read_text())
    assert isinstance(data, dict)
    return data


def _essentials(summary: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on how the package was installed: verdict, every invariant's
    status and counts, the readiness figures."""
    return {
        "verdict": summary["verdict"],
        "invariants": {
            k: (v["status"], v["evaluated"], v["violations"]) for k, v in summary["invariants"].items()
        },
        **{k: summary.get(k) for k in ("readiness", "expected_loss_records", "expected_reprocess_records")},
    }


def test_the_installed_package_runs_outside_the_checkout(installed: Path) -> None:
    where = _run(
        [
            str(installed / "python"),
            "-c",
            "import audit; from audit.validate.suites import expectations_dir; "
            "print(audit.__file__); print(expectations_dir()[0])",
        ],
        cwd=installed,
    )
    assert where.returncode == 0, where.stderr
    module, suites = where.stdout.split()
    assert Path(module).is_relative_to(installed.parent) and not Path(module).is_relative_to(REPO)
    assert Path(suites).is_relative_to(installed.parent)  # the suites shipped in the wheel
    assert (Path(suites) / "cm_partitions.json").is_file()
    # The example configurations ship too: `mirror-audit init` writes a config that loads.
    fresh = installed.parent / "fresh.yaml"
    init = _run(
        [str(installed / "mirror-audit"), "init", "--mode", "mm2", "--out", str(fresh)], cwd=installed
    )
    assert init.returncode == 0, init.stderr
    loads = _run(
        [
            str(installed / "python"),
            "-c",
            f"from audit.config_file import load_config; print(load_config({str(fresh)!r}).mode)",
        ],
        cwd=installed,
    )
    assert (loads.returncode, loads.stdout.strip()) == (0, "mm2"), loads.stderr


@pytest.mark.parametrize("command", ["audit", "readiness"])
def test_the_wheel_gives_the_checkouts_summary(installed: Path, workdir: Path, command: str) -> None:
    args = [
        command,
        "--source",
        "snaps/source",
        "--destination",
        "snaps/destination",
        "--config",
        "audit.yaml",
    ]
    wheel = _run([str(installed / "mirror-audit"), *args, "--out", f"wheel-{command}"], cwd=workdir)
    # The checkout's answer on the in-process engine: the same queries and suites as the
    # wheel's Spark run of ``audit`` (tests/spark/test_engine_parity.py holds the engines
    # to one answer), without a second Spark start.
    checkout = _run(
        [sys.executable, "-m", "audit.cli", *args, "--engine", "local", "--out", f"checkout-{command}"],
        cwd=workdir,
    )
    assert wheel.returncode == checkout.returncode == 1, wheel.stderr[-3000:] + checkout.stderr[-3000:]
    ours, theirs = _summary(workdir / f"wheel-{command}"), _summary(workdir / f"checkout-{command}")
    assert _essentials(ours) == _essentials(theirs)
    assert ours["verdict"] == "FAIL" and (command == "audit" or ours["readiness"] == "NO-GO")
    assert (workdir / f"wheel-{command}" / "report" / "index.html").is_file()
    # A readiness check writes Data Docs only where output.readiness_data_docs asks.
    docs = workdir / f"wheel-{command}" / "validation" / "data_docs" / "index.html"
    assert docs.is_file() == (command == "audit")


def test_an_operators_own_suites_are_used_and_a_broken_one_is_named(installed: Path, workdir: Path) -> None:
    mine = workdir / "my-suites"
    where = _run(
        [
            str(installed / "python"),
            "-c",
            "from audit.validate.suites import *; print(expectations_dir()[0])",
        ],
        cwd=workdir,
    )
    shutil.copytree(where.stdout.strip(), mine)
    # An operator relaxes CM-EPOCH-1 to a warning in their own copy.
    suite_path = mine / "cm_partitions.json"
    suite = json.loads(suite_path.read_text())
    for e in suite["expectations"]:
        if e["meta"]["invariant"] == "CM-EPOCH-1":
            e["meta"]["severity"] = "warn"
    suite_path.write_text(json.dumps(suite))
    (workdir / "own.yaml").write_text(CONFIG + "validation:\n  expectations_dir: my-suites\n")
    args = [
        "readiness",
        "--source",
        "snaps/source",
        "--destination",
        "snaps/destination",
        "--config",
        "own.yaml",
    ]
    run = _run([str(installed / "mirror-audit"), *args, "--out", "own"], cwd=workdir)
    assert run.returncode == 1, run.stderr[-3000:]
    assert _summary(workdir / "own")["invariants"]["CM-EPOCH-1"]["status"] == "warn"

    (mine / "cm_topics.json").write_text("{ not json")
    broken = _run([str(installed / "mirror-audit"), *args, "--out", "broken"], cwd=workdir)
    assert broken.returncode == 2
    assert f"expectation suite {mine / 'cm_topics.json'} cannot be read" in broken.stderr
    assert "Traceback" not in broken.stderr and not (workdir / "broken" / "summary.json").exists()

    (workdir / "gone.yaml").write_text(CONFIG + "validation:\n  expectations_dir: nowhere\n")
    args[-1] = "gone.yaml"
    gone = _run([str(installed / "mirror-audit"), *args, "--out", "gone"], cwd=workdir)
    assert gone.returncode == 2
    assert (
        f"expectations directory {workdir / 'nowhere'} (validation.expectations_dir) does not exist"
        in gone.stderr
    )
