"""The Python API (audit/api.py): typed results equal to what the run wrote, typed errors
for what the CLI maps to exit 2, secrets masked in its logs, and ``--output json``.

Offline readiness on the in-process engine: no JVM, no cluster."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from audit import api
from audit.drain import DrainStatus, Lagging
from tests.cli import run_in_process
from tests.snapshots import after_stop_without_last_mirrored_offset, before_stop_pair, part, write_pair


def _healthy(root: Path) -> tuple[Path, Path]:
    return write_pair(root, [part("orders")], [part("orders", leader_epoch=8)])


def test_readiness_returns_what_the_run_wrote_typed(tmp_path: Path) -> None:
    src, dst = _healthy(tmp_path / "snaps")
    result = api.readiness(None, source=src, destination=dst, out=tmp_path / "run")
    on_disk = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert result.summary == on_disk
    assert (result.job, result.readiness, result.verdict) == ("readiness", "GO", on_disk["verdict"])
    assert result.exit_code == 0 and result.outcome == "GO"
    assert result.coverage == api.Coverage(True, 0, ())
    assert result.figures["expected_loss_records"] == 0
    assert result.invariants["CM-EPOCH-1"].status == "pass"
    assert result.invariants["CM-EPOCH-1"].evaluated == on_disk["invariants"]["CM-EPOCH-1"]["evaluated"] == 1
    assert result.summary_path == tmp_path / "run" / "summary.json" and result.report.is_file()


def test_a_figure_that_could_not_be_computed_is_none_with_its_reason_never_0(tmp_path: Path) -> None:
    """failover verify after a stop whose mirror state has no last mirrored offset: the
    records lost are unknown (None, with why), the answer NO-GO, CM-FAILOVER-2 not a pass."""
    src, dst = before_stop_pair(tmp_path / "before")
    before = api.readiness(None, source=src, destination=dst, out=tmp_path / "readiness")
    after = after_stop_without_last_mirrored_offset(tmp_path / "after")
    result = api.failover_verify(None, before.run_dir, destination=after, out=tmp_path / "verify")
    assert (result.job, result.readiness, result.exit_code) == ("failover verify", "NO-GO", 1)
    assert result.figures["realized_loss_records"] is None
    assert "LastMirrorOffset" in result.unknown_figures["realized_loss_records"]["reason"]
    assert result.figures["predicted_loss_records"] == 10
    assert result.invariants["CM-FAILOVER-2"].status != "pass"
    assert result.invariants["CM-FAILOVER-2"].unchecked == 1
    assert not result.coverage.complete


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda p: api.load_config(p / "absent.yaml"), api.ConfigError, "does not exist"),
        (lambda p: api.readiness(None, source=p), api.UsageError, "give both --source DIR and --destination"),
        (lambda p: api.readiness(None), api.UsageError, "readiness needs --config FILE"),
        (
            lambda p: api.readiness_when_drained(None),
            api.UsageError,
            "--wait-drained polls the live clusters",
        ),
        (
            lambda p: api.readiness(None, source=p / "no-src", destination=p / "no-dst", out=p / "run"),
            api.InputError,
            "no-src",
        ),
    ],
)
def test_what_the_cli_maps_to_exit_2_is_a_typed_error(
    call: object, error: type[Exception], fragment: str, tmp_path: Path
) -> None:
    with pytest.raises(error, match=None) as caught:
        call(tmp_path)  # type: ignore[operator]
    assert isinstance(caught.value, api.AuditError)
    assert fragment in str(caught.value)


def test_failover_jobs_refuse_a_translating_mode(tmp_path: Path) -> None:
    config = tmp_path / "mm2.yaml"
    config.write_text("mode: mm2\n")
    with pytest.raises(api.UsageError, match="they need mode cluster-mirroring"):
        api.failback_readiness(config, source=tmp_path, destination=tmp_path)


def test_load_config_masks_its_secrets_in_the_callers_own_log_handler(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A caller's own logging (here pytest's handler, not the CLI's) never sees a password
    of a configuration the API loaded."""
    config = tmp_path / "audit.yaml"
    config.write_text(
        "source:\n  bootstrap_servers: a:9092\n  properties:\n    sasl.password: pw-for-the-api-test\n"
        "destination:\n  bootstrap_servers: b:9092\n"
    )
    api.load_config(config)
    with caplog.at_level(logging.INFO):
        logging.getLogger("caller").info("connecting with pw-for-the-api-test")
    assert "pw-for-the-api-test" not in caplog.text
    assert "connecting with ***" in caplog.text


def test_output_json_is_one_object_with_the_outcome_and_summary(tmp_path: Path) -> None:
    src, dst = _healthy(tmp_path / "snaps")
    argv = ["readiness", "--source", str(src), "--destination", str(dst), "--out", str(tmp_path / "run")]
    proc = run_in_process(*argv, "--engine", "local", "--output", "json")
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()  # one line: what a BashOperator pushes to XCom is all of it
    out = json.loads(line)
    from audit.report.summary import output_schema, schema_errors

    assert schema_errors(out, output_schema()) == []
    assert (out["outcome"], out["exit_code"], out["readiness"]) == ("GO", 0, "GO")
    assert out["summary"] == json.loads((tmp_path / "run" / "summary.json").read_text())
    assert out["report"] == str(tmp_path / "run" / "report" / "index.html")


def _lagging_status() -> DrainStatus:
    return DrainStatus(
        polls=3,
        elapsed_seconds=6.2,
        partitions=2,
        drained_partitions=1,
        lag_records=40,
        open_transactions=1,
        source_quiet=False,
        lagging=(Lagging("orders", 1, 40, True),),
    )


