"""One declaration per invariant: it is declared once, in ``meta.invariants`` of the shipped
suite that holds its checks, and everything else (profiles, coverage, the report's details,
the demos' promises) takes it from the catalogue; the few the code names itself it names
through audit/validate/invariants/named.py, checked at import. An ID as a value elsewhere
in the code (a key, a comparison, a set member, a template's condition) is a second place
an invariant lives, found by nothing when the declaration changes. Prose that names an
invariant (help text, docstrings, SQL comments, the report's captions) is documentation
and may."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from audit.schemas import AUX_TABLES, SNAPSHOT_TABLES
from audit.validate.invariants import (
    ALL,
    CLUSTER_MIRRORING,
    DETAIL_KINDS,
    FAILBACK,
    FAILOVER_VERIFY,
    MM2,
    MM2_DATA,
    SUITES,
    Invariant,
    declared,
    with_details,
)
from audit.validate.suites import shipped_expectations_dir

AUDIT = Path(__file__).resolve().parents[2] / "audit"
DECLARATIONS = AUDIT / "validate" / "invariants"
INVARIANT_ID = re.compile(r"\b(CM|MM2)-[A-Z]+-[0-9]+\b")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string nodes that are docstrings (documentation, not code)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def test_no_invariant_id_is_a_literal_outside_its_declaration() -> None:
    found = []
    for path in sorted(AUDIT.rglob("*.py")):
        if DECLARATIONS in path.parents:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docs:
                continue
            if INVARIANT_ID.fullmatch(node.value.strip()):
                found.append(f"{path.relative_to(AUDIT.parent)}:{node.lineno}: {node.value[:60]!r}")
    for path in sorted(AUDIT.rglob("*.j2")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = " ".join(re.findall(r"\{%.*?%\}|\{\{.*?\}\}", line))
            if INVARIANT_ID.search(code):
                found.append(f"{path.relative_to(AUDIT.parent)}:{n}: {line.strip()[:60]}")
    assert found == [], "\n".join(found)


# Where a checked column's name may stand as a literal outside the queries, and why: a
# word the code uses for something else too, or one definition two stages share. A new
# entry needs a reason as good; a column read by name in Python is otherwise a second
# place its meaning lives (rename it in the query that hands it over).
COLUMN_LITERALS_ALLOWED = {
    ("audit/cli/output.py", "stopped"): "a sandbox node's state word, not the column",
    ("audit/collect/batches/closure.py", "closes_twice"): (
        "the transaction closure is one PySpark definition the collect stage (segment LSOs) "
        "and the compare stage (CM-TXN-3) share; it computes the column"
    ),
    ("audit/collect/records/pairs.py", "dst_present"): (
        "the chunk pairing is one PySpark definition the collect stage (which chunks to "
        "narrow) and the compare stage (CM-DATA-1) share; it computes the column"
    ),
    ("audit/report/html.py", "epoch_headroom"): "the configured threshold of that name, drawn as a line",
    ("audit/report/html.py", "failed"): "the history table's count of failed invariants",
    ("audit/report/metrics.py", "failed"): "the notices' count of messages no webhook took",
    ("audit/report/metrics.py", "lag_seconds"): "summary.json's lag_by_topic field of that name",
    ("audit/report/notices.py", "failed"): "the notices' count of messages no webhook took",
    ("audit/sandbox/injected.py", "failed"): "an injected fault's outcome word",
}
# Query declarations: their string arguments are SQL an engine runs, the query written once;
# and figure declarations (a figure of a column's name, summed from it: its one declaration).
QUERY_DECLARATIONS = {"Figure", "Sum", "Step", "Comparison"}


def _checked_columns() -> set[str]:
    """The comparison-table columns the suites' checks read (their columns and row
    conditions), less the snapshot's own columns, which the collectors write by name."""
    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("column", "column_A", "column_B", "name") and isinstance(value, str):
                    names.add(value)
                elif key == "column_list":
                    names.update(value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for path in shipped_expectations_dir().glob("*.json"):
        for expectation in json.loads(path.read_text())["expectations"]:
            walk(expectation["kwargs"])
    inputs = {c.name for table in (*SNAPSHOT_TABLES.values(), *AUX_TABLES.values()) for c in table}
    return names - inputs


def _query_arguments(tree: ast.AST) -> set[int]:
    """ids of the string nodes handed to a query declaration (SQL, not Python), and of
    the names a mapping gives its declarations (a figure's name in summary.json)."""

    def declares(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Call) and getattr(node.func, "id", None) in QUERY_DECLARATIONS

    found: set[int] = set()
    for node in ast.walk(tree):
        if declares(node):
            assert isinstance(node, ast.Call)
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                found.update(id(n) for n in ast.walk(arg))
        elif isinstance(node, ast.Dict):
            found.update(id(k) for k, v in zip(node.keys, node.values, strict=True) if k and declares(v))
    return found


def test_no_checked_column_is_a_literal_outside_the_queries() -> None:
    """A column a check reads is computed in its comparison's query (audit/compare/) and
    declared in audit/schemas.py; Python elsewhere that picks it out by name decides what
    it means a second time. The report's queries rename what they hand over."""
    checked = _checked_columns()
    assert {"data_lag_records", "sync_delta", "epoch_headroom"} <= checked  # the scan sees the suites
    skipped = (DECLARATIONS, AUDIT / "compare")
    found, used = [], set()
    for path in sorted(AUDIT.rglob("*.py")):
        if any(s in path.parents for s in skipped) or path == AUDIT / "schemas.py":
            continue
        rel = str(path.relative_to(AUDIT.parent))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        exempt = _docstrings(tree) | _query_arguments(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in exempt:
                continue
            if node.value in checked:
                if (rel, node.value) in COLUMN_LITERALS_ALLOWED:
                    used.add((rel, node.value))
                else:
                    found.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert found == [], "\n".join(found)
    assert used == set(COLUMN_LITERALS_ALLOWED), set(COLUMN_LITERALS_ALLOWED) - used  # no stale entry


def test_every_invariant_is_declared_once_with_its_remediation() -> None:
    jobs = (*CLUSTER_MIRRORING, *FAILOVER_VERIFY, *FAILBACK, *MM2, *MM2_DATA)
    assert {inv.id for inv in jobs} == set(ALL)
    for inv in ALL.values():
        assert inv.statement and inv.needs and inv.remediation, inv.id
        assert INVARIANT_ID.fullmatch(inv.id), inv.id


def test_every_invariant_a_suite_names_is_declared_and_every_declared_one_is_checked() -> None:
    named = {
        e["meta"]["invariant"]
        for path in shipped_expectations_dir().glob("*.json")
        for e in json.loads(path.read_text())["expectations"]
    }
    assert named <= set(ALL), named - set(ALL)
    assert set(ALL) <= named, set(ALL) - named


def test_each_kind_of_detail_is_shown_by_an_invariant() -> None:
    for kind in sorted(DETAIL_KINDS):
        assert with_details(kind), kind


def test_every_invariant_has_its_row_in_the_docs() -> None:
    """docs/invariants.md's tables are the reference a user reads: every declared invariant
    has its row there (``| ID | table | ...``), and no row names an ID that is not declared."""
    page = (AUDIT.parent / "docs" / "invariants.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| ((?:CM|MM2)-[A-Z]+-[0-9]+) \|", page, re.M))
    assert sorted(set(ALL) - rows) == [], "invariants without a row in docs/invariants.md"
    assert sorted(rows - set(ALL)) == [], "rows in docs/invariants.md of no declared invariant"


def _shipped() -> dict[str, dict]:  # type: ignore[type-arg]
    return {p.stem: json.loads(p.read_text()) for p in shipped_expectations_dir().glob("*.json")}


def test_each_invariant_is_declared_in_one_suite_that_holds_one_of_its_checks() -> None:
    homes: dict[str, list[str]] = {}
    for name, suite in _shipped().items():
        named = {e["meta"]["invariant"] for e in suite["expectations"]}
        for invariant_id in suite["meta"].get("invariants", {}):
            homes.setdefault(invariant_id, []).append(name)
            assert invariant_id in named, f"{name} declares {invariant_id} but holds none of its checks"
    assert {i: h for i, h in homes.items() if len(h) != 1} == {}, "declared in more than one suite"
    assert set(homes) == set(ALL)


def test_every_suite_that_declares_invariants_is_in_a_jobs_report_order() -> None:
    shipped = _shipped()
    ordered = {name for names in SUITES.values() for name in names}
    assert ordered <= set(shipped), ordered - set(shipped)
    declaring = {name for name, suite in shipped.items() if suite["meta"].get("invariants")}
    assert declaring <= ordered, f"suites whose invariants no catalogue lists: {declaring - ordered}"


def test_a_malformed_declaration_is_refused_naming_the_suite_and_the_field() -> None:
    good = {"statement": "s", "needs": "n", "remediation": "r"}
    assert Invariant.from_meta("CM-X-1", {**good, "inputs": ["dst:partitions"]}, "x.json").inputs == (
        "dst:partitions",
    )
    with pytest.raises(ValueError, match=r"x.json: meta.invariants\['CM-X-1'\]: unknown field\(s\) remedy"):
        Invariant.from_meta("CM-X-1", {**good, "remedy": "r"}, "x.json")
    with pytest.raises(ValueError, match="missing needs"):
        Invariant.from_meta("CM-X-1", {"statement": "s", "remediation": "r"}, "x.json")
    with pytest.raises(ValueError, match="unknown kind"):
        Invariant.from_meta("CM-X-1", {**good, "details": ["charts"]}, "x.json")


def test_the_code_names_only_declared_invariants() -> None:
    assert declared("CM-EPOCH-1") == "CM-EPOCH-1"
    with pytest.raises(KeyError, match="CM-NOPE-1"):
        declared("CM-NOPE-1")
