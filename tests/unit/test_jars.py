"""Which spark-sql-kafka versions the record-reader benchmark tries, in order."""

from __future__ import annotations

import pytest

from audit.sandbox.jars import patch_candidates

pytestmark = pytest.mark.unit


def test_exact_version_first_then_earlier_patches_newest_first() -> None:
    assert patch_candidates("4.1.4") == ["4.1.4", "4.1.3", "4.1.2", "4.1.1", "4.1.0"]


def test_first_patch_has_no_fallback() -> None:
    assert patch_candidates("4.1.0") == ["4.1.0"]


@pytest.mark.parametrize("version", ["4.2.0-preview1", "4.1", "dev"])
def test_pre_releases_and_odd_versions_are_tried_as_given(version: str) -> None:
    assert patch_candidates(version) == [version]
