from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from audit.cli import build_parser, main
from tests.cli import run_in_process


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for command in ("snapshot", "audit", "nightly", "readiness", "demo", "sandbox"):
        assert command in out


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit"]) == 2  # --out is required
    out, err = capsys.readouterr()
    assert "the following arguments are required: --out" in err
    assert out == ""  # text output: nothing on stdout


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ["audit", "--output", "json"],
            "mirror-audit audit: error: the following arguments are required: --out",
        ),
        (["readiness", "--output=json"], "readiness needs --config FILE naming both clusters"),
        (["readiness", "--config", "/nonexistent/audit.yaml", "--output", "json"], "does not exist"),
    ],
)
def test_output_json_prints_the_error_as_one_object_on_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    """Whatever reads stdout (a scheduler's XCom, jq) gets an object on exit 2 too: a refused
    command line or a bad configuration, beside the one line on stderr."""
    from audit.report.summary import output_schema, schema_errors

    assert main(argv) == 2
    out, err = capsys.readouterr()
    (line,) = out.splitlines()
    obj = json.loads(line)
    assert schema_errors(obj, output_schema()) == []
    assert (obj["outcome"], obj["exit_code"]) == ("error", 2)
    assert error in obj["error"] and error in err


@pytest.mark.parametrize(
    ("command", "engine"), [("audit", "spark"), ("nightly", "spark"), ("readiness", "local")]
)
def test_each_command_has_its_default_engine_in_either_mode(command: str, engine: str) -> None:
    argv = [command, "--config", "c.yaml"] + ([] if command == "nightly" else ["--out", "r"])
    assert build_parser().parse_args(argv).engine == engine


