"""Text from the clusters made safe to show: on a terminal, in a log line, in the report.

Group ids, transactional ids, commit metadata, header keys and a mirror's error messages
are whatever a client sent: Kafka restricts topic names, not these. Printed as they are, an
ESC sequence in a group id clears the operator's screen or retitles the terminal (OSC 0), a
carriage return overwrites the line before it, a newline forges a log line, and a bidi
override reorders what the operator reads. Every such character is shown instead as the
escape Python's ``repr`` would use (``\\x1b``, ``\\n``, ``\\u202e``), so the name stays
recognisable and nothing in it acts on the screen.

Backslashes are left as they are, so text already escaped upstream (the record examples
of CM-DATA-1, escaped losslessly when collected) is not escaped twice: what is shown is for
reading. summary.json (JSON escapes) and the snapshots' Parquet files keep every name
exactly, for anything that needs the original.
"""

from __future__ import annotations

# Bytes a reader could not decode as UTF-8 arrive as lone surrogates (``surrogateescape``).
_SURROGATE_LO, _SURROGATE_HI = "\udc80", "\udcff"


def _escape(ch: str) -> str:
    if _SURROGATE_LO <= ch <= _SURROGATE_HI:
        return f"\\x{ord(ch) - 0xDC00:02x}"
    return ch.encode("unicode_escape", "backslashreplace").decode("ascii")


def visible(text: str) -> str:
    """``text`` with every character that is not printable (C0 and C1 controls, DEL,
    format characters such as bidi overrides, line and paragraph separators, surrogates)
    replaced by its visible escape; printable text, spaces included, unchanged."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else _escape(ch) for ch in text)
