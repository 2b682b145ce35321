"""Data Docs written by Great Expectations in a process of its own (audit/validate/data_docs.py):
the docs a run's suites and outcomes make, a suite GX refuses named as the suite's error,
and a process that dies the run's error, never a run reported complete without its docs."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from audit.errors import ConfigError, OutputError
from audit.validate import data_docs
from audit.validate.evaluate import Counts, compile_suite, outcome
from audit.validate.results import CheckOutcome
from audit.validate.suites import SuiteFile, load_suite_file, shipped_expectations_dir

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def process() -> Iterator[data_docs.DocsProcess]:
    p = data_docs.DocsProcess()
    yield p
    p.stop()


def _records(suite: SuiteFile, rejected: int = 1) -> list[tuple[SuiteFile, list[CheckOutcome]]]:
    compiled = compile_suite(suite.table, suite.raw["expectations"], {"max_lag_records": 1})
    assert compiled is not None
    outcomes = [outcome(c, Counts(10, rejected, 2)) for c in compiled]
    return [(suite, outcomes)]


def _topics_suite() -> SuiteFile:
    return load_suite_file(shipped_expectations_dir() / "cm_topics.json")


def test_the_process_writes_the_data_docs_of_the_outcomes_it_is_given(
    process: data_docs.DocsProcess, tmp_path: Path
) -> None:
    suite = _topics_suite()
    process.write(tmp_path / "docs", _records(suite))
    assert (tmp_path / "docs" / "index.html").is_file()
    (page,) = (tmp_path / "docs" / "validations" / suite.name).rglob("*.html")
    text = page.read_text(encoding="utf-8")
    description = suite.raw["expectations"][0]["description"]
    assert description.split("] ", 1)[1][:40] in text
    assert "1 unexpected values found" in text, "the counts written are the outcomes'"
    # A second run's docs, by the same process (one import of GX for a process's runs).
    process.write(tmp_path / "again", _records(suite, rejected=0))
    assert (tmp_path / "again" / "index.html").is_file()


def test_a_suite_gx_refuses_is_the_suites_error_and_the_process_goes_on(
    process: data_docs.DocsProcess, tmp_path: Path
) -> None:
    good = _topics_suite()
    raw = {**good.raw, "expectations": [{**good.raw["expectations"][0], "type": "expect_no_such_thing"}]}
    bad = SuiteFile(good.name, good.table, Path("/suites/broken.json"), raw)
    with pytest.raises(ConfigError, match=r"expectation suite /suites/broken\.json"):
        process.write(tmp_path / "docs", [(bad, _records(good)[0][1][:1])])
    process.write(tmp_path / "after", _records(good))
    assert (tmp_path / "after" / "index.html").is_file()


def test_a_process_that_dies_is_the_runs_error(tmp_path: Path) -> None:
    p = data_docs.DocsProcess()
    try:
        os.kill(p._proc.pid, signal.SIGKILL)  # type: ignore[arg-type]
        p._proc.join(timeout=30)
        with pytest.raises(
            OutputError, match="Data Docs could not be written: the process writing them failed"
        ):
            p.write(tmp_path / "docs", _records(_topics_suite()))
        assert not p.alive()
    finally:
        p.stop()


def test_a_write_that_fails_on_the_disk_is_the_os_error_gx_would_have_raised_here(
    process: data_docs.DocsProcess, tmp_path: Path
) -> None:
    """A full or read-only disk under the docs is the run directory's OSError, as when GX
    wrote in this process (the run's handling then names the directory and the cause);
    not a different message because another process met it."""
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(OSError) as err:
        process.write(tmp_path / "a-file" / "docs", _records(_topics_suite()))
    assert err.value.errno is not None and "a-file" in str(err.value.filename), err.value
    assert not isinstance(err.value, OutputError)