@pytest.mark.parametrize("what", ["records scan", "segments fetch", "segments scan"])
def test_batch_and_record_commands_refuse_mode_mm2_up_front(
    what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "mm2.yaml"
    cfg.write_text("mode: mm2\nsource:\n  bootstrap_servers: s:1\ndestination:\n  bootstrap_servers: d:1\n")
    argv = {
        "records scan": ["records", "scan", "--config", str(cfg), "--run", str(tmp_path)],
        "segments fetch": [
            "segments",
            "fetch",
            "--config",
            str(cfg),
            "--role",
            "source",
            "--out",
            str(tmp_path),
        ],
        "segments scan": [
            "segments",
            "scan",
            str(tmp_path),
            "--config",
            str(cfg),
            "--out",
            str(tmp_path / "o"),
        ],
    }[what]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{what}: batch-level checks and record chunks compare equal offsets" in err
    assert "(mode is mm2)" in err


def test_sandbox_mm2_commands_need_a_running_sandbox(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sandbox", "mm2-start", "--workdir", str(tmp_path)]) == 2
    assert "sandbox is not running" in capsys.readouterr().err


def test_mm2_start_takes_mirror_makers_offset_lag_max_and_refuses_a_negative_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(["sandbox", "mm2-start"])
    assert args.offset_lag_max == 100  # MirrorMaker 2's own default
    assert build_parser().parse_args(["sandbox", "mm2-start", "--offset-lag-max", "0"]).offset_lag_max == 0
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["sandbox", "mm2-start", "--offset-lag-max", "-1"])
    assert info.value.code == 2
    assert "must be 0 or more, not -1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["segments", "scan", "x", "--out", "o", "--split-bytes", "0"], "must be 1 or more, not 0"),
        (["sandbox", "up", "--brokers", "0"], "must be 1 or more, not 0"),
        (["sandbox", "up", "--brokers", "two"], "not a whole number: 'two'"),
        (["sandbox", "up", "--source-port", "70000"], "must be 65535 or less, not 70000"),
        (["sandbox", "up", "--heap-mb", "16"], "must be 64 or more, not 16"),
    ],
)
def test_a_numeric_option_out_of_range_is_a_usage_error_naming_the_value(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_segments_scan_split_bytes_defaults_to_the_config() -> None:
    args = build_parser().parse_args(["segments", "scan", "x", "--out", "o"])
    assert args.split_bytes is None  # cmd_segments_scan then takes segments.split_bytes
    assert (
        build_parser()
        .parse_args(["segments", "scan", "x", "--out", "o", "--split-bytes", "4096"])
        .split_bytes
        == 4096
    )


def test_segments_scan_refuses_a_missing_path_before_spark_but_leaves_a_glob_to_the_listing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import audit.spark_session
    from audit.errors import UsageError

    def no_spark(*_: object) -> None:
        raise UsageError("a Spark session was asked for")

    monkeypatch.setattr(audit.spark_session, "build_spark", no_spark)
    out = str(tmp_path / "out")
    assert main(["segments", "scan", str(tmp_path / "nope"), "--out", out, "--role", "source"]) == 2
    err = capsys.readouterr().err
    assert f"segment path {tmp_path / 'nope'} does not exist" in err and "Spark session" not in err
    # a glob gets past the early check: the listing (in Spark) judges it
    assert main(["segments", "scan", str(tmp_path / "orders-*"), "--out", out, "--role", "source"]) == 2
    assert "a Spark session was asked for" in capsys.readouterr().err


def test_injected_faults_are_caught_only_when_exactly_they_fail_and_warn() -> None:
    from audit.sandbox.injected import InjectedFaults

    injected = InjectedFaults(fail=frozenset({"A", "B"}), warn=frozenset({"W"}))

    def summary(**statuses: str) -> dict[str, object]:
        return {"invariants": {k: {"status": v} for k, v in statuses.items()}}

    assert injected.problems(summary(A="fail", B="fail", W="warn", C="pass", D="skipped")) == []
    assert injected.problems(summary(A="fail", B="pass", W="warn")) == ["expected to fail but did not: B"]
    assert injected.problems(summary(A="fail", B="fail", C="fail", W="warn")) == [
        "failed without an injected fault: C"
    ]
    assert injected.problems(summary(A="fail", B="fail", W="pass", X="warn")) == [
        "expected to warn but did not: W",
        "warned without an injected fault: X",
    ]
    # Warnings outside the promise are not judged when the demo makes none.
    assert InjectedFaults(fail=frozenset({"A"})).problems(summary(A="fail", X="warn")) == []


def test_expect_faults_with_the_healthy_demo_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--healthy", "--expect-faults"]) == 2
    assert "the --healthy demo injects none" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["readiness", "--config", "c.yaml", "--timeout", "5"], "--timeout is how long --wait-drained waits"),
        (
            ["readiness", "--wait-drained", "--source", "s", "--destination", "d"],
            "--wait-drained polls the live clusters: give --config FILE, not snapshot directories",
        ),
        (["readiness", "--wait-drained"], "--wait-drained polls the live clusters: give --config FILE"),
        (["demo", "--failover", "--mode", "mm2"], "--failover follows an offset-preserving mirror's stop"),
    ],
)
def test_drain_and_failover_demo_refuse_what_cannot_work_before_any_cluster_is_read(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("action", ["mirror-start", "mirror-pause", "mirror-state", "failover"])
def test_sandbox_mirror_commands_need_a_running_sandbox(
    action: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sandbox", action, "--workdir", str(tmp_path)]) == 2
    assert "sandbox is not running" in capsys.readouterr().err


def _complete(line: str, tmp_path: Path) -> list[str]:
    """What the shell's completion hook gets for ``line`` (the cursor at its end), asked of
    the installed ``mirror-audit`` as bash's argcomplete hook asks it."""
    import os
    import shutil
    import subprocess

    answers = tmp_path / "completions"
    env = {
        **os.environ,
        "_ARGCOMPLETE": "1",
        "_ARGCOMPLETE_SHELL": "bash",
        "_ARGCOMPLETE_IFS": "\n",
        "_ARGCOMPLETE_STDOUT_FILENAME": str(answers),
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "COMP_TYPE": "9",
    }
    exe = shutil.which("mirror-audit", path=str(Path(sys.executable).parent))
    assert exe is not None
    proc = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return answers.read_text().split()


def test_shell_completion_offers_commands_options_and_choices(tmp_path: Path) -> None:
    assert {"readiness", "records", "failover", "check"} <= set(_complete("mirror-audit ", tmp_path))
    assert "--wait-drained" in _complete("mirror-audit readiness --wa", tmp_path)
    assert set(_complete("mirror-audit readiness --output ", tmp_path)) == {"text", "json"}


@pytest.mark.parametrize(
    ("job", "label"),
    [
        ("readiness", "readiness"),
        ("failover verify", "failover verify"),
        ("failback readiness", "failback readiness"),
    ],
)
def test_the_go_line_names_the_job_that_answers_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, job: str, label: str
) -> None:
    """failover verify's GO / NO-GO is its own answer (the failover went as predicted), not a
    pre-failover readiness: it printed "readiness: NO-GO" beside "verdict: WARN"."""
    from audit.cli.output import print_outcome

    summary: dict[str, object] = {
        "run": {"job": job},
        "readiness": "NO-GO",
        "verdict": "WARN",
        "invariants": {},
    }
    print_outcome(summary, tmp_path / "report" / "index.html")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{label}: NO-GO"
    assert "verdict: WARN" in lines


@pytest.mark.parametrize("spelling", ["--out", "--run"])
def test_records_scan_takes_out_like_every_command_and_still_its_old_run(
    spelling: str, tmp_path: Path
) -> None:
    from audit.cli import build_parser

    config = tmp_path / "audit.yaml"
    config.write_text("mode: cluster-mirroring\n")
    args = build_parser().parse_args(
        ["records", "scan", "--config", str(config), spelling, str(tmp_path / "r")]
    )
    assert args.run == tmp_path / "r"


def test_every_command_shows_an_example_that_parses() -> None:
    """Each command's help ends with an example command line, and the example is one its
    parser takes (an option renamed or removed fails here, not in a reader's terminal)."""
    import shlex

    from audit.cli import build_parser
    from audit.cli.examples import EXAMPLES, commands

    parser = build_parser()
    leaves = commands(parser)
    assert set(leaves) == set(EXAMPLES), set(leaves) ^ set(EXAMPLES)
    for name, sub in leaves.items():
        example = EXAMPLES[name]
        assert f"example:\n  {example}\n" in sub.format_help(), name
        argv = shlex.split(example)
        assert argv[0] == "mirror-audit" and " ".join(argv[1 : 1 + len(name.split())]) == name
        args = parser.parse_args(argv[1:])
        assert args.handler is not None, name


@pytest.mark.parametrize("fails", [False, True], ids=["ready", "not-ready"])
def test_check_output_json_is_one_object_on_success_and_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: bool
) -> None:
    """check's findings as one object (the clusters' answers stand in: the live check is
    tests/integration's); a failure still exits 2, its first problem as ``error``."""
    from audit import preflight
    from audit.preflight import Finding

    findings = [Finding("source", "ok", "reached, cluster id abc")]
    if fails:
        findings.append(Finding("destination", "fail", "Describe refused on 2 topics", "grant Describe"))
    monkeypatch.setattr(preflight, "check", lambda cfg: findings)
    config = tmp_path / "audit.yaml"
    assert run_in_process("init", "--out", str(config)).returncode == 0
    proc = run_in_process("check", "--config", str(config), "--output", "json")
    from audit.report.summary import output_schema, schema_errors

    (line,) = proc.stdout.splitlines()
    obj = json.loads(line)
    assert schema_errors(obj, output_schema()) == []
    assert proc.returncode == obj["exit_code"] == (2 if fails else 0)
    assert obj["outcome"] == ("not ready" if fails else "ready")
    assert [(f["where"], f["status"]) for f in obj["findings"]] == [(f.where, f.status) for f in findings]
    if fails:
        assert obj["error"] == "destination: Describe refused on 2 topics; grant Describe"
        assert "check found 1 problem(s)" in proc.stderr


