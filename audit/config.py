"""Configuration: the frozen, typed sections a YAML file is validated into, with their
defaults and what each section knows of itself (scope matching, redaction).

Reading and validating a file is ``audit.config_file``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from audit import regex
from audit.errors import ConfigError
from audit.redaction import config_secrets, is_secret_key, redact_properties, redacted_config

# The client settings' key that carries a cluster's token provider (``module:function``),
# resolved by the collectors (``audit.collect.logins.librdkafka_config``): the configuration
# names it, and never imports a collector.
TOKEN_PROVIDER = "mirror-audit.token_provider"

Mode = Literal["cluster-mirroring", "mm2"]

# Topics that belong to Kafka, Connect, MirrorMaker 2 or Confluent itself, never to users.
INTERNAL_TOPIC_PATTERNS: tuple[str, ...] = (
    r"__.*",
    r".*\.internal",
    r"_confluent.*",
    r"connect-(configs|offsets|status)",
)

# MirrorMaker 2's own topics besides the *.internal ones (offset syncs, checkpoints, its
# connect topics): its heartbeats (written all the time, so never "quiet") and their
# replicas. Out of scope in mode mm2 unless scope.include_internal_topics.
MM2_INTERNAL_TOPIC_PATTERNS: tuple[str, ...] = (r"heartbeats", r".*\.heartbeats")


@dataclass(frozen=True)
class ClusterConfig:
    """How to reach one cluster. ``properties`` are librdkafka client settings."""

    bootstrap_servers: str
    properties: dict[str, str] = field(default_factory=dict)
    timeout_seconds: float = 30.0
    # Bound on concurrent per-group admin calls (list_consumer_group_offsets is one group a call).
    max_concurrent_requests: int = 8
    # An OAUTHBEARER login's token source for both clients: a Python callable
    # "module:function" returning (token, expiry seconds since the epoch); see
    # audit/collect/logins.py (audit.collect.logins:aws_msk_iam for Amazon MSK's IAM).
    # Code the configuration names: checked for shape at load, imported and run only where
    # a client of this cluster is made.
    token_provider: str | None = None
    # An OIDC token endpoint (properties' sasl.oauthbearer.token.endpoint.url) must be
    # https (the client secret goes to it in HTTP Basic); true allows http where the
    # network is trusted, as output.pushgateway_allow_plaintext_credentials does.
    token_endpoint_allow_plaintext_credentials: bool = False

    def client_settings(self) -> dict[str, str]:
        """Settings for a client, secrets included: never log the result. A token provider
        travels under ``logins.TOKEN_PROVIDER``; ``logins.librdkafka_config`` resolves it
        for confluent-kafka, ``transactions.kafka_python_from`` for kafka-python."""
        settings = {"bootstrap.servers": self.bootstrap_servers, **self.properties}
        if self.token_provider:
            settings[TOKEN_PROVIDER] = self.token_provider
        return settings

    def redacted(self) -> dict[str, Any]:
        return {
            "bootstrap_servers": self.bootstrap_servers,
            "properties": redact_properties(self.properties),
            "timeout_seconds": self.timeout_seconds,
            "max_concurrent_requests": self.max_concurrent_requests,
            "token_provider": self.token_provider,
            "token_endpoint_allow_plaintext_credentials": self.token_endpoint_allow_plaintext_credentials,
        }


@dataclass(frozen=True)
class PatternSet:
    """Include/exclude regexes, each matched against the whole name."""

    include: tuple[str, ...] = (".*",)
    exclude: tuple[str, ...] = ()

    def matches(self, name: str) -> bool:
        return regex.any_full_match(self.include, name) and not regex.any_full_match(self.exclude, name)


@dataclass(frozen=True)
class ScopeConfig:
    topics: PatternSet = field(default_factory=PatternSet)
    groups: PatternSet = field(default_factory=PatternSet)
    include_internal_topics: bool = False

    def topics_shown(self) -> str:
        """The topic patterns as an error message names them: ``include [...], exclude [...]``."""
        shown = f"include {list(self.topics.include)}"
        return shown + (f", exclude {list(self.topics.exclude)}" if self.topics.exclude else "")

    def topic_in_scope(self, topic: str) -> bool:
        if not self.include_internal_topics and regex.any_full_match(INTERNAL_TOPIC_PATTERNS, topic):
            return False
        return self.topics.matches(topic)

    def mm2_topic_in_scope(self, topic: str) -> bool:
        """Mode mm2: MirrorMaker 2's heartbeats topics and their replicas are left out too."""
        if not self.include_internal_topics and regex.any_full_match(MM2_INTERNAL_TOPIC_PATTERNS, topic):
            return False
        return self.topic_in_scope(topic)

    def group_in_scope(self, group_id: str) -> bool:
        return self.groups.matches(group_id)

    def group_excluded(self, group_id: str) -> bool:
        """Named by an exclude pattern (as opposed to merely not included)."""
        return regex.any_full_match(self.groups.exclude, group_id)


