"""One example command line per command, shown at the end of its ``--help`` (and parsed by
a test, so an example never names an option that is gone)."""

from __future__ import annotations

import argparse

EXAMPLES: dict[str, str] = {
    "init": "mirror-audit init --mode mm2 --login scram --out audit.yaml",
    "snapshot": "mirror-audit snapshot --config audit.yaml --out runs/2026-11-29",
    "audit": "mirror-audit audit --source runs/a/source --destination runs/a/destination --out runs/b",
    "nightly": "mirror-audit nightly --config audit.yaml --output json",
    "readiness": "mirror-audit readiness --config audit.yaml --wait-drained --timeout 600",
    "check": "mirror-audit check --config audit.yaml",
    "failover verify": "mirror-audit failover verify --before runs/ready --config after.yaml --out runs/v",
    "failback readiness": "mirror-audit failback readiness --config audit-back.yaml --out runs/failback",
    "demo": "mirror-audit demo --healthy --out reports/demo",
    "segments scan": "mirror-audit segments scan /var/lib/kafka/data --out runs/a/source --role source",
    "segments fetch": "mirror-audit segments fetch --config audit.yaml --role destination --out runs/a/dst",
    "records scan": "mirror-audit records scan --config audit.yaml --out runs/a",
    "sandbox up": "mirror-audit sandbox up --brokers 2 --tiered-storage",
    "sandbox status": "mirror-audit sandbox status",
    "sandbox down": "mirror-audit sandbox down --keep-data",
    "sandbox mm2-start": "mirror-audit sandbox mm2-start --sync-group-offsets",
    "sandbox mm2-stop": "mirror-audit sandbox mm2-stop",
    "sandbox mirror-start": "mirror-audit sandbox mirror-start --topics 'orders.*'",
    "sandbox mirror-pause": "mirror-audit sandbox mirror-pause orders",
    "sandbox mirror-state": "mirror-audit sandbox mirror-state",
    "sandbox failover": "mirror-audit sandbox failover --timeout 60",
}


def commands(
    parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> dict[str, argparse.ArgumentParser]:
    """Every leaf command's parser by its name (``"sandbox up"``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: dict[str, argparse.ArgumentParser] = {}
            for name, sub in action.choices.items():
                found.update(commands(sub, (*prefix, name)))
            return found
    return {" ".join(prefix): parser}


class _KeepExamples(argparse.HelpFormatter):
    """argparse's formatter, which fills every text to the terminal's width, except the
    example: a command line broken over two lines no longer pastes."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("example:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def add_examples(parser: argparse.ArgumentParser) -> None:
    """Each leaf command's example as its help's epilog."""
    for name, sub in commands(parser).items():
        example = EXAMPLES.get(name)
        if example:
            sub.epilog = f"example:\n  {example}"
            sub.formatter_class = _KeepExamples
