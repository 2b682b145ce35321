"""``mirror-audit check``: the configuration, both clusters and this machine looked at before
a job runs, writing nothing and running no job.

Permissions are judged by what each cluster answers, not by reading its ACLs: the topics'
authorized operations (DescribeTopics, KIP-430), the cluster's (DescribeCluster), and a
group and a transactional id named ``mirror-audit-check`` described (neither need exist,
and describing creates nothing; Kafka answers an authorization error where the principal
may not). So ACLs, RBAC, IAM policies and super users are all judged the same way, and a
grant on a prefix that leaves some in-scope topics out is found on those topics. (On a
cluster that has never had a group or a transaction, the first such question makes Kafka
create its offsets or transaction state topic, as any client's would.)
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Literal

from audit.collect.metadata.kafka_admin import KafkaAdmin
from audit.collect.metadata.permissions import AUDITOR_PERMISSIONS, Permission, operation_word
from audit.collect.metadata.transactions import probe_kafka_python
from audit.config import AuditConfig
from audit.errors import AuditError, ClusterError
from audit.paths import local_path

log = logging.getLogger(__name__)

PROBE_ID = "mirror-audit-check"  # the group and transactional id described; none need exist
# DescribeTopics is asked of at most this many in-scope topics (the first by name).
TOPIC_SAMPLE = 1000

Status = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class Finding:
    """One thing checked: where ("destination", "source", "local"), how it stands, what was
    found, and (for a warning or a failure) what to do about it."""

    where: str
    status: Status
    text: str
    fix: str = ""


def _allows(ops: frozenset[str], operation: str) -> bool:
    """Whether a topic's authorized operations (as the cluster named them) include
    ``operation``; ALL includes every one."""
    return operation in ops or "ALL" in ops


def _needed(cfg: AuditConfig, resource: str) -> tuple[Permission, ...]:
    """The permissions on ``resource`` (docs/configuration.md, Permissions) the configured jobs
    use: DescribeConfigs (compacted topics) only where records are verified."""
    return tuple(
        p
        for p in AUDITOR_PERMISSIONS
        if p.resource == resource and (p.operation != "DESCRIBE_CONFIGS" or cfg.records.enabled)
    )


def _grant(resource: str, operation: str) -> str:
    return (
        f"grant the auditor's principal {resource} {operation_word(operation)} "
        "(docs/configuration.md, Permissions)"
    )


def check(cfg: AuditConfig) -> list[Finding]:
    """Every finding, the destination's first (as a snapshot takes it), then the source's,
    then this machine's."""
    findings: list[Finding] = []
    for role in ("destination", "source"):
        findings.extend(cluster_findings(cfg, role))
    findings.extend(local_findings(cfg))
    return findings


def cluster_findings(cfg: AuditConfig, role: Literal["source", "destination"]) -> list[Finding]:
    from audit.profiles import profile_of

    cluster = cfg.cluster(role)
    try:
        admin = KafkaAdmin(role, cluster)
        cluster_id = admin.cluster_id()
        listed = admin.topic_names()
    except ClusterError as exc:
        return [Finding(role, "fail", str(exc))]
    probe = probe_kafka_python(cluster, PROBE_ID)
    level = f"API versions of Kafka {probe.api_level} or later" if probe.api_level else "API level unknown"
    out = [Finding(role, "ok", f"{cluster.bootstrap_servers}: cluster {cluster_id or '(no id)'}, {level}")]
    if not probe.connects:
        out.append(
            Finding(
                role,
                "warn",
                f"kafka-python does not connect ({probe.detail}): no batched ListOffsets, no named open "
                "transactions, no wire fetch, no batch reader",
                "see records.reader and the client properties kafka-python supports "
                "(docs/usage.md, Record-level verification)",
            )
        )

    may = admin.may_describe_cluster()
    for p in _needed(cfg, "cluster"):
        if may is True:
            out.append(Finding(role, "ok", f"cluster {operation_word(p.operation)}"))
        elif may is False:
            out.append(
                Finding(
                    role,
                    "fail",
                    f"cluster {operation_word(p.operation)} withheld: {p.why}",
                    _grant("cluster", p.operation),
                )
            )
        else:
            out.append(Finding(role, "warn", "the cluster would not say whether it may be described"))

    plan = profile_of(cfg).snapshot
    in_scope = plan.topic_filter(cfg, role)
    scoped = sorted(t for t in listed if in_scope(t))
    out.extend(_topic_findings(cfg, role, admin, listed, scoped))
    if plan.reads_mm2_topics:
        out.extend(_mm2_topic_findings(cfg, role, admin, listed))

    for p in _needed(cfg, "group"):
        allowed = admin.may_describe_group(PROBE_ID)
        text = f"group {operation_word(p.operation)} (asked of the group id {PROBE_ID})"
        if allowed is True:
            out.append(Finding(role, "ok", text))
        elif allowed is False:
            out.append(Finding(role, "fail", f"{text} withheld: {p.why}", _grant("group", p.operation)))
        else:
            out.append(Finding(role, "warn", f"{text}: the cluster said neither yes nor no"))

    if probe.connects:
        for p in _needed(cfg, "transactional-id"):
            text = f"transactional-id {operation_word(p.operation)} (asked of {PROBE_ID})"
            if probe.may_describe_transactional_ids is True:
                out.append(Finding(role, "ok", text))
            elif probe.may_describe_transactional_ids is False:
                # Best effort in the snapshot: CM-TXN-1 then dates open transactions from the
                # record at the last stable offset, unnamed.
                out.append(
                    Finding(
                        role,
                        "warn",
                        f"{text} withheld: {p.why} are left unnamed",
                        _grant("transactional-id", p.operation),
                    )
                )
            else:
                out.append(Finding(role, "warn", f"{text}: unknown ({probe.detail})"))
    return out


