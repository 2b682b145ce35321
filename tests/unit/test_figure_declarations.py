"""Each figure is declared once (audit/validate/figures.py): its name is a literal nowhere
else in audit/, summary.json's schema holds it where the summary puts it, deploy/'s
dashboard and alert rules ask only for declared metrics, and the terminal and the report
show every figure a summary holds from its declaration (an unknown one with its reason)."""

from __future__ import annotations

import ast
import io
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from audit.cli.output import print_outcome
from audit.report.summary import summary_schema
from audit.validate import figures as declared
from audit.validate.readiness import (
    CLUSTER_MIRRORING_FIGURES,
    FAILBACK_FIGURES,
    FAILOVER_FIGURES,
    MM2_FIGURES,
)

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
AUDIT = REPO / "audit"
# A comparison table may hold a column of a figure's name (failover_partitions'
# realized_loss_records, summed into the figure): its declaration is the table's.
COLUMN_DECLARATIONS = (AUDIT / "schemas.py", AUDIT / "compare")


def _string_constants(path: Path) -> set[str]:
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def test_a_figure_name_is_written_only_in_its_declaration() -> None:
    names = {f.name for f in declared.ALL}
    found = []
    for path in sorted(AUDIT.rglob("*.py")):
        if path == AUDIT / "validate" / "figures.py" or any(
            path == c or c in path.parents for c in COLUMN_DECLARATIONS
        ):
            continue
        found += [f"{path.relative_to(REPO)}: {n}" for n in sorted(_string_constants(path) & names)]
    for template in sorted((AUDIT / "report" / "resources").glob("*.j2")):
        text = template.read_text(encoding="utf-8")
        # Read from the summary by name (a row of a comparison table may hold a column of
        # the figure's name: the report's failover table shows them).
        found += [
            f"{template.relative_to(REPO)}: {n}"
            for n in sorted(names)
            if re.search(rf"(summary|run|failover)[.|][^ }}]*\b{n}\b", text)
        ]
    assert found == []


def test_the_test_of_literals_can_fail(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('x = {"expected_loss_records": 1}\n', encoding="utf-8")
    assert declared.EXPECTED_LOSS.name in _string_constants(module)


def test_every_mode_sums_only_declared_figures_each_once() -> None:
    for queries in (CLUSTER_MIRRORING_FIGURES, MM2_FIGURES, FAILOVER_FIGURES, FAILBACK_FIGURES):
        names = [q.name for q in queries]
        assert len(names) == len(set(names))
        assert all(q.figure in declared.ALL for q in queries)
    assert {q.figure for q in FAILOVER_FIGURES} == set(declared.FAILOVER)
    summed_at_top = {q.figure for q in (*CLUSTER_MIRRORING_FIGURES, *MM2_FIGURES, *FAILBACK_FIGURES)}
    assert summed_at_top == set(declared.TOP_LEVEL)


def test_the_summary_schema_holds_every_figure_where_the_summary_puts_it() -> None:
    props = summary_schema()["properties"]
    for f in declared.TOP_LEVEL:
        assert f.name in props, f.name
    for f in declared.FAILOVER:
        assert f.name in props[declared.FAILOVER_KEY]["properties"], f.name
    for f in (*declared.RUN_FIGURES, *(f for f in declared.TOP_LEVEL if f.metric)):
        assert f.name in props["run"]["properties"], f.name


def test_deploy_asks_only_for_declared_figure_metrics() -> None:
    """The dashboard and the rules query metrics by name: a figure's metric they name is a
    declared one, and every declared metric is one the metrics module writes."""
    from audit.report import metrics

    written = set(re.findall(r'"(mirror_audit_\w+)"', (AUDIT / "report" / "metrics.py").read_text()))
    written |= {f.metric for f in metrics.EXPORTED_FIGURES if f.metric}
    asked = set()
    for path in (REPO / "deploy").rglob("*"):
        if path.suffix in (".json", ".yaml", ".yml"):
            asked |= set(re.findall(r"\bmirror_audit_[a-z_]+", path.read_text(encoding="utf-8")))
    assert asked, "deploy/ names no metric: the test reads the wrong files"
    assert asked <= written, sorted(asked - written)
    figure_metrics = {f.metric for f in declared.ALL if f.metric}
    assert {m for m in asked if m.endswith(("_records", "_seconds", "_headroom"))} - {
        "mirror_audit_topic_lag_records",
        "mirror_audit_topic_lag_seconds",
        "mirror_audit_run_duration_seconds",
        "mirror_audit_stage_duration_seconds",
        "mirror_audit_last_run_timestamp_seconds",
        "mirror_audit_last_success_timestamp_seconds",
        "mirror_audit_invariant_unchecked_rows",
    } <= figure_metrics


def test_the_terminal_shows_each_figure_as_declared_and_an_unknown_one_with_its_reason() -> None:
    summary = {
        "verdict": "WARN",
        "invariants": {},
        "readiness": "NO-GO",
        declared.EXPECTED_LOSS.name: 12,
        declared.EXPECTED_REPROCESS.name: None,
        "unknown_figures": {declared.EXPECTED_REPROCESS.name: {"reason": "unknown for 1 of 2 rows"}},
        declared.FAILOVER_KEY: {declared.REALIZED_LOSS.name: 3, "unknown_figures": {}},
    }
    out = io.StringIO()
    with redirect_stdout(out):
        print_outcome(summary, Path("report/index.html"))
    text = out.getvalue()
    assert re.search(r"\n  expected loss: +12 records \(unmirrored\)\n", text)
    assert re.search(r"\n  expected reprocessing: +unknown for 1 of 2 rows ", text)
    assert "unknown (unknown" not in text
    assert re.search(r"\nfailover:\n  loss realized: +3 records \(at the stop\)\n", text)
    # Absent from the summary: not shown at all (not computed by this job), never as 0.
    assert declared.EXPECTED_UNSEEN.label not in text
    # A reason that does not say "unknown" itself is wrapped once; one that does, never twice.
    not_computed = "group_offsets was not computed (its inputs were not collected)"
    reasons = {"x": {"reason": not_computed}, "y": {"reason": "unknown for 1 of 2 rows"}}
    part = {"x": None, "y": None, "unknown_figures": reasons}
    assert declared.shown(part, "x") == f"unknown ({not_computed})"
    assert declared.shown(part, "y") == "unknown for 1 of 2 rows"
