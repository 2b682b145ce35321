"""The engine contract: what differs between Spark and DuckDB is asked of the engine
(``audit.compare.engines``), never decided by its name elsewhere. A module that branches
on ``engine == "spark"`` or on an engine class would make a third engine, or a change of
capability, a hunt through the pipeline."""

from __future__ import annotations

import re
from pathlib import Path

from audit.compare.engines import LocalTables, data_level_engine

AUDIT = Path(__file__).resolve().parents[2] / "audit"
ENGINES = AUDIT / "compare" / "engines.py"
BRANCH = re.compile(r"engine\s*[!=]=|isinstance\([^)]*(SparkTables|LocalTables)|\.engine\s*[!=]=")


def test_no_module_but_the_engines_branches_on_an_engine() -> None:
    found = [
        f"{path.relative_to(AUDIT.parent)}:{n}: {line.strip()}"
        for path in sorted(AUDIT.rglob("*.py"))
        if path != ENGINES
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if BRANCH.search(line) and not line.lstrip().startswith("#")
    ]
    assert found == [], "\n".join(found)


def test_the_local_engine_declares_it_computes_no_data_level_table() -> None:
    tables = LocalTables()
    assert tables.data_level is False and data_level_engine(tables) is None
    assert tables.run_info() == {}