@dataclass(frozen=True)
class Thresholds:
    """Invariant thresholds and their defaults (docs/invariants.md names each invariant's)."""

    max_lag_records: int = 10000
    max_lag_seconds: float = 300.0
    epoch_headroom: int = 3
    group_sync_tolerance_records: int = 0
    # CM-GROUP-4: records one group partition would never see after a failover (not yet
    # processed, already deleted on the destination, still on the source).
    max_unseen_records: int = 0
    max_open_txn_seconds: float = 900.0
    # CM-FAILBACK-1: records mirroring back may truncate from a partition of the old source.
    max_failback_truncation_records: int = 0
    # MM2-POS-1: a MirrorMaker 2 behind on a partition warns when its position is fewer than
    # this many records above the source's log start (retention is about to delete records
    # it has not copied).
    mm2_position_margin_records: int = 1000


@dataclass(frozen=True)
class Mm2Config:
    """How the audited MirrorMaker 2 names things: its own settings of the same meaning.

    The internal topic names follow from the aliases unless given explicitly (a replication
    policy of your own, or internal topics with a custom separator)."""

    source_alias: str = "source"
    target_alias: str = "target"
    # "default" (DefaultReplicationPolicy: <source alias><separator><topic>) or "identity"
    # (IdentityReplicationPolicy: the topic keeps its name).
    replication_policy: Literal["default", "identity"] = "default"
    separator: str = "."  # replication.policy.separator
    # offset-syncs.topic.location: the cluster that holds the offset-syncs topic.
    offset_syncs_topic_location: Literal["source", "target"] = "source"
    # sync.group.offsets.enabled: MM2 writes translated offsets into the target's groups
    # (MM2-GROUP-1 checks them only then).
    sync_group_offsets: bool = False
    # <source>.consumer.isolation.level: what MirrorMaker 2's consumer reads, so what it
    # copies (read_uncommitted, its default: aborted records too; markers never).
    consumer_isolation: Literal["read_uncommitted", "read_committed"] = "read_uncommitted"
    # exactly.once.source.support=enabled (Connect 3.5+) with read_committed: duplicates on
    # the replica fail MM2-DATA-3 instead of warning (at-least-once delivery makes them).
    exactly_once: bool = False
    # default mm2-offset-syncs.<alias>.internal, named after the cluster it is not on:
    # the target alias where it lives on the source, the source alias where on the target
    # (MirrorSourceConfig.offsetSyncsTopic).
    offset_syncs_topic: str | None = None
    checkpoints_topic: str | None = None  # default <source alias>.checkpoints.internal (on the target)
    # Kafka Connect's offsets topic, where MirrorSourceConnector's tasks commit their source
    # positions (MM2-POS-1): default mm2-offsets.<source alias>.internal, MirrorMaker 2's
    # dedicated mode's, on the target; a Connect cluster's offset.storage.topic otherwise.
    connect_offsets_topic: str | None = None
    connect_offsets_topic_location: Literal["source", "target"] = "target"
    source_connector: str = "MirrorSourceConnector"  # the connector's name in Connect

    def offset_syncs_topic_name(self) -> str:
        other = self.target_alias if self.offset_syncs_topic_location == "source" else self.source_alias
        return self.offset_syncs_topic or f"mm2-offset-syncs.{other}.internal"

    def connect_offsets_topic_name(self) -> str:
        return self.connect_offsets_topic or f"mm2-offsets.{self.source_alias}.internal"

    def checkpoints_topic_name(self) -> str:
        return self.checkpoints_topic or f"{self.source_alias}.checkpoints.internal"

    def source_topic(self, remote_topic: str) -> str | None:
        """The source topic a target topic replicates, or None if it is not a replica of
        this source (the inverse of ``remote_topic``)."""
        if self.replication_policy == "identity":
            return remote_topic
        prefix = f"{self.source_alias}{self.separator}"
        return remote_topic[len(prefix) :] if remote_topic.startswith(prefix) else None

    def remote_topic(self, source_topic: str) -> str:
        """The replica's name on the target for a source topic."""
        if self.replication_policy == "identity":
            return source_topic
        return f"{self.source_alias}{self.separator}{source_topic}"


