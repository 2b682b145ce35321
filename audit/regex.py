"""The one regex dialect of the configuration: RE2, matched against whole names.

Scope patterns come from operators and are evaluated against every topic and group name of
a cluster, in the process that answers a readiness check during an incident. A
backtracking engine (Python's ``re``, Java's) can take exponential time on a pattern such
as ``(a+)+b``; RE2 guarantees time linear in the name, so no pattern can stall a check.
The price is RE2's syntax: no lookaround and no backreferences, which scope never needs
(``exclude`` says what a negative lookahead would). A pattern RE2 rejects is a
configuration error naming it, at load time.

Names are not lines: ``.`` matches any character, a newline included. Group ids are
whatever a client sent, and with RE2's default (``.`` stops at a newline) the default
scope ``.*`` silently left a group whose id holds a newline out of the audit.

Every pattern is compiled here, and only here: the configuration validates with the same
engine that evaluates, and both comparison engines join the names' verdicts (evaluated once,
in Python) instead of evaluating patterns in a dialect of their own.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the error reaches the user as a config error, not as a log line
_OPTIONS.dot_nl = True  # '.' matches a newline too: names are matched whole, not line by line

_NO_PERL = " (RE2 syntax: no lookaround or backreferences; use exclude, or spell the repeated part out)"


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message says why, in RE2's words."""


def check(pattern: str) -> None:
    """Raise ``PatternError`` if ``pattern`` is not valid RE2 syntax."""
    _compile(pattern)


@functools.lru_cache(maxsize=512)
def _compile(pattern: str) -> Any:
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(f"{reason}{_NO_PERL if _perl_only(reason) else ''}") from None


def _perl_only(reason: str) -> bool:
    """RE2's refusal of a Perl construct it lacks: lookaround ("invalid perl operator: (?!")
    or a backreference ("invalid escape sequence: \\1"), which RE2 names only as a bad escape."""
    if "perl operator" in reason:
        return True
    _, bad_escape, rest = reason.partition("invalid escape sequence: \\")
    return bool(bad_escape) and rest[:1].isdigit()


@functools.lru_cache(maxsize=256)
def _any_of(patterns: tuple[str, ...]) -> Any:
    """One program for a set of patterns: a name is matched once, not once per pattern."""
    return _compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def full_match(pattern: str, name: str) -> bool:
    return _compile(pattern).fullmatch(name) is not None


def any_full_match(patterns: tuple[str, ...], name: str) -> bool:
    program = _any_of(patterns)
    return program is not None and program.fullmatch(name) is not None


def search(pattern: str, name: str) -> bool:
    return _compile(pattern).search(name) is not None