def _topic_findings(
    cfg: AuditConfig, role: str, admin: KafkaAdmin, listed: list[str], scoped: list[str]
) -> list[Finding]:
    if not scoped:
        text = (
            f"no topic in scope: the cluster lists {len(listed)} topics to the auditor and none is in "
            f"scope.topics ({cfg.scope.topics_shown()})"
        )
        fix = (
            "check the patterns, and that the auditor's principal may Describe the topics "
            "(Kafka lists only those)"
        )
        # A destination may not hold the replicas yet; a source without topics leaves nothing to audit.
        return [Finding(role, "fail" if role == "source" else "warn", text, fix)]
    asked = scoped[:TOPIC_SAMPLE]
    ops = admin.authorized_topic_operations(asked)
    sample = f" (the first {len(asked)} by name)" if len(asked) < len(scoped) else ""
    out = [Finding(role, "ok", f"{len(scoped)} topic{'s' if len(scoped) > 1 else ''} in scope{sample}")]
    unknown = [t for t, o in ops.items() if o is None]
    if unknown:
        out.append(
            Finding(
                role,
                "warn",
                f"the cluster would not say what the auditor may do on {len(unknown)} topics "
                f"({_names(unknown)})",
            )
        )
    for p in _needed(cfg, "topic"):
        withheld = [t for t, o in ops.items() if o is not None and not _allows(o, p.operation)]
        if withheld:
            out.append(
                Finding(
                    role,
                    "fail",
                    f"topic {operation_word(p.operation)} withheld on {len(withheld)} of {len(asked)} "
                    f"in-scope topics ({_names(withheld)}): {p.why}",
                    _grant("topic", p.operation),
                )
            )
        else:
            out.append(
                Finding(role, "ok", f"topic {operation_word(p.operation)} on every in-scope topic{sample}")
            )
    return out


def _mm2_topic_findings(
    cfg: AuditConfig, role: Literal["source", "destination"], admin: KafkaAdmin, listed: list[str]
) -> list[Finding]:
    """Mode mm2: MirrorMaker 2's offset syncs and checkpoints, which the snapshot reads
    record by record where they live: Describe and Read on each."""
    from audit.collect.metadata.mm2_topics import mm2_topics_on

    out: list[Finding] = []
    for topic in mm2_topics_on(role, cfg.mirror.mm2):
        if topic not in listed:
            out.append(
                Finding(
                    role,
                    "warn",
                    f"MirrorMaker 2's {topic} is not visible: not made yet, or Describe on it withheld",
                    "check mirror.mm2 in the config, and grant topic Describe and Read on it",
                )
            )
            continue
        ops = admin.authorized_topic_operations([topic]).get(topic)
        if ops is None:
            out.append(Finding(role, "warn", f"the cluster would not say what the auditor may do on {topic}"))
        elif _allows(ops, "READ"):
            out.append(Finding(role, "ok", f"topic Read on MirrorMaker 2's {topic}"))
        else:
            out.append(
                Finding(
                    role,
                    "fail",
                    f"topic Read withheld on MirrorMaker 2's {topic}: its records are what the mm2 "
                    "invariants check",
                    _grant("topic", "READ"),
                )
            )
    return out


def _names(topics: list[str], shown: int = 3) -> str:
    more = f", and {len(topics) - shown} more" if len(topics) > shown else ""
    return ", ".join(topics[:shown]) + more


def local_findings(cfg: AuditConfig) -> list[Finding]:
    """Java and Spark (for the Spark jobs), the record reader the config resolves to, and
    the output root (looked at, not written)."""
    from audit.errors import JavaError
    from audit.java_runtime import find_java

    out: list[Finding] = []
    try:
        out.append(Finding("local", "ok", f"Java: {find_java()} (17 or later)"))
    except JavaError as exc:
        out.append(Finding("local", "fail", f"{exc}: nightly and audit run Spark on it (readiness does not)"))
    try:
        import pyspark

        out.append(Finding("local", "ok", f"pyspark {pyspark.__version__}"))
    except ImportError as exc:
        out.append(Finding("local", "fail", f"pyspark does not import ({exc})", "reinstall the package"))
    out.append(_reader_finding(cfg))
    out.append(_output_finding(cfg))
    return out


def _reader_finding(cfg: AuditConfig) -> Finding:
    from audit.collect.records import native
    from audit.collect.records.read import resolve_reader

    clients = {side: cfg.cluster(side).client_settings() for side in ("source", "destination")}
    try:
        reader = resolve_reader(clients, cfg.records)
    except AuditError as exc:
        return Finding("local", "fail", f"records reader: {exc}")
    if native.load() is None:
        return Finding(
            "local",
            "warn",
            f"records reader: confluent-kafka ({native.MODULE} is not installed: record scans run "
            "several times slower)",
            native.INSTALL,
        )
    return Finding("local", "ok", f"records reader: {reader} (records.reader: {cfg.records.reader})")


def _output_finding(cfg: AuditConfig) -> Finding:
    root = local_path(cfg.output.root)
    existing = root
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    made = "" if existing == root else f" (to be made in {existing})"
    if existing.is_dir() and os.access(existing, os.W_OK | os.X_OK):
        return Finding("local", "ok", f"output root {root}{made} writable")
    what = "not a directory" if not existing.is_dir() else "not writable by this user"
    return Finding(
        "local",
        "fail",
        f"output root {root}: {existing} is {what}",
        "set output.root to a directory of your own",
    )


def problems(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.status == "fail"]
