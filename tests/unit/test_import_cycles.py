"""No import cycle in audit/ at run time: a module importing another that imports it back
(at its top or inside a function) works only by the order things happen to load in, and
makes each half impossible to understand or test alone.

The graph is read from the source (``ast``): every ``import`` and ``from ... import`` a
module executes, top level or in a function, to the module of audit/ it names. Imports
under ``if TYPE_CHECKING:`` never run; their cycles are listed apart, and the ones left
are named below with what would remove them, so that a new one fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2] / "audit"

# Cycles through type-only imports, left for now (issue 54), each with what removes it.
TYPE_ONLY_CYCLES_LEFT: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for f in ROOT.rglob("*.py"):
        parts = list(f.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path, type_only: bool) -> set[str]:
    """The modules of audit/ that ``module`` imports when it runs (``type_only``: and
    under ``if TYPE_CHECKING:`` too)."""
    found: set[str] = set()

    def add(name: str) -> None:
        target = _resolve(name)
        if target is not None and target != module:
            found.add(target)

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            if type_only:
                for child in node.body:
                    visit(child)
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if path.name == "__init__.py" else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            for alias in node.names:
                full = f"{base}.{alias.name}"
                add(full if full in MODULES else base)
        for inner in ast.iter_child_nodes(node):
            visit(inner)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _cycles(type_only: bool) -> set[tuple[str, ...]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    graph = {m: _imports(m, p, type_only) for m, p in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: set[tuple[str, ...]] = set()

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.add(tuple(sorted(component)))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def test_no_import_cycle_in_audit_at_run_time() -> None:
    assert _cycles(type_only=False) == set()


def test_the_type_only_import_cycles_are_the_ones_named_and_no_more() -> None:
    assert _cycles(type_only=True) == TYPE_ONLY_CYCLES_LEFT


def test_the_graph_sees_a_cycle_where_there_is_one() -> None:
    """The reader of the graph itself: a runtime import inside a function counts, one under
    TYPE_CHECKING only for the type-only graph."""
    assert "audit.collect.records.batch_reader" in _imports(
        "audit.collect.records.readers", MODULES["audit.collect.records.readers"], type_only=False
    )
    results = MODULES["audit.validate.results"]
    assert "audit.validate.gaps" not in _imports("audit.validate.results", results, type_only=False)
    assert "audit.validate.gaps" in _imports("audit.validate.results", results, type_only=True)


def _importers_of(prefix: str) -> dict[str, set[str]]:
    graph = {m: _imports(m, p, type_only=False) for m, p in MODULES.items()}
    return {m: {t for t in targets if t.startswith(prefix)} for m, targets in graph.items()}


def test_imports_run_down_the_pipeline_never_up_into_the_sandbox_or_a_collector() -> None:
    """The collectors never import the sandbox (the jar cache and Java live in
    audit.java_runtime), and the configuration never imports a collector."""
    into_sandbox = _importers_of("audit.sandbox")
    assert {m: t for m, t in into_sandbox.items() if m.startswith("audit.collect") and t} == {}
    into_collect = _importers_of("audit.collect")
    assert into_collect["audit.config"] == set()
    assert "audit.collect.logins" in into_collect["audit.collect.metadata.java_login"]  # the reader sees