def test_not_drained_is_told_apart_from_a_no_go_and_a_warn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """readiness --wait-drained on timeout: exit 1 like a NO-GO, but ``outcome`` says
    "not drained", and the JSON carries what still lags."""
    from audit.cli.output import print_result

    result = api.NotDrained(_lagging_status(), tmp_path)
    assert print_result(result, "json") == 1
    from audit.report.summary import output_schema, schema_errors

    (line,) = capsys.readouterr().out.splitlines()
    out = json.loads(line)
    assert schema_errors(out, output_schema()) == []
    assert out["outcome"] == "not drained" and out["exit_code"] == 1
    assert out["drain"]["lagging"] == [
        {"topic": "orders", "partition": 1, "lag_records": 40, "open_transaction": True}
    ]
    assert print_result(result, "text") == 1
    text = capsys.readouterr().out
    assert text.startswith("not drained after 6s: 40 records left on 1 of 2 partitions")
    assert "orders-1: 40 records (transaction open on the source)" in text


# --------------------------------------------------------------------------- issue 53


def test_paths_may_be_strings_and_a_typed_error_stays_typed(tmp_path: Path) -> None:
    """``out='runs/r1'`` turned the run's InputError into an AttributeError."""
    src, dst = _healthy(tmp_path / "snaps")
    result = api.readiness(None, source=str(src), destination=str(dst), out=str(tmp_path / "run"))
    assert result.outcome == "GO" and result.run_dir == tmp_path / "run"
    with pytest.raises(api.InputError, match="no-src"):
        api.readiness(None, source=str(tmp_path / "no-src"), destination=str(dst), out=str(tmp_path / "run2"))
    with pytest.raises(api.InputError, match="out must be a path"):
        api.readiness(None, source=src, destination=dst, out=42)  # type: ignore[arg-type]


def test_an_unknown_engine_is_refused_naming_the_allowed_ones_before_any_work(tmp_path: Path) -> None:
    """``engine='duck'`` silently ran Spark."""
    src, dst = _healthy(tmp_path / "snaps")
    with pytest.raises(api.InputError, match=r"engine 'duck' is not one of 'spark', 'local'"):
        api.readiness(None, source=src, destination=dst, out=tmp_path / "run", engine="duck")  # type: ignore[arg-type]
    with pytest.raises(api.InputError, match="engine"):
        api.audit(src, dst, out=tmp_path / "run", engine="Spark")  # type: ignore[arg-type]
    assert not (tmp_path / "run").exists()


def _failing(exc: Exception) -> object:
    def run(*args: object, **kwargs: object) -> object:
        raise exc

    return run


def test_an_unexpected_exception_is_an_audit_error_keeping_its_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client's ``BadStatusLine`` escaped the API as itself."""
    import http.client

    import audit.pipeline

    original = http.client.BadStatusLine("HTTP/1.1 9999 nonsense")
    monkeypatch.setattr(audit.pipeline, "audit_offline", _failing(original))
    src, dst = _healthy(tmp_path / "snaps")
    with pytest.raises(api.UnexpectedError) as caught:
        api.readiness(None, source=src, destination=dst, out=tmp_path / "run")
    assert isinstance(caught.value, api.AuditError)
    assert "BadStatusLine" in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.__cause__ is original


@pytest.mark.parametrize(
    "text",
    [
        # Py4JJavaError's text: py4j's line, then the Java exception's, then its trace.
        "An error occurred while calling o42.sql.\n: org.apache.spark.SparkException: cannot reach "
        "spark://auditor:PW-MARK-53@master:7077\n\tat org.apache.spark.X.y(X.scala:1)\n",
        "login failed for sasl.password pw-registered-53",
    ],
)
def test_an_unexpected_exception_holding_a_secret_is_redacted_and_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    import audit.pipeline

    config = tmp_path / "audit.yaml"
    config.write_text(
        "source:\n  bootstrap_servers: a:9092\n  properties:\n    sasl.password: pw-registered-53\n"
        "destination:\n  bootstrap_servers: b:9092\n"
    )
    monkeypatch.setattr(audit.pipeline, "audit_offline", _failing(RuntimeError(text)))
    src, dst = _healthy(tmp_path / "snaps")
    with pytest.raises(api.UnexpectedError) as caught:
        api.readiness(config, source=src, destination=dst, out=tmp_path / "run")
    message = str(caught.value)
    assert "PW-MARK-53" not in message and "pw-registered-53" not in message
    assert "RuntimeError" in message and "\tat" not in message
    # The original holds the secret: kept neither as the cause nor as the context.
    assert caught.value.__cause__ is None and caught.value.__context__ is None


def test_an_os_error_naming_a_path_is_the_cli_s_one_line_as_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    import audit.pipeline

    denied = PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "snaps" / "x.parquet"))
    monkeypatch.setattr(audit.pipeline, "audit_offline", _failing(denied))
    src, dst = _healthy(tmp_path / "snaps")
    with pytest.raises(api.InputError, match=r"x\.parquet: Permission denied"):
        api.readiness(None, source=src, destination=dst, out=tmp_path / "run")


def test_the_cli_still_reports_an_unexpected_exception_as_a_bug(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import audit.pipeline
    from audit.cli import main

    monkeypatch.setattr(audit.pipeline, "audit_offline", _failing(ZeroDivisionError("division by zero")))
    src, dst = _healthy(tmp_path / "snaps")
    argv = ["readiness", "--source", str(src), "--destination", str(dst), "--out", str(tmp_path / "run")]
    assert main([*argv, "--engine", "local"]) == 2
    assert "internal error (a bug)" in capsys.readouterr().err
