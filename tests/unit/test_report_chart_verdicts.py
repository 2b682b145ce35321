"""The report's bars are coloured by the validation's own verdicts on their rows, not by
thresholds the report restates: a partition short of epoch headroom is amber because
CM-EPOCH-2's check rejects it, below the source's epoch red because CM-EPOCH-1's does, and
an operator's edited suite recolours the chart with it."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

from audit.config_file import parse_config
from audit.pipeline import compare_snapshots
from audit.profiles import profile_of
from audit.report.data import collect_report_data
from audit.validate.run import mode_suites, run_validation
from audit.validate.suites import SuiteFile
from tests.snapshots import part, write_pair

CFG = parse_config("{}", env={})


def _epochs(tmp_path: Path, suites: list[SuiteFile]) -> dict[str, str]:
    src, dst = write_pair(
        tmp_path,
        [part("ok", leader_epoch=5), part("short", leader_epoch=5), part("behind", leader_epoch=5)],
        [part("ok", leader_epoch=9), part("short", leader_epoch=6), part("behind", leader_epoch=4)],
    )
    compared = compare_snapshots(src, dst, tmp_path / "run", CFG, engine="local")
    prof = profile_of(CFG)
    results = run_validation(compared, tmp_path / "run", CFG, suites, prof.catalogue)
    data = collect_report_data(compared, prof.slices, results)
    return {r["topic"]: r["verdict"] for r in data.epochs}


def test_epoch_bars_take_the_suites_verdicts(tmp_path: Path) -> None:
    suites = mode_suites(CFG, profile_of(CFG).suite_patterns)
    assert _epochs(tmp_path, suites) == {"ok": "ok", "short": "warn", "behind": "fail"}


def test_an_edited_suite_recolours_the_chart(tmp_path: Path) -> None:
    """An operator who drops CM-EPOCH-2's check sees no amber bar: the chart follows the
    suite, not epoch_headroom."""
    suites = []
    for suite in mode_suites(CFG, profile_of(CFG).suite_patterns):
        raw = copy.deepcopy(suite.raw)
        raw["expectations"] = [e for e in raw["expectations"] if e["meta"]["invariant"] != "CM-EPOCH-2"]
        suites.append(dataclasses.replace(suite, raw=raw))
    assert _epochs(tmp_path, suites) == {"ok": "ok", "short": "ok", "behind": "fail"}
