"""docs/architecture.md's worked example, executed: its steps applied as written to a copy
of the tree, then the new invariant run on a pair that breaks it and on one that keeps it.
The page cannot drift from the code: a step that no longer applies, or an invariant that
needs a place the page does not name, fails here."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"

RUN = """
import json, sys
from pathlib import Path
from audit.config_file import parse_config
from audit.pipeline import audit_snapshots
from tests.snapshots import part, write_pair

out = {}
root = Path(sys.argv[1])
for name, dst_start in (("broken", 50), ("kept", 0)):
    src, dst = write_pair(root / name, [part()], [part(log_start_offset=dst_start)])
    cfg = parse_config("{}", env={})
    summary = audit_snapshots(src, dst, root / name / "run", cfg, engine="local").summary
    out[name] = summary["invariants"]["CM-RETAIN-1"]
print(json.dumps(out))
"""


def _steps() -> list[str]:
    """The fenced code blocks of the worked example, in order, dedented."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Worked example: adding an invariant", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```\w*\n(.*?)\n\s*```", section, re.S)
    return [textwrap.dedent(b) for b in blocks]


def _insert_after(path: Path, anchor: str, block: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(anchor) == 1, f"{path}: the page's anchor {anchor!r} is not there once"
    at = text.index(anchor)
    line_end = text.index("\n", at) + 1
    indent = re.match(r"[ ]*", text[text.rindex("\n", 0, at) + 1 :]).group(0)  # type: ignore[union-attr]
    lines = "".join(indent + ln.strip() + "\n" for ln in block.splitlines())
    path.write_text(text[:line_end] + lines + text[line_end:], encoding="utf-8")


def test_the_worked_example_applies_as_written_and_its_invariant_warns_and_passes(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for name in ("audit", "expectations", "tests", "docs"):
        shutil.copytree(ROOT / name, tree / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    # Three files: the suite (declaration and check), the case and the docs row.
    declaration, expectation, case, docs_row = _steps()

    suite_path = tree / "expectations" / "cm_partitions.json"
    suite = json.loads(suite_path.read_text(encoding="utf-8"))
    declared = suite["meta"]["invariants"]
    assert list(declared)[-1] == "CM-TIER-2", "the page's step 1 names a place that moved"
    declared.update(json.loads("{" + declaration + "}"))
    suite["expectations"].append(json.loads(expectation))
    suite_path.write_text(json.dumps(suite, indent=2) + "\n", encoding="utf-8")

    env = {**os.environ, "PYTHONPATH": str(tree)}  # the copy's package, not the checkout's
    env.pop("MIRROR_AUDIT_EXPECTATIONS", None)  # the copy's shipped suites
    proc = _python(tree, env, "-c", RUN, str(tmp_path / "runs"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    broken, kept = result["broken"], result["kept"]
    assert broken["status"] == "warn", broken
    assert [(e["topic"], e["partition"]) for e in broken["examples"]] == [("orders", 0)]
    assert broken["remediation"].startswith("Raise the destination topic's retention")
    assert kept["status"] == "pass", kept

    # Before step 2, the copy's outcome test names the invariant that has no case; after
    # it, the copy's own checks of the declarations hold with the new invariant in it, the
    # property test generated from the declarations covers it (its input taken away) and
    # its case warns: its cluster-mirroring cases, the catalogue the example adds to (the
    # other jobs' cases run in this tier already, on the checkout).
    outcomes = "tests/unit/test_invariant_outcomes.py"
    before = _python(
        tree, env, "-m", "pytest", "-q", "-p", "no:cacheprovider", outcomes, "-k", "has_its_cases"
    )
    assert before.returncode == 1 and "CM-RETAIN-1: no warn case" in before.stdout, before.stdout[-3000:]
    _insert_after(tree / outcomes, "# -- partitions (cm_partitions", case)
    declarations = "tests/unit/test_invariant_declarations.py"
    undocumented = _python(
        tree, env, "-m", "pytest", "-q", "-p", "no:cacheprovider", declarations, "-k", "row_in_the_docs"
    )
    assert undocumented.returncode == 1 and "CM-RETAIN-1" in undocumented.stdout, undocumented.stdout[-3000:]
    _insert_after(tree / "docs" / "invariants.md", "| CM-OFFSET-2 | partitions |", docs_row)
    checks = _python(
        tree,
        env,
        *("-m", "pytest", "-v", "-p", "no:cacheprovider"),
        declarations,
        "tests/unit/test_unknown_never_passes.py",
        outcomes,
        *(
            "-k",
            "not mm2 and not failover-verify and not failback and not (reaches_the_status and not RETAIN)",
        ),
    )
    assert checks.returncode == 0, checks.stdout[-3000:]
    assert "CM-RETAIN-1:dst:partitions] PASSED" in checks.stdout, "the property test did not cover it"
    assert "[CM-RETAIN-1:warn:5 records deleted ahead] PASSED" in checks.stdout, "its case did not run"
    assert "test_every_invariant_has_its_cases PASSED" in checks.stdout
    assert "test_every_invariant_has_its_row_in_the_docs PASSED" in checks.stdout
    # Three files, as the page says: nothing else in the copy differs.
    changed = sorted(
        str(p.relative_to(tree))
        for p in tree.rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and (ROOT / p.relative_to(tree)).read_bytes() != p.read_bytes()
    )
    assert changed == [
        "docs/invariants.md",
        "expectations/cm_partitions.json",
        "tests/unit/test_invariant_outcomes.py",
    ], changed


def _python(tree: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The copy's Python (``env`` points it at the copy's package), run in the copy."""
    return subprocess.run(
        [sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True, timeout=300, check=False
    )
