"""The starting configurations ``mirror-audit init`` writes, from the examples shipped in the
package (``audit/conf``, a link to the repository's ``conf/``: one copy, read by people in
the checkout and by ``init`` in an installed wheel).

A starting config is three parts, each an example file as it is: the login's connection
blocks (``conf/logins/<kind>.yaml``: ``source`` and ``destination`` with the properties that
login needs), the mode's own keys (``conf/mm2.example.yaml``'s ``scope`` and ``mirror`` for
mode mm2), and a pointer to the whole commented reference. It is parsed before it is
written (with every ``${VAR}`` standing in as set), so what ``init`` writes always loads.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal

from audit.errors import OutputError, UsageError

MODES = ("cluster-mirroring", "mm2")
# ``plaintext``: no login (a cluster on a trusted network, or the sandbox).
LOGINS = ("plaintext", "scram", "mtls", "msk-iam", "oauthbearer-oidc", "confluent-cloud")

_PLAINTEXT = """source:
  bootstrap_servers: source-kafka-1:9092,source-kafka-2:9092
destination:
  bootstrap_servers: dest-kafka-1:9092,dest-kafka-2:9092
"""


def example_text(name: str) -> str:
    """A shipped example (``audit.example.yaml``, ``mm2.example.yaml``, ``logins/<kind>.yaml``)."""
    path = resources.files("audit").joinpath("conf", *name.split("/"))
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:  # an installation without its package data
        raise UsageError(
            f"the example {name} is not in this installation ({exc}): reinstall mirror-audit"
        ) from None


def _blocks(text: str) -> dict[str, str]:
    """An example's top-level blocks by key, each with the comment lines right above it
    (a blank line ends a comment that belongs to no key); ``""``: the file's opening comment."""
    blocks: dict[str, list[str]] = {"": []}
    lead: list[str] = []
    current: list[str] | None = None
    opening = True
    for line in text.splitlines():
        if line.startswith("#"):
            lead.append(line)
        elif not line.strip():
            if opening and lead:
                blocks[""] += lead
            opening = opening and not lead and current is None
            lead = []
            if current is not None:
                current.append(line)
        elif line[0] != " ":
            if opening:
                blocks[""] += lead
                lead = []
            opening = False
            current = blocks[line.split(":", 1)[0]] = [*lead, line]
            lead = []
        elif current is not None:
            current += [*lead, line]
            lead = []
    return {key: "\n".join(lines).strip("\n") + "\n" for key, lines in blocks.items() if lines}


def starting_config(mode: Literal["cluster-mirroring", "mm2"], login: str) -> str:
    """The text ``init`` writes for ``mode`` and ``login``, checked to load."""
    if mode not in MODES:
        raise UsageError(f"mode {mode!r}: use one of {', '.join(MODES)}")
    if login not in LOGINS:
        raise UsageError(f"login {login!r}: use one of {', '.join(LOGINS)}")
    if login == "plaintext":
        clusters = _PLAINTEXT
    else:
        blocks = _blocks(example_text(f"logins/{login}.yaml"))
        clusters = "".join(blocks.get(k, "") for k in ("", "source", "destination"))
    parts = [
        f"# Written by 'mirror-audit init --mode {mode} --login {login}'. Set the addresses (and the\n"
        "# secrets' environment variables), then: mirror-audit check --config THIS_FILE\n"
        "# Every other key, with its default and what it does: 'mirror-audit init --reference'.\n",
        f"mode: {mode}\n",
        clusters,
    ]
    if mode == "mm2":
        blocks = _blocks(example_text("mm2.example.yaml"))
        parts += [blocks["scope"], blocks["mirror"]]
    text = "\n".join(parts)
    _check_loads(text)
    return text


def _check_loads(text: str) -> None:
    import re

    from audit.config_file import parse_config

    names = set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", text))
    parse_config(text, env={n: "set" for n in names})


def write_new(path: Path, text: str) -> Path:
    """``text`` into ``path``, which must not exist yet: a starting config never replaces a
    file (an operator's edited config most of all)."""
    try:
        with path.open("x", encoding="utf-8") as f:
            f.write(text)
    except FileExistsError:
        raise OutputError(
            f"{path} exists: init never overwrites a file; give another --out or move it"
        ) from None
    return path
