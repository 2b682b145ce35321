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


# --------------------------------------------------------------------------- broker versions


def test_the_default_is_the_newest_tested_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MIRROR_AUDIT_KAFKA_VERSION", raising=False)
    assert jars.kafka_version() == jars.DEFAULT_KAFKA_VERSION == "4.4.0"
    assert jars.TESTED_KAFKA_VERSIONS[0] == jars.DEFAULT_KAFKA_VERSION


def test_the_flag_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIRROR_AUDIT_KAFKA_VERSION", "4.1.2")
    assert jars.kafka_version() == "4.1.2"
    assert jars.kafka_version("3.9.1") == "3.9.1"


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("4.4", r"Kafka version '4.4' \(--kafka-version\) is not a release number like 4.4.0"),
        ("latest", r"'latest' \(--kafka-version\) is not a release number"),
        (
            "3.8.1",
            r"Kafka 3.8.1 \(--kafka-version\) is older than the sandbox supports: it runs 3.9 or later",
        ),
        ("2.8.2", r"older than the sandbox supports"),
    ],
)
def test_versions_the_sandbox_cannot_run_are_refused_by_name(version: str, message: str) -> None:
    with pytest.raises(SandboxError, match=message):
        jars.kafka_version(version)


def test_a_bad_environment_value_is_named_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MIRROR_AUDIT_KAFKA_VERSION", "3.7.2")
    with pytest.raises(SandboxError, match=r"3.7.2 \(\$MIRROR_AUDIT_KAFKA_VERSION\) is older"):
        jars.kafka_version()


def test_mirror_maker_falls_back_through_older_releases_newest_first() -> None:
    candidates = jars.releases_at_or_below("4.4.0")
    assert candidates[:4] == ["4.4.0", "4.3.1", "4.3.0", "4.2.0"]
    assert candidates[-1] == "3.9.0"
    assert jars.releases_at_or_below("3.9.1") == ["3.9.1", "3.9.0"]
    # A release newer than the list is tried itself, then everything the list knows.
    assert jars.releases_at_or_below("4.5.0")[:2] == ["4.5.0", "4.4.0"]


def test_mirror_maker_runs_from_the_newest_release_that_resolves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """connect-mirror 4.4.0 is not on Maven Central (seen on this machine's mirror): the
    sandbox must then run 4.3.1's, say so, and never fail the brokers for it."""
    tried: list[str] = []

    def fake_copy(what: str, pom: str, props: dict[str, str], expect: str, out: Path, **_: object) -> None:
        tried.append(props["kafka.version"])
        assert pom == "mm2-pom.xml"
        if props["kafka.version"] == "4.4.0":
            raise SandboxError("fetching MirrorMaker 2 jars with Maven failed: Could not find artifact")
        (out / f"connect-mirror-{props['kafka.version']}.jar").write_bytes(b"")

    monkeypatch.setattr(jars, "_maven_copy", fake_copy)
    version, path = jars.ensure_mm2_jars("4.4.0", root=tmp_path)
    assert (version, tried) == ("4.3.1", ["4.4.0", "4.3.1"])
    assert path == tmp_path / "mm2-4.3.1" / "libs"
    assert "connect-mirror 4.4.0 is not on Maven Central; MirrorMaker 2 runs from connect-mirror 4.3.1" in (
        caplog.text
    )


def test_broker_jars_never_need_mirror_maker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    poms: list[str] = []

    def fake_copy(what: str, pom: str, props: dict[str, str], expect: str, out: Path, **_: object) -> None:
        poms.append(pom)
        (out / "kafka_2.13-4.4.0.jar").write_bytes(b"")

    monkeypatch.setattr(jars, "_maven_copy", fake_copy)
    jars.ensure_kafka_jars("4.4.0", root=tmp_path)
    assert poms == ["pom.xml"]
    pom_text = jars.resource_path("pom.xml").read_text()
    assert "connect-mirror" not in pom_text
    assert "connect-mirror" in jars.resource_path("mm2-pom.xml").read_text()


def test_kafka_3_broker_copies_leave_log4j2_out_and_log_through_reload4j(tmp_path: Path) -> None:
    assert jars._logging_exclusions("3.9.1") == {
        "excludeArtifactIds": "log4j-slf4j-impl,log4j-api,log4j-core"
    }
    assert jars._logging_exclusions("4.4.0") == {}
    from audit.sandbox.processes import java_cmd

    def options() -> list[str]:
        return java_cmd("java", str(tmp_path), 256, "M", [])

    # MirrorMaker 2 3.9's tree: reload4j without its slf4j binding: log4j2's stays in charge
    # (with reload4j's config it logged nothing at all).
    (tmp_path / "reload4j-1.2.25.jar").write_bytes(b"")
    assert any(a.startswith("-Dlog4j2.configurationFile=") for a in options())
    # A 3.9 broker's tree: reload4j's binding.
    (tmp_path / "slf4j-reload4j-1.7.36.jar").write_bytes(b"")
    assert any(a.startswith("-Dlog4j.configuration=file:") for a in options())


def test_sandbox_jvms_start_quick_unless_the_server_compiler_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from audit.sandbox.processes import SANDBOX_JVM, java_cmd

    monkeypatch.delenv(SANDBOX_JVM, raising=False)
    quick = java_cmd("java", str(tmp_path), 256, "M", [])
    assert {"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"} <= set(quick)
    assert "-XX:+UseG1GC" not in quick
    monkeypatch.setenv(SANDBOX_JVM, "server")
    server = java_cmd("java", str(tmp_path), 256, "M", [])
    assert "-XX:+UseG1GC" in server and not any(a.startswith("-XX:TieredStopAtLevel") for a in server)
    monkeypatch.setenv(SANDBOX_JVM, "fast")
    with pytest.raises(SandboxError, match="MIRROR_AUDIT_SANDBOX_JVM is 'fast': use 'quick'"):
        java_cmd("java", str(tmp_path), 256, "M", [])
