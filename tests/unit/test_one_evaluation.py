"""Great Expectations' own evaluation as the oracle of the one the validator runs: every
suite of every outcome case (tests/unit/test_invariant_outcomes.py: each invariant failing,
warning and passing at its boundary) and of every scenario's healthy pair, evaluated both
ways over the same comparison tables, must give every expectation the same counts (rows
judged, rejected, left missing) and the same success.

The validator compiles each expectation into SQL and counts all of a table's at once
(``audit.validate.evaluate``); GX evaluates it with its own metrics, on pandas here. A
rule the compilation gets wrong (a null one side of a column pair, a row condition, a
threshold parameter) shows here as the case and the expectation where they part.

GX's answer for a suite is a function of the suite, its parameters and the table it reads:
most cases change one table of their scenario, so the others are the healthy case's again.
GX's results are kept per (suite, parameters, table content) and asked again only for a
table it has not judged (each worker keeps its own); the validator's evaluation runs on
every case, and is held to the oracle on every suite."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from audit.compare.tables import EXAMPLE_COLUMNS
from audit.config import AuditConfig
from audit.validate.evaluate import compile_suite, evaluate
from audit.validate.gx import GxRunner
from audit.validate.run import mode_suites
from tests.invariant_scenarios import SCENARIOS, Pair, Scenario, scenario_compared
from tests.unit.test_invariant_outcomes import OUTCOMES, Outcome, _changed, _judged_by, _scenario
from tests.unit.test_unknown_never_passes import CASES as UNKNOWN_CASES
from tests.unit.test_unknown_never_passes import READ_CASES, _not_read, _unknown

# Each case: its name, its scenario, and the pair and configuration it is judged by.
Case = tuple[str, Scenario, Callable[[], Pair], Callable[[], AuditConfig]]


def _outcome_case(o: Outcome) -> Case:
    sc = _scenario(o)
    return (
        f"{o.invariant}:{o.expected}:{o.what}",
        sc,
        lambda: _changed(sc.tables, o.change),
        lambda: _judged_by(o, sc),
    )


def _unknown_case(sc: Scenario, spec: str) -> Case:
    return f"{sc.name}:{spec} unknown", sc, lambda: _unknown(sc, spec), lambda: sc.cfg


def _not_read_case(sc: Scenario, side: str, table: str, form: str) -> Case:
    return f"{sc.name}:{side}:{table} {form}", sc, lambda: _not_read(sc, side, table, form), lambda: sc.cfg


CASES: list[Case] = [
    *[(f"{sc.name}:healthy", sc, lambda sc=sc: sc.tables, lambda sc=sc: sc.cfg) for sc in SCENARIOS],
    *[_outcome_case(o) for o in OUTCOMES],
    # The inputs left unknown, and the reads that say they read nothing: what GX counts as
    # missing (a judged column null) and the validator as unchecked.
    *[
        _unknown_case(sc, spec)
        for sc in SCENARIOS
        for spec in sorted({spec for s, _, spec in UNKNOWN_CASES if s is sc})
    ],
    *[_not_read_case(*c) for c in READ_CASES],
]


# GX's counts per expectation description, by (suite, parameters, table content).
Oracle = dict[str, tuple[bool, int, int, int]]
_ORACLE: dict[tuple[str, str, str], Oracle] = {}


def _content(df: Any) -> str:
    """A digest of a pandas frame's columns, types and every value (its index aside)."""
    h = hashlib.sha256(repr([(str(c), str(t)) for c, t in df.dtypes.items()]).encode())
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_compiled_evaluation_counts_what_great_expectations_counts(case: Case, tmp_path: Path) -> None:
    name, scenario, make_pair, make_cfg = case
    cfg = make_cfg()
    compared, prof = scenario_compared(scenario, make_pair(), tmp_path, cfg)
    parameters = dataclasses.asdict(cfg.thresholds)
    runner: GxRunner | None = None
    compared_suites = 0
    for suite in mode_suites(cfg, prof.suite_patterns):
        df = compared.frames.get(suite.table)
        if df is None:
            continue
        compiled = compile_suite(suite.table, suite.raw["expectations"], parameters)
        assert compiled is not None, suite.name
        ours = evaluate(compared.tables, compiled)
        key = (suite.name, json.dumps(parameters, sort_keys=True, default=str), _content(df))
        if key not in _ORACLE:
            runner = runner or GxRunner(tmp_path / "docs", compared.tables)
            theirs = runner.run(suite, df, EXAMPLE_COLUMNS.get(suite.table, []), parameters)
            # GX lists its results in an order of its own (table-level expectations first):
            # matched by description, each unique within its suite.
            by_description = {
                g.description: (g.success, g.evaluated, g.unexpected, g.missing) for g in theirs
            }
            assert len(by_description) == len(theirs), suite.name
            _ORACLE[key] = by_description
        oracle_of = _ORACLE[key]
        assert len(oracle_of) == len(ours), suite.name
        for o in ours:
            got = (o.success, o.evaluated, o.unexpected, o.missing)
            oracle = oracle_of[o.description]
            assert got == oracle, (name, suite.name, o.description, "ours", got, "GX", oracle)
        compared_suites += 1
    assert compared_suites, name