@dataclass(frozen=True)
class MirrorConfig:
    """What the audited mirror promises beyond equal offsets."""

    # KIP-1279 Cluster Mirroring keeps source topic IDs; Cluster Linking and the sandbox
    # emulator do not, so CM-TOPIC-1 compares topic IDs only when this is true.
    preserves_topic_ids: bool = False
    # Whether destination batches keep the source batches' partition leader epochs (the
    # field outside the CRC). KIP-1279's current design does; the sandbox emulator cannot.
    # CM-EPOCH-4 compares the epochs per batch only when this is true.
    preserves_batch_epochs: bool = False
    # mode: mm2 only.
    mm2: Mm2Config = field(default_factory=Mm2Config)
    # The mirror's own state per partition, as JSON (KIP-1279's DescribeClusterMirrors
    # response, or kafka-cluster-mirrors.sh --describe --json): imported into the
    # destination's snapshot (CM-FAILOVER-1, failover verify, failback readiness).
    state_file: str | None = None
    # CM-TIER-1's severity for an in-scope destination topic with tiered storage enabled:
    # "fail" for KIP-1279 (its prototype moves such partitions to FAILED); "warn" for a
    # mirror that supports a tiered destination (say so only where its vendor does).
    tiered_destination: Literal["fail", "warn"] = "fail"


@dataclass(frozen=True)
class BatchSourceConfig:
    """Where one side's record batches come from for the batch-level checks: ``wire``
    (Fetch requests to the live cluster, no consumer group), ``files`` (log segment files
    under ``paths``, any path Spark can list: a broker's log dirs, a backup, object
    storage) or ``none``."""

    read: Literal["none", "wire", "files"] = "none"
    paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class SegmentsConfig:
    """Batch-level collection for the nightly job (CM-DATA-2, CM-TXN-2, CM-TXN-3,
    CM-EPOCH-4). Off unless a side says where to read."""

    source: BatchSourceConfig = field(default_factory=BatchSourceConfig)
    destination: BatchSourceConfig = field(default_factory=BatchSourceConfig)
    deep: bool = False  # recompute every batch's CRC-32C (reads every byte)
    split_bytes: int = 128 * 1024 * 1024  # files: bytes of segment per Spark task
    split_offsets: int = 1_000_000  # wire: offsets of a partition per Spark task
    fetch_max_bytes: int = 8 * 1024 * 1024  # wire: bytes asked for per Fetch request

    def enabled(self) -> bool:
        return self.source.read != "none" or self.destination.read != "none"


@dataclass(frozen=True)
class TopicRecordScope:
    """How much of matching topics' records a run verifies: ``full`` (everything both
    clusters hold), ``last`` (the newest ``last_offsets`` of each partition) or ``window``
    (records of the last ``window_seconds``)."""

    pattern: str = ".*"
    scope: Literal["full", "last", "window"] = "full"
    last_offsets: int = 1_000_000
    window_seconds: float = 86_400.0


