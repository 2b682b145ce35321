"""The README and docs/ as a reader follows them: every link lands, nothing points outside
the repository, the README's commands are ones ``mirror-audit`` accepts, and the README
stays a short user guide.

Links are Markdown inline links, ``[text](target)`` (found by their ``](target)``, so a
link whose text wraps across lines counts too), outside fenced code blocks and inline code.
A relative target must name a file or directory of the repository; a ``#anchor`` on a
Markdown target (or alone, for the page itself) must be produced by one of that page's
headings under GitHub's rules: the heading's text lowercased, every character that is not a
letter, a digit, a space, ``-`` or ``_`` dropped, spaces turned into ``-``, and ``-1``,
``-2``, ... added to repeated headings.

The README's commands: every line of a fenced code block in README.md holding a word
``mirror-audit`` (or a path ending in ``/mirror-audit``, as ``.venv/bin/mirror-audit`` or
a crontab's ``/opt/.../bin/mirror-audit``) is a command line. Its arguments are the words
after that one (shell quoting and ``#`` comments as ``shlex`` reads them), up to the first
shell operator word (``|``, ``||``, ``&&``, ``;``, ``&``, a redirection). The line is left
out, as a template rather than a command, when it ends with ``\\`` (or continues such a line),
holds ``...``, or one of its arguments holds ``<``, ``>``, ``[``, ``]``, ``|`` or ``$``
(``<run>``, ``[--full]``, ``cluster-mirroring|mm2``, ``$VAR``). Every other command line must
parse with the real parser (``audit.cli.build_parser``): the README shows concrete commands.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from audit.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 220

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...
UP = re.compile(r"(?<![\w.])(?:\.\./)+[^\s`)\"'\]>]*")
SHELL_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1", "&>"}
PLACEHOLDER_CHARS = set("<>[]|$")


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _prose_lines(text: str) -> list[str]:
    """The page's lines outside fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def _code_lines(text: str) -> list[str]:
    """The lines inside the page's fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            out.append(line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _prose_lines(page.read_text(encoding="utf-8")):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(page: Path) -> list[str]:
    found = []
    for line in _prose_lines(page.read_text(encoding="utf-8")):
        found += LINK.findall(INLINE_CODE.sub("", line))
    return found


def _inside_repo(path: Path) -> bool:
    return path.resolve().is_relative_to(ROOT)


def test_the_slug_rules() -> None:
    assert slug("Coverage: PASS and GO only over what was checked") == (
        "coverage-pass-and-go-only-over-what-was-checked"
    )
    assert slug("The failover lifecycle (before, during, after, back)") == (
        "the-failover-lifecycle-before-during-after-back"
    )
    assert slug("MirrorMaker 2 (mode `mm2`)") == "mirrormaker-2-mode-mm2"
    assert slug("spark_daemon and -x") == "spark_daemon-and--x"


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_every_relative_link_resolves_to_a_file_and_heading_of_the_repository(page: Path) -> None:
    broken = []
    for target in links(page):
        if EXTERNAL.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        if path_part.startswith("/"):
            broken.append(f"{target}: an absolute path (write it relative to {_rel(page)})")
            continue
        dest = (page.parent / path_part).resolve() if path_part else page
        if not _inside_repo(dest):
            broken.append(f"{target}: outside the repository")
        elif not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading of {_rel(dest)} gives #{anchor}")
    assert broken == [], f"{_rel(page)}: " + "; ".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_no_path_leaves_the_repository(page: Path) -> None:
    """Links and path text alike: a ``../`` may climb from the page's folder at most to
    the repository's root, and what it names must be there."""
    text = page.read_text(encoding="utf-8")
    escaping = [
        m
        for m in (found.rstrip(".,:;") for found in UP.findall(text))
        if not _inside_repo(page.parent / m) or not (page.parent / m).exists()
    ]
    escaping += [t for t in links(page) if t.startswith("file:")]
    assert escaping == [], f"{_rel(page)} names paths outside the repository or not in it: {escaping}"


def readme_commands() -> tuple[list[tuple[str, list[str]]], list[str]]:
    """The README's command lines as (line, arguments), and the lines left out as templates."""
    commands, templates = [], []
    continued = False
    for raw in _code_lines(README.read_text(encoding="utf-8")):
        line = raw.strip()
        was_continued, continued = continued, line.endswith("\\")
        if not re.search(r"(^|[\s/])mirror-audit(\s|$)", line):
            continue
        if was_continued or continued or "..." in line:
            templates.append(line)
            continue
        words = shlex.split(line, comments=True)
        at = next(i for i, w in enumerate(words) if w == "mirror-audit" or w.endswith("/mirror-audit"))
        args = []
        for word in words[at + 1 :]:
            if word in SHELL_OPERATORS:
                break
            args.append(word)
        if any(PLACEHOLDER_CHARS & set(a) for a in args):
            templates.append(line)
        else:
            commands.append((line, args))
    return commands, templates


def test_the_readmes_commands_parse_with_the_real_parser() -> None:
    commands, _ = readme_commands()
    parser = build_parser()
    refused = []
    for line, args in commands:
        try:
            parser.parse_args(args)
        except SystemExit:
            refused.append(line)
    assert refused == [], f"README commands mirror-audit refuses: {refused}"
    # The path a new user follows is there, as commands that run (not as templates).
    shown = {args[0] for _, args in commands if args}
    assert {"demo", "init", "check", "readiness", "nightly"} <= shown, shown


def test_the_readme_is_a_short_guide_that_reaches_a_go_no_go_on_its_first_screen() -> None:
    """At most ``README_MAX_LINES`` lines, and within the first 45 the set-up commands and a
    demo that answers GO / NO-GO (the failover demo's readiness, verify and failback)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES})"
    first_screen = "\n".join(lines[:45])
    assert "make demo" in first_screen
    assert "mirror-audit demo --failover" in first_screen and "NO-GO" in first_screen


def test_the_readme_links_every_page_of_docs() -> None:
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in links(README) if not EXTERNAL.match(t)}
    missing = [_rel(p) for p in PAGES[1:] if p.resolve() not in linked]
    assert missing == [], f"docs pages the README does not link: {missing}"
