"""Fetching jars with Maven: which spark-sql-kafka versions are tried, and what a failed
fetch leaves behind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from audit.errors import SandboxError
from audit.sandbox import jars
from audit.sandbox.jars import patch_candidates

pytestmark = pytest.mark.unit


def test_exact_version_first_then_earlier_patches_newest_first() -> None:
    assert patch_candidates("4.1.4") == ["4.1.4", "4.1.3", "4.1.2", "4.1.1", "4.1.0"]


def test_first_patch_has_no_fallback() -> None:
    assert patch_candidates("4.1.0") == ["4.1.0"]


@pytest.mark.parametrize("version", ["4.2.0-preview1", "4.1", "dev"])
def test_pre_releases_and_odd_versions_are_tried_as_given(version: str) -> None:
    assert patch_candidates(version) == [version]


def test_missing_maven_is_a_clear_error_and_leaves_no_partial_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # jars calls shutil.which through the shared shutil module, so patching it there is seen.
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(SandboxError, match=r"Maven is not installed: install it \(apt-get install maven\)"):
        jars.ensure_spark_kafka_jars("4.1.0", root=tmp_path)
    assert [p.name for p in tmp_path.rglob("*") if p.is_dir()] == ["spark-kafka-4.1.0"]
    assert not any(tmp_path.rglob(".complete"))
