"""The project's sdist and wheel, built once for the packaging tests: the wheel test installs
that wheel, and the image carries it (``make image PROJECT_WHEEL=...``), so both test the
one build a release would publish."""

from __future__ import annotations

import shutil
import sys
import zipfile

import pytest

from tests.dist import REPO, Built, run


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The sdist and the wheel built from the checkout as a release builds them (``python -m
    build``: the sdist, then the wheel from it); the suites travel in both as package data."""
    dist = tmp_path_factory.mktemp("dist")
    proc = run([sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)], cwd=dist)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    shutil.rmtree(REPO / "build" / "lib", ignore_errors=True)  # setuptools' scratch, not ours to keep
    (sdist,) = dist.glob("kafka_mirror_audit-*.tar.gz")
    (wheel,) = dist.glob("kafka_mirror_audit-*.whl")
    listing = run(["tar", "tzf", str(sdist)], cwd=dist).stdout
    assert "audit/expectations/cm_partitions.json" in listing
    names = zipfile.ZipFile(wheel).namelist()
    assert "audit/expectations/cm_partitions.json" in names and "audit/expectations/mm2_syncs.json" in names
    return Built(sdist, wheel)