@dataclass(frozen=True)
class RecordsConfig:
    """Record-level verification (CM-DATA-1; CM-TXN-2 and CM-EPOCH-4 at record level) for
    the nightly job and 'mirror-audit records scan'."""

    enabled: bool = False
    chunk_records: int = 10_000  # offsets per checksum chunk
    split_records: int = 1_000_000  # a partition cut every so many offsets, so Spark tasks share it
    isolation: Literal["read_uncommitted", "read_committed"] = "read_uncommitted"
    # Per-topic scope, first matching pattern wins; topics matching none are verified fully.
    topics: tuple[TopicRecordScope, ...] = ()
    # Budget per run (0: none): offsets scanned per side, new data first, then re-checks.
    max_records_per_run: int = 0
    # The same in bytes read per side (0: none), estimated per partition as its size on the
    # source's disks (DescribeLogDirs) over its offsets. Both budgets apply when both are set.
    max_bytes_per_run: int = 0
    # Incremental: scan only what was added since the last verified offset of each
    # partition (kept in the output root), plus this many older chunks per partition,
    # round robin, so old data is re-verified over time. --full ignores the history.
    incremental: bool = True
    resample_chunks: int = 2
    # Mode mm2, incremental: the source offsets before where the last run left a partition
    # verified that are read again, never judged, so that a copy a restarted task wrote
    # again of one of them is a duplicate, not a record no source explains. Reaching further
    # back than MirrorMaker 2's offset commits (offset.flush.interval.ms of its traffic)
    # costs reads only; reaching less far calls older replays unexplained until --full.
    mm2_replay_lookback: int = 100_000
    # Mode mm2: keep every record's digest in the snapshots (record_digests), not only those
    # of the partitions whose matching as read may not serve (a read that stopped short, a
    # fallback): for comparing the snapshots again under another configuration, or row by
    # row. A row per record read: the scan's largest cost besides the read itself.
    mm2_keep_digests: bool = False
    # Mismatching chunks narrowed to their first divergent record per run.
    narrow_max_chunks: int = 50
    timeout_seconds: float = 120.0  # a range must make progress within this
    # Who reads and checksums the records: "batches" (raw record batches fetched by
    # kafka-python and walked by the compiled package mirror-audit-native, the fastest),
    # "native" (the compiled reader over librdkafka's messages), "python" (confluent-kafka),
    # "auto" (batches, else native, else python: the first installed and able to use the
    # clusters' settings). Equal rows.
    reader: Literal["auto", "batches", "native", "python"] = "auto"

    def scope_for(self, topic: str) -> TopicRecordScope:
        for t in self.topics:
            if regex.full_match(t.pattern, topic):
                return t
        return TopicRecordScope()


@dataclass(frozen=True)
class SparkConfig:
    master: str = "local[*]"
    app_name: str = "kafka-mirror-audit"
    conf: dict[str, str] = field(default_factory=dict)
    # Names (RE2, matched in full) of further Spark settings whose values are secrets,
    # beyond the rule every setting is held to (``is_secret_key``: *password*, *secret*,
    # *token*, *credential*, and Hadoop's *.key such as fs.s3a.access.key).
    secret_conf: tuple[str, ...] = ()
    # The C allocator of the Python workers (audit.worker_malloc): "auto" preloads mimalloc,
    # else jemalloc, where an executor has them (a record scan's librdkafka threads contend
    # on glibc malloc's arena locks); "system" never preloads; or a library's absolute path.
    worker_malloc: str = "auto"

    def is_secret_setting(self, name: str) -> bool:
        return is_secret_key(name) or regex.any_full_match(self.secret_conf, name)


@dataclass(frozen=True)
class OutputConfig:
    # Where runs are written; relative to the configuration file's directory (without a
    # configuration file: to the current directory).
    root: str = "reports"
    # How long a job waits for the output root's lock (audit.output_lock) held by another
    # run before it gives up with exit 2; 0: give up at once. readiness never waits.
    lock_wait_seconds: float = 0.0
    # How many earlier runs of the same cluster pair the report's history reads (since
    # when each violation is seen, what changed, the trend); runs are never deleted.
    history_runs: int = 365
    # Prometheus text-format metrics: every run writes RUN_DIR/metrics.prom; a path here
    # (a file in the node exporter's textfile collector directory) gets a copy, replaced
    # atomically; a Pushgateway URL gets them pushed (job "mirror_audit").
    metrics_textfile: str | None = None
    pushgateway_url: str | None = None
    # A Pushgateway URL with credentials must be https (basic auth over http sends them in
    # clear); true allows http where the network is trusted.
    pushgateway_allow_plaintext_credentials: bool = False
    # Great Expectations' Data Docs of a readiness check (every other job writes them):
    # off by default, as the check's answer is wanted in seconds before a failover and GX's
    # import alone takes about 2.5 s; its results are in summary.json,
    # validation/results.json and the report either way.
    readiness_data_docs: bool = False


@dataclass(frozen=True)
class WebhookConfig:
    """Where a notice is POSTed: a generic JSON webhook, or Slack's incoming-webhook format.
    The URL is a secret (a Slack webhook URL is its own credential): redacted and masked."""

    url: str
    format: Literal["json", "slack"] = "json"


