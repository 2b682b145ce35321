"""One declaration per invariant: its ID is written once, in audit/validate/invariants/,
and everything else (profiles, coverage, the report's details, the demos' promises) takes
it from the declaration. An ID as a value elsewhere in the code (a key, a comparison, a
set member, a template's condition) is a second place an invariant lives, found by nothing
when the declaration changes. Prose that names an invariant (help text, docstrings, SQL
comments, the report's captions) is documentation and may."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from audit.validate.gx import shipped_expectations_dir
from audit.validate.invariants import (
    ALL,
    CLUSTER_MIRRORING,
    FAILBACK,
    FAILOVER_VERIFY,
    MM2,
    MM2_DATA,
    with_details,
)

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
    for kind in (
        "open_transactions",
        "mirror_state",
        "record_divergence",
        "batch_divergence",
        "mm2_first_missing",
    ):
        assert with_details(kind), kind
