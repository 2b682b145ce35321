"""Paths as users type them: relative, ``~``, URIs and globs, on the command line and in a
configuration file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from audit.cli import build_parser, main
from audit.config_file import load_config
from audit.errors import OutputError, UsageError
from audit.paths import config_path, hadoop_path, local_path, writable_directory


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def test_a_local_path_is_absolute_from_the_current_directory_with_tilde_expanded(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert local_path("reports") == tmp_path / "reports"
    assert local_path("./a/../reports/x") == tmp_path / "reports" / "x"
    assert local_path("~/runs") == home / "runs"
    assert local_path("rel", base=Path("/etc/audit")) == Path("/etc/audit/rel")
    assert local_path("/abs/x", base=Path("/etc/audit")) == Path("/abs/x")
    with pytest.raises(UsageError, match="~no-such-user-here/x: cannot expand"):
        local_path("~no-such-user-here/x")


@pytest.mark.parametrize(
    "uri",
    [
        "s3a://bucket/kafka/orders-0",
        "hdfs://nn:8020/kafka/*/00000000000000000000.log",
        "file:/var/lib/kafka",
        "file:///var/lib/kafka",
        "gs://b/k",
    ],
)
def test_uris_reach_hadoop_untouched(uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert hadoop_path(uri) == uri
    assert config_path(uri, Path("/etc/audit")) == uri


def test_globs_reach_hadoop_untouched_but_for_a_leading_tilde(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert hadoop_path("logs/*-0") == "logs/*-0"  # Hadoop's default filesystem decides
    assert hadoop_path("/data/orders-[0-2]") == "/data/orders-[0-2]"
    assert hadoop_path("~/logs/*") == f"{home}/logs/*"


def test_plain_local_paths_are_made_absolute_for_hadoop(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert hadoop_path("logs/orders-0") == f"{tmp_path}/logs/orders-0"
    assert hadoop_path("~/backup") == f"{home}/backup"
    assert hadoop_path("/var/lib/kafka") == "/var/lib/kafka"


def test_paths_in_a_config_file_are_relative_to_its_directory(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf_dir = tmp_path / "etc" / "audit"
    conf_dir.mkdir(parents=True)
    (conf_dir / "audit.yaml").write_text(
        "source:\n"
        "  bootstrap_servers: s:9092\n"
        "  properties:\n"
        "    security.protocol: SSL\n"
        "    ssl.ca.location: certs/ca.pem\n"
        "    ssl.key.location: ~/keys/client.key\n"
        "destination:\n"
        "  bootstrap_servers: d:9092\n"
        "  properties:\n"
        "    ssl.ca.location: probe\n"
        "segments:\n"
        "  source:\n"
        "    read: files\n"
        "    paths: [backup/src, 'backup/*/orders-0', 's3a://bucket/kafka', /abs/logs]\n"
        "output:\n"
        "  root: ../../runs\n"
        "validation:\n"
        "  expectations_dir: my-suites\n"
    )
    elsewhere = tmp_path / "cron"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # where the job starts does not matter
    cfg = load_config("../etc/audit/audit.yaml")
    assert cfg.output.root == str(tmp_path / "runs")
    assert cfg.validation.expectations_dir == str(conf_dir / "my-suites")
    assert cfg.segments.source.paths == (
        str(conf_dir / "backup" / "src"),
        str(conf_dir / "backup" / "*" / "orders-0"),
        "s3a://bucket/kafka",
        "/abs/logs",
    )
    assert cfg.source is not None and cfg.destination is not None
    assert cfg.source.properties["ssl.ca.location"] == str(conf_dir / "certs" / "ca.pem")
    assert cfg.source.properties["ssl.key.location"] == str(home / "keys" / "client.key")
    assert cfg.source.properties["security.protocol"] == "SSL"  # not a path
    assert cfg.destination.properties["ssl.ca.location"] == "probe"  # librdkafka's word, not a file


def test_without_a_config_file_the_output_root_is_the_relative_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from audit.config import AuditConfig
    from audit.run_dirs import new_run_dir

    monkeypatch.chdir(tmp_path)
    run = new_run_dir(AuditConfig())
    assert run.parent == tmp_path / "reports" and run.is_absolute()
    assert run.is_dir()  # reserved by an exclusive mkdir
    assert new_run_dir(AuditConfig()) != run  # a second run in the same second gets its own


def test_command_line_paths_are_absolute_and_tilde_expanded(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(
        [
            "audit",
            "--source",
            "run/source",
            "--destination",
            "~/snap/dst",
            "--out",
            "out",
            "--config",
            "c.yaml",
        ]
    )
    assert args.source == tmp_path / "run" / "source"
    assert args.destination == home / "snap" / "dst"
    assert args.out == tmp_path / "out"
    assert args.config == tmp_path / "c.yaml"
    assert build_parser().parse_args(["sandbox", "up", "--workdir", "~/sb"]).workdir == home / "sb"
    assert build_parser().parse_args(["records", "scan", "--config", "c", "--run", "r"]).run == tmp_path / "r"
    # "--out=~/x" is not expanded by the shell: the tool does it
    assert build_parser().parse_args(["nightly", "--config", "c", "--out=~/x"]).out == home / "x"


def test_a_tilde_of_an_unknown_user_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["audit", "--out", "~no-such-user-here/run"])
    assert info.value.code == 2
    assert "cannot expand '~'" in capsys.readouterr().err


def test_a_directory_that_cannot_be_made_is_an_output_error_naming_it(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(OutputError, match=f"run directory {afile} is not a directory"):
        writable_directory(afile, "run directory")
    with pytest.raises(OutputError, match=f"output root {afile}/sub cannot be created"):
        writable_directory(afile / "sub", "output root")
    made = writable_directory(tmp_path / "a" / "b", "run directory")
    assert made.is_dir()


def _argv_with_broken_path(kind: str, tmp_path: Path) -> tuple[list[str], str]:
    from tests.snapshots import part, write_pair

    src, dst = write_pair(tmp_path / "snaps", [part("orders")], [part("orders", leader_epoch=8)])
    afile = tmp_path / "afile"
    afile.write_text("not a directory")
    if kind == "out is a file":
        return ["audit", "--source", str(src), "--destination", str(dst), "--out", str(afile)], str(afile)
    if kind == "out under a file":
        out = afile / "run"
        return ["audit", "--source", str(src), "--destination", str(dst), "--out", str(out)], str(out)
    if kind == "output.root under a file":
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"output:\n  root: {afile}/runs\n")
        argv = ["readiness", "--config", str(cfg), "--source", str(src), "--destination", str(dst)]
        return argv, f"{afile}/runs"
    if kind == "config is a directory":
        argv = [
            "audit",
            "--source",
            str(src),
            "--destination",
            str(dst),
            "--out",
            "r",
            "--config",
            str(tmp_path),
        ]
        return argv, str(tmp_path)
    if kind == "snapshot is a file":
        return ["audit", "--source", str(afile), "--destination", str(dst), "--out", "r"], str(afile)
    if kind == "expectations_dir missing":
        cfg = tmp_path / "c.yaml"
        cfg.write_text("validation:\n  expectations_dir: no-suites-here\n")
        argv = [
            "readiness",
            "--config",
            str(cfg),
            "--source",
            str(src),
            "--destination",
            str(dst),
            "--out",
            "r",
        ]
        return argv, str(tmp_path / "no-suites-here")
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind",
    [
        "out is a file",
        "out under a file",
        "output.root under a file",
        "config is a directory",
        "snapshot is a file",
        "expectations_dir missing",
    ],
)
def test_a_path_that_cannot_work_exits_2_naming_it(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv, named = _argv_with_broken_path(kind, tmp_path)
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert named in err
    assert "internal error" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


def test_the_shipped_suites_are_found_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from audit.validate.suites import expectations_dir, load_suites

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MIRROR_AUDIT_EXPECTATIONS", raising=False)
    directory, origin = expectations_dir()
    assert origin == "the suites shipped with the package"
    names = {s.name for s in load_suites(directory, ("cm_*.json",))}
    assert {"cm_partitions", "cm_group_offsets"} <= names
    monkeypatch.setenv("MIRROR_AUDIT_EXPECTATIONS", "mine")
    assert expectations_dir() == (tmp_path / "mine", "$MIRROR_AUDIT_EXPECTATIONS")
    assert expectations_dir(str(tmp_path / "cfg")) == (tmp_path / "cfg", "validation.expectations_dir")
    assert os.path.isabs(directory)


def test_readiness_without_out_writes_a_new_run_under_the_configs_output_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.snapshots import part, write_pair

    write_pair(tmp_path / "snaps", [part("orders")], [part("orders", leader_epoch=8)])
    conf = tmp_path / "etc"
    conf.mkdir()
    (conf / "audit.yaml").write_text("output:\n  root: runs\n")
    monkeypatch.chdir(tmp_path / "snaps")
    code = main(
        ["readiness", "--config", "../etc/audit.yaml", "--source", "source", "--destination", "destination"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    (run,) = (conf / "runs").iterdir()
    assert (run / "summary.json").is_file()
    assert f"report: {run / 'report' / 'index.html'}" in out


def test_checking_a_run_directory_creates_nothing(tmp_path: Path) -> None:
    from audit.paths import check_writable

    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(OutputError, match=f"run directory {afile} is not a directory"):
        check_writable(afile, "run directory")
    with pytest.raises(OutputError, match=f"{afile} is not a directory"):
        check_writable(afile / "a" / "b", "run directory")
    later = tmp_path / "x" / "y"
    assert check_writable(later, "run directory") == later
    assert not (tmp_path / "x").exists()