def test_sandbox_status_output_json_when_none_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The running case is the live tests' (tests/integration/test_tiered_live.py)."""
    from audit.report.summary import output_schema, schema_errors

    assert main(["sandbox", "status", "--workdir", str(tmp_path), "--output", "json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    obj = json.loads(line)
    assert schema_errors(obj, output_schema()) == []
    assert (obj["outcome"], obj["clusters"]) == ("not running", [])


def test_the_airflow_bash_operators_command_pushes_a_whole_object_to_xcom(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/airflow.md's BashOperator runs its bash_command as written and pushes the last
    line of stdout to XCom: that line is the whole JSON object, whatever the exit code (here
    2: the example's config path does not exist on this machine)."""
    import re
    import shlex

    from audit.report.summary import output_schema, schema_errors

    doc = (Path(__file__).resolve().parents[2] / "docs" / "airflow.md").read_text()
    (command,) = re.findall(r'bash_command="(mirror-audit [^"]+)"', doc)
    argv = shlex.split(command)
    assert "--output" in argv and argv[argv.index("--output") + 1] == "json"
    code = main(argv[1:])
    last = capsys.readouterr().out.splitlines()[-1]
    obj = json.loads(last)
    assert schema_errors(obj, output_schema()) == []
    assert obj["exit_code"] == code
