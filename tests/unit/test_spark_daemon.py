"""The worker daemon's one change: a zip importer re-reads its archive only when it changed."""

from __future__ import annotations

import sys
import zipfile
import zipimport
from pathlib import Path

import pytest

from audit import spark_daemon


def _zip(path: Path, modules: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        for name, source in modules.items():
            zf.writestr(f"{name}.py", source)


@pytest.fixture
def lazy(monkeypatch: pytest.MonkeyPatch) -> None:
    # Patch the class for this test only: monkeypatch restores the original afterwards.
    monkeypatch.setattr(zipimport.zipimporter, "invalidate_caches", zipimport.zipimporter.invalidate_caches)
    monkeypatch.setattr(spark_daemon, "_seen", {})
    spark_daemon.install()


def test_an_unchanged_archive_is_not_read_again(
    lazy: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "lib.zip"
    _zip(archive, {"first_mod": "X = 1"})
    importer = zipimport.zipimporter(str(archive))
    reads: list[str] = []
    original = zipimport._read_directory  # type: ignore[attr-defined]

    def counting(path: str) -> object:
        reads.append(path)
        return original(path)

    monkeypatch.setattr(zipimport, "_read_directory", counting)
    importer.invalidate_caches()  # first time: read, and remembered
    importer.invalidate_caches()
    importer.invalidate_caches()
    assert reads == [str(archive)]  # once, the first time; unpatched it is three times
    assert importer.find_spec("first_mod") is not None


def test_a_changed_archive_is_read_again(lazy: None, tmp_path: Path) -> None:
    archive = tmp_path / "lib.zip"
    _zip(archive, {"first_mod": "X = 1"})
    importer = zipimport.zipimporter(str(archive))
    importer.invalidate_caches()
    assert importer.find_spec("second_mod") is None
    _zip(archive, {"first_mod": "X = 1", "second_mod": "Y = 2  # a longer archive"})
    importer.invalidate_caches()
    assert importer.find_spec("second_mod") is not None


def test_install_is_idempotent(lazy: None) -> None:
    patched = zipimport.zipimporter.invalidate_caches
    spark_daemon.install()
    assert zipimport.zipimporter.invalidate_caches is patched
    assert getattr(patched, "_audit_lazy", False)
    assert "audit.spark_daemon" in sys.modules