@dataclass(frozen=True)
class NotifyConfig:
    """Notices to people (audit/report/notices.py): one for every run that ends FAIL, NO-GO,
    not drained or in an error; one on recovery (the first PASS or GO after one that was
    not); none for a PASS after a PASS; WARN per ``on_warn``. Sent after summary.json and
    the metrics are written; a failed notice is logged and counted (the run directory's
    notices.json, the metrics) and never changes the verdict, the exit code or summary.json."""

    webhooks: tuple[WebhookConfig, ...] = ()
    # WARN: "change" (when the run before was not a WARN), "always", or "never".
    on_warn: Literal["change", "always", "never"] = "change"
    # One wall-clock deadline per webhook for every attempt and pause together: a server
    # dripping its answer a byte at a time holds the run no longer than this.
    timeout_seconds: float = 10.0
    retries: int = 2
    # Shown instead of the report's path: this URL + the report's path under the output
    # root (where the output root is served over HTTP).
    report_base_url: str | None = None


@dataclass(frozen=True)
class ValidationConfig:
    """Where the Great Expectations suites come from: an operator's own directory of
    ``cm_*.json`` / ``mm2_*.json`` suites, or (None) ``$MIRROR_AUDIT_EXPECTATIONS``, else
    the suites shipped with the package."""

    expectations_dir: str | None = None


@dataclass(frozen=True)
class ReadinessConfig:
    """What a GO / NO-GO job accepts not to have checked. A job answers GO only when every
    invariant that gates it checked every in-scope row; ``accept_unchecked`` names the
    invariants whose unchecked rows it accepts (for a cluster that refuses a call the
    auditor cannot replace). Each accepted gap is printed on every run and kept in
    summary.json."""

    accept_unchecked: tuple[str, ...] = ()
    # Mode mm2: source topics whose known loss (MM2-SKIP-1: records MirrorMaker 2 passed over
    # without a copy) the operator has accepted: their gaps warn instead of failing, so a
    # readiness check can say GO, and the acceptance is printed on every run.
    accept_lost: tuple[str, ...] = ()
    # Readiness reports the latest nightly run's data-level results (CM-DATA-*, MM2-DATA-*:
    # it scans no records itself) with their age. Set, it also gates on them: NO-GO when no
    # nightly run checked them, the newest is older than this many hours, or it found one
    # failing or left rows unchecked. Unset (the default): reported, never gating.
    nightly_data_max_age_hours: float | None = None


@dataclass(frozen=True)
class JavaConfig:
    """Kafka's Java client, for what no Python client reads (share groups' start offsets):
    ``kafka_classpath`` is a Kafka installation's ``libs/`` directory or ``:``-separated
    jars; ``auto`` looks in ``$KAFKA_HOME/libs``, then in this tool's jar cache; ``off``
    never starts a JVM (share groups are then listed, not read, and counted unchecked)."""

    kafka_classpath: str = "auto"


@dataclass(frozen=True)
class AuditConfig:
    """The whole configuration. Clusters are optional: an offline audit needs none."""

    mode: Mode = "cluster-mirroring"
    source: ClusterConfig | None = None
    destination: ClusterConfig | None = None
    scope: ScopeConfig = field(default_factory=ScopeConfig)
    thresholds: Thresholds = field(default_factory=Thresholds)
    mirror: MirrorConfig = field(default_factory=MirrorConfig)
    segments: SegmentsConfig = field(default_factory=SegmentsConfig)
    records: RecordsConfig = field(default_factory=RecordsConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    validation: ValidationConfig = field(default_factory=ValidationConfig)
    readiness: ReadinessConfig = field(default_factory=ReadinessConfig)
    notify: NotifyConfig = field(default_factory=NotifyConfig)
    java: JavaConfig = field(default_factory=JavaConfig)

    def cluster(self, role: Literal["source", "destination"]) -> ClusterConfig:
        """The named cluster, or a config error saying which section to add."""
        cfg = self.source if role == "source" else self.destination
        if cfg is None:
            raise ConfigError(f"the configuration has no '{role}' section: add {role}.bootstrap_servers")
        return cfg

    def redacted(self) -> dict[str, Any]:
        """The configuration as plain data with every secret replaced: safe to print or
        store (``audit.redaction.SECRET_SETTINGS``)."""
        return redacted_config(self)

    def secret_values(self) -> list[str]:
        """Every secret value the configuration holds, for the log mask."""
        return config_secrets(self)
