"""The Spark workers' allocator: what each setting preloads, and the daemon's one re-exec."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from audit import worker_malloc


def _finder(present: dict[str, str]) -> Any:
    return present.get


def test_auto_prefers_mimalloc_then_jemalloc_then_the_system() -> None:
    both = {"mimalloc": "libmimalloc.so.2", "jemalloc": "libjemalloc.so.2"}
    assert worker_malloc.resolve("auto", _finder(both)) == "libmimalloc.so.2"
    assert worker_malloc.resolve("auto", _finder({"jemalloc": "libjemalloc.so.2"})) == "libjemalloc.so.2"
    assert worker_malloc.resolve("auto", _finder({})) is None


def test_system_never_preloads() -> None:
    assert worker_malloc.resolve("system", _finder({"mimalloc": "libmimalloc.so.2"})) is None


def test_a_path_is_preloaded_only_where_it_exists(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    lib = tmp_path / "libmine.so"
    lib.write_bytes(b"")
    assert worker_malloc.resolve(str(lib), _finder({})) == str(lib)
    missing = str(tmp_path / "absent.so")
    assert worker_malloc.resolve(missing, _finder({"mimalloc": "libmimalloc.so.2"})) is None
    assert "absent.so is not here" in caplog.text


def test_only_auto_system_or_an_absolute_path_pass_the_check() -> None:
    assert worker_malloc.check("auto") is None
    assert worker_malloc.check("system") is None
    assert worker_malloc.check("/usr/lib/libjemalloc.so.2") is None
    assert worker_malloc.check("libjemalloc.so.2") is not None
    assert worker_malloc.check("") is not None


def test_the_library_goes_first_in_ld_preload_and_what_was_there_stays() -> None:
    env = worker_malloc.preloaded_env({"LD_PRELOAD": "/opt/libtrace.so", "PATH": "/bin"}, "libmimalloc.so.2")
    assert env["LD_PRELOAD"] == "libmimalloc.so.2 /opt/libtrace.so"
    assert env["PATH"] == "/bin"
    assert env[worker_malloc.DONE] == "libmimalloc.so.2"
    assert worker_malloc.preloaded_env({}, "x.so")["LD_PRELOAD"] == "x.so"


class _Exec(Exception):
    """Raised by the stand-in for os.execve: the daemon would not return from it."""


@pytest.fixture
def execs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str], dict[str, str]]]:
    calls: list[tuple[str, list[str], dict[str, str]]] = []

    def fake_execve(path: str, argv: list[str], env: dict[str, str]) -> None:
        calls.append((path, argv, env))
        raise _Exec

    monkeypatch.setattr(os, "execve", fake_execve)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(sys, "orig_argv", ["python3", "-m", "audit.spark_daemon"])
    monkeypatch.setattr(worker_malloc, "resolve", lambda s: None if s == "system" else f"lib-{s}.so")
    monkeypatch.delenv(worker_malloc.DONE, raising=False)
    monkeypatch.delenv(worker_malloc.ENV, raising=False)
    return calls


def test_the_daemon_restarts_itself_once_with_the_allocator(
    execs: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(_Exec):
        worker_malloc.reexec_with_allocator()
    path, argv, env = execs[0]
    assert path == sys.executable
    assert argv == [sys.executable, "-m", "audit.spark_daemon"]
    assert env["LD_PRELOAD"].split()[0] == "lib-auto.so"
    # The restarted daemon has DONE set: it goes on without a second exec.
    monkeypatch.setenv(worker_malloc.DONE, "lib-auto.so")
    worker_malloc.reexec_with_allocator()
    assert len(execs) == 1


def test_the_daemon_keeps_the_system_allocator_when_told(
    execs: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(worker_malloc.ENV, "system")
    worker_malloc.reexec_with_allocator()
    assert execs == []


def test_mimalloc_keeps_what_a_worker_freed_unless_the_environment_says_otherwise() -> None:
    env = worker_malloc.preloaded_env({"MIMALLOC_PURGE_DELAY": "10"}, "/usr/lib/libmimalloc.so.2")
    assert env["MIMALLOC_ALLOW_DECOMMIT"] == "0"
    assert env["MIMALLOC_RESET_DELAY"] == worker_malloc.MIMALLOC_OPTIONS["MIMALLOC_RESET_DELAY"]
    assert env["MIMALLOC_PURGE_DELAY"] == "10"  # the operator's own setting stays
    jemalloc = worker_malloc.preloaded_env({}, "/usr/lib/libjemalloc.so.2")
    assert not any(name.startswith("MIMALLOC_") for name in jemalloc)
