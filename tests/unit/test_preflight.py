"""``mirror-audit check``'s judgements on plain data (the live test in
tests/integration/test_credentials_live.py asks real brokers)."""

from __future__ import annotations

from pathlib import Path

from audit import preflight
from audit.config import AuditConfig
from audit.config_file import parse_config

TOPICS = ["a", "b", "c", "d"]


class _Admin:
    """What DescribeTopics answered: the operations per topic (None: not said)."""

    def __init__(self, ops: dict[str, frozenset[str] | None]) -> None:
        self.ops = ops

    def authorized_topic_operations(self, names: list[str]) -> dict[str, frozenset[str] | None]:
        return {n: self.ops[n] for n in names}


def _cfg(extra: str = "") -> AuditConfig:
    return parse_config(
        "source:\n  bootstrap_servers: s:9092\ndestination:\n  bootstrap_servers: d:9092\n" + extra, env={}
    )


ALL_OPS = frozenset({"DESCRIBE", "READ", "DESCRIBE_CONFIGS"})


def test_describe_configs_is_needed_only_where_records_are_verified() -> None:
    ops = {p.operation for p in preflight._needed(_cfg(), "topic")}
    assert ops == {"DESCRIBE", "READ"}
    ops = {p.operation for p in preflight._needed(_cfg("records:\n  enabled: true\n"), "topic")}
    assert ops == {"DESCRIBE", "READ", "DESCRIBE_CONFIGS"}


def test_an_operation_withheld_on_some_topics_fails_naming_them_and_the_rest_pass() -> None:
    cfg = _cfg("records:\n  enabled: true\n")
    no_read = ALL_OPS - {"READ"}
    admin = _Admin({"a": ALL_OPS, "b": no_read, "c": frozenset({"ALL"}), "d": no_read})
    found = preflight._topic_findings(cfg, "source", admin, TOPICS, TOPICS)  # type: ignore[arg-type]
    failed = [f for f in found if f.status == "fail"]
    assert [f.text.split(":")[0] for f in failed] == ["topic Read withheld on 2 of 4 in-scope topics (b, d)"]
    assert failed[0].fix.startswith("grant the auditor's principal topic Read")
    passed = {f.text for f in found if f.status == "ok"}
    assert {
        "topic Describe on every in-scope topic",
        "topic DescribeConfigs on every in-scope topic",
    } <= passed


def test_topics_the_cluster_would_not_describe_are_a_warning_never_a_pass() -> None:
    admin = _Admin({"a": ALL_OPS, "b": None, "c": ALL_OPS, "d": ALL_OPS})
    found = preflight._topic_findings(_cfg(), "source", admin, TOPICS, TOPICS)  # type: ignore[arg-type]
    (warned,) = [f for f in found if f.status == "warn"]
    assert "would not say" in warned.text and "(b)" in warned.text


def test_no_topic_in_scope_fails_on_the_source_and_warns_on_the_destination() -> None:
    admin = _Admin({})
    (src,) = preflight._topic_findings(_cfg(), "source", admin, ["x"], [])  # type: ignore[arg-type]
    (dst,) = preflight._topic_findings(_cfg(), "destination", admin, ["x"], [])  # type: ignore[arg-type]
    assert (src.status, dst.status) == ("fail", "warn")
    assert "lists 1 topics to the auditor and none is in scope.topics" in src.text
    assert "may Describe the topics" in src.fix


def test_the_output_root_is_looked_at_not_made(tmp_path: Path) -> None:
    root = tmp_path / "not" / "yet"
    ok = preflight._output_finding(_cfg(f"output:\n  root: {root}\n"))
    assert ok.status == "ok" and f"(to be made in {tmp_path})" in ok.text
    assert not (tmp_path / "not").exists()
    (tmp_path / "file").write_text("")
    bad = preflight._output_finding(_cfg(f"output:\n  root: {tmp_path / 'file' / 'reports'}\n"))
    assert bad.status == "fail" and "is not a directory" in bad.text


MM2 = "mode: mm2\n"


def test_mode_mm2_asks_for_read_on_mirror_makers_own_topics_where_they_live() -> None:
    """The offset syncs on the source (MirrorMaker 2's default location), the checkpoints and
    Connect's offsets topic on the target: a Read withheld on one fails naming it, an absent
    one warns."""
    from audit.collect.metadata.mm2_topics import mm2_topics_on

    cfg = _cfg(MM2)
    (syncs,) = mm2_topics_on("source", cfg.mirror.mm2)
    checkpoints, positions = mm2_topics_on("destination", cfg.mirror.mm2)
    assert (syncs, checkpoints) == ("mm2-offset-syncs.target.internal", "source.checkpoints.internal")
    assert positions == "mm2-offsets.source.internal"  # Connect's offsets topic (MM2-POS-1)

    admin = _Admin({syncs: frozenset({"DESCRIBE"})})
    (src,) = preflight._mm2_topic_findings(cfg, "source", admin, [syncs])  # type: ignore[arg-type]
    assert src.status == "fail" and f"topic Read withheld on MirrorMaker 2's {syncs}" in src.text

    admin = _Admin({checkpoints: ALL_OPS, positions: ALL_OPS})
    found = preflight._mm2_topic_findings(cfg, "destination", admin, [checkpoints, positions])  # type: ignore[arg-type]
    assert [f.status for f in found] == ["ok", "ok"] and checkpoints in found[0].text

    absent = preflight._mm2_topic_findings(cfg, "destination", _Admin({}), [])  # type: ignore[arg-type]
    assert [f.status for f in absent] == ["warn", "warn"] and "is not visible" in absent[0].text
