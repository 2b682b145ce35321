"""Scope as Spark column expressions (Java regexes, matched against the whole name)."""

from __future__ import annotations

from typing import Any

from audit.config import INTERNAL_TOPIC_PATTERNS, MM2_INTERNAL_TOPIC_PATTERNS, PatternSet, ScopeConfig


def _any_match(col: Any, patterns: tuple[str, ...]) -> Any:
    from pyspark.sql import functions as F

    if not patterns:
        return F.lit(False)
    return col.rlike("^(?:" + "|".join(f"(?:{p})" for p in patterns) + ")$")


def pattern_column(col: Any, patterns: PatternSet) -> Any:
    return _any_match(col, patterns.include) & ~_any_match(col, patterns.exclude)


def topic_in_scope(col: Any, scope: ScopeConfig) -> Any:
    flag = pattern_column(col, scope.topics)
    if not scope.include_internal_topics:
        flag = flag & ~_any_match(col, INTERNAL_TOPIC_PATTERNS)
    return flag


def mm2_topic_in_scope(col: Any, scope: ScopeConfig) -> Any:
    """Mode mm2: also leaves out MirrorMaker 2's heartbeats topics and their replicas."""
    flag = topic_in_scope(col, scope)
    if not scope.include_internal_topics:
        flag = flag & ~_any_match(col, MM2_INTERNAL_TOPIC_PATTERNS)
    return flag


def group_in_scope(col: Any, scope: ScopeConfig) -> Any:
    return pattern_column(col, scope.groups)


def group_excluded(col: Any, scope: ScopeConfig) -> Any:
    """Named by an exclude pattern (as opposed to merely not included)."""
    return _any_match(col, scope.groups.exclude)
