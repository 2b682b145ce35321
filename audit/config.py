"""Configuration: YAML validated into frozen, typed objects.

Why hand-rolled instead of a schema library: the checks we need are few (types, ranges,
regexes, unknown keys) and the one thing that matters to an operator at 3 a.m. is a
one-line message naming the exact key path (``thresholds.max_lag_recordz``), with a
suggestion. The loader walks the dataclass tree and reports the first problem that way.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import yaml

from audit import regex
from audit.errors import ConfigError
from audit.paths import config_path, local_path

Mode = Literal["cluster-mirroring", "mm2"]

REDACTED = "***"

# Client property names whose values are secrets (librdkafka / Java client spellings).
_SECRET_KEY = re.compile(
    r"(password|passwd|secret|token|jaas|credential|private|api[._-]?key|(^|[._-])key$|key\.pem|"
    r"keystore\.key|keystore\.certificate\.chain|bearer)",
    re.IGNORECASE,
)

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

_ENV_REF = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def is_secret_key(key: str) -> bool:
    """True for client properties whose values must never be printed, logged or stored."""
    return bool(_SECRET_KEY.search(key))


_USERINFO = re.compile(r"(//)[^/@\s]+@")


def redact_uri(uri: str) -> str:
    """A path or URI without credentials (``s3a://key:secret@bucket`` -> ``s3a://***@bucket``)."""
    return _USERINFO.sub(r"\1***@", uri)


def redact_properties(props: Mapping[str, str]) -> dict[str, str]:
    """A copy of client properties with every secret value replaced by ``***``."""
    return {k: (REDACTED if is_secret_key(k) else v) for k, v in props.items()}


@dataclass(frozen=True)
class ClusterConfig:
    """How to reach one cluster. ``properties`` are librdkafka client settings."""

    bootstrap_servers: str
    properties: dict[str, str] = field(default_factory=dict)
    timeout_seconds: float = 30.0
    # Bound on concurrent per-group admin calls (list_consumer_group_offsets is one group a call).
    max_concurrent_requests: int = 8

    def client_settings(self) -> dict[str, str]:
        """Settings for a confluent-kafka client, secrets included: never log the result."""
        return {"bootstrap.servers": self.bootstrap_servers, **self.properties}

    def redacted(self) -> dict[str, Any]:
        return {
            "bootstrap_servers": self.bootstrap_servers,
            "properties": redact_properties(self.properties),
            "timeout_seconds": self.timeout_seconds,
            "max_concurrent_requests": self.max_concurrent_requests,
        }

    def secret_values(self) -> list[str]:
        return [v for k, v in self.properties.items() if is_secret_key(k) and v]


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
    """Invariant thresholds; the defaults are DESIGN.md's."""

    max_lag_records: int = 10000
    max_lag_seconds: float = 300.0
    epoch_headroom: int = 3
    group_sync_tolerance_records: int = 0
    max_open_txn_seconds: float = 900.0


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
    offset_syncs_topic: str | None = None  # default mm2-offset-syncs.<target alias>.internal
    checkpoints_topic: str | None = None  # default <source alias>.checkpoints.internal (on the target)

    def offset_syncs_topic_name(self) -> str:
        return self.offset_syncs_topic or f"mm2-offset-syncs.{self.target_alias}.internal"

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
    # Mismatching chunks narrowed to their first divergent record per run.
    narrow_max_chunks: int = 50
    timeout_seconds: float = 120.0  # a range must make progress within this
    # Who reads and checksums the records: "native" (the compiled reader, librdkafka without
    # a Python object per record, package mirror-audit-native), "python" (confluent-kafka),
    # "auto" (native where installed and able to use the cluster's settings). Equal rows.
    reader: Literal["auto", "native", "python"] = "auto"

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


@dataclass(frozen=True)
class OutputConfig:
    # Where runs are written; relative to the configuration file's directory (without a
    # configuration file: to the current directory).
    root: str = "reports"


@dataclass(frozen=True)
class ValidationConfig:
    """Where the Great Expectations suites come from: an operator's own directory of
    ``cm_*.json`` / ``mm2_*.json`` suites, or (None) ``$MIRROR_AUDIT_EXPECTATIONS``, else
    the suites shipped with the package."""

    expectations_dir: str | None = None


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

    def cluster(self, role: Literal["source", "destination"]) -> ClusterConfig:
        """The named cluster, or a config error saying which section to add."""
        cfg = self.source if role == "source" else self.destination
        if cfg is None:
            raise ConfigError(f"the configuration has no '{role}' section: add {role}.bootstrap_servers")
        return cfg

    def redacted(self) -> dict[str, Any]:
        """The configuration as plain data with every secret replaced: safe to print or store."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, ClusterConfig):
                out[f.name] = value.redacted()
            elif dataclasses.is_dataclass(value) and not isinstance(value, type):
                out[f.name] = _plain(dataclasses.asdict(value))
            else:
                out[f.name] = value
        return out

    def secret_values(self) -> list[str]:
        values: list[str] = []
        for c in (self.source, self.destination):
            if c is not None:
                values.extend(c.secret_values())
        return values


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------- loading


def load_config(path: str | os.PathLike[str] | None, env: Mapping[str, str] | None = None) -> AuditConfig:
    """Read, expand and validate a YAML file; ``None`` gives the defaults.

    Paths inside the file (``output.root``, ``segments.*.paths``,
    ``validation.expectations_dir``, client properties naming files such as
    ``ssl.ca.location``) are taken relative to the file's directory and made absolute here."""
    if path is None:
        return AuditConfig()
    p = local_path(path)
    if p.is_dir():
        raise ConfigError(f"config file {p} is a directory: give the YAML file inside it")
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {p} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"config file {p} cannot be read: {exc.strerror}") from exc
    return parse_config(text, origin=str(p), env=os.environ if env is None else env, base_dir=p.parent)


def parse_config(
    text: str,
    origin: str = "<config>",
    env: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> AuditConfig:
    """``base_dir``: the directory relative paths in the text are taken from (None: left
    as written, for callers that resolve them later against the current directory)."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"config file {origin} is not valid YAML{where}: {problem}") from exc
    if raw is None:
        raw = {}
    try:
        expanded = _expand_env(raw, "", os.environ if env is None else env)
        cfg: AuditConfig = _build(AuditConfig, expanded, "")
    except _KeyProblem as exc:
        raise ConfigError(f"config file {origin}: {exc}") from None
    return cfg if base_dir is None else anchor_paths(cfg, base_dir)


# librdkafka client properties whose values are files (ssl.ca.location,
# ssl.certificate.location, ssl.key.location, ssl.keystore.location, ssl.crl.location,
# sasl.kerberos.keytab); ``probe`` is ssl.ca.location's word for the system's CAs.
_FILE_PROPERTY = re.compile(r"(^|\.)location$|^sasl\.kerberos\.keytab$")


def anchor_paths(cfg: AuditConfig, base: Path) -> AuditConfig:
    """The configuration with every path in it made absolute from ``base`` (``~`` expanded;
    URIs such as ``s3a://`` untouched)."""

    def cluster(c: ClusterConfig | None) -> ClusterConfig | None:
        if c is None:
            return None
        props = {
            k: config_path(v, base) if _FILE_PROPERTY.search(k) and v and v != "probe" else v
            for k, v in c.properties.items()
        }
        return dataclasses.replace(c, properties=props)

    def side(b: BatchSourceConfig) -> BatchSourceConfig:
        return dataclasses.replace(b, paths=tuple(config_path(p, base) for p in b.paths))

    seg = cfg.segments
    expectations = cfg.validation.expectations_dir
    return dataclasses.replace(
        cfg,
        source=cluster(cfg.source),
        destination=cluster(cfg.destination),
        segments=dataclasses.replace(seg, source=side(seg.source), destination=side(seg.destination)),
        output=dataclasses.replace(cfg.output, root=config_path(cfg.output.root, base)),
        validation=dataclasses.replace(
            cfg.validation, expectations_dir=None if expectations is None else config_path(expectations, base)
        ),
    )


class _KeyProblem(Exception):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '<top level>'}: {message}")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _expand_env(value: Any, path: str, env: Mapping[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _expand_env(v, _join(path, str(k)), env) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand_env(v, f"{path}[{i}]", env) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def repl(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name, default = m.group(1), m.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise _KeyProblem(
            path, f"environment variable {name} is not set (use ${{{name}:-default}} for a default)"
        )

    return _ENV_REF.sub(repl, value)


def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in get_args(tp) if a is not type(None))
    if origin is tuple:
        return "a list"
    if origin is dict:
        return "a mapping"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false"}.get(tp, str(tp))


def _build(cls: type[Any], data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise _KeyProblem(path, f"expected a mapping, got {type(data).__name__}")
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        key_s = str(key)
        if key_s not in fields:
            close = difflib.get_close_matches(key_s, list(fields), n=1)
            hint = (
                f" (did you mean '{_join(path, close[0])}'?)"
                if close
                else f" (known keys: {', '.join(fields)})"
            )
            raise _KeyProblem(_join(path, key_s), f"unknown key{hint}")
        kwargs[key_s] = _convert(value, hints[key_s], _join(path, key_s))
    for name, f in fields.items():
        if (
            name not in kwargs
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        ):
            raise _KeyProblem(_join(path, name), "required key is missing")
    obj = cls(**kwargs)
    _check(obj, path)
    return obj


def _convert(value: Any, tp: Any, path: str) -> Any:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if value is None:
            return None
        return _convert(value, args[0], path)
    if origin is Literal:
        if value not in get_args(tp):
            raise _KeyProblem(path, f"must be one of {_type_name(tp)}, got {value!r}")
        return value
    if origin is tuple:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise _KeyProblem(path, f"expected a list, got {type(value).__name__}")
        (item_tp, _ellipsis) = get_args(tp)
        return tuple(_convert(v, item_tp, f"{path}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise _KeyProblem(path, f"expected a mapping, got {type(value).__name__}")
        out: dict[str, str] = {}
        for k, v in value.items():
            if isinstance(v, dict | list) or v is None:
                raise _KeyProblem(_join(path, str(k)), "expected a scalar value")
            out[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
        return out
    if dataclasses.is_dataclass(tp):
        return _build(tp, {} if value is None else value, path)  # type: ignore[arg-type]
    if tp is bool:
        if not isinstance(value, bool):
            raise _KeyProblem(path, f"expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _KeyProblem(path, f"expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _KeyProblem(path, f"expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise _KeyProblem(path, f"expected a string, got {value!r}")
        return str(value)
    raise TypeError(f"unsupported config type {tp!r} at {path}")  # a bug in this module


def _check(obj: Any, path: str) -> None:
    """Semantic checks that types alone cannot express."""
    if isinstance(obj, Thresholds):
        for f in dataclasses.fields(obj):
            if getattr(obj, f.name) < 0:
                raise _KeyProblem(_join(path, f.name), "must not be negative")
    elif isinstance(obj, PatternSet):
        for kind in ("include", "exclude"):
            for i, pattern in enumerate(getattr(obj, kind)):
                try:
                    regex.check(pattern)
                except regex.PatternError as exc:
                    raise _KeyProblem(
                        f"{_join(path, kind)}[{i}]", f"invalid regex {pattern!r}: {exc}"
                    ) from None
    elif isinstance(obj, Mm2Config):
        for name in ("source_alias", "target_alias", "separator"):
            if not getattr(obj, name):
                raise _KeyProblem(_join(path, name), "must not be empty")
        if obj.source_alias == obj.target_alias:
            raise _KeyProblem(_join(path, "target_alias"), "must differ from source_alias")
    elif isinstance(obj, BatchSourceConfig):
        if obj.read == "files" and not obj.paths:
            raise _KeyProblem(_join(path, "paths"), "read: files needs at least one path")
        if obj.read != "files" and obj.paths:
            raise _KeyProblem(
                _join(path, "paths"), f"paths are only read with read: files (read is {obj.read!r})"
            )
    elif isinstance(obj, TopicRecordScope):
        try:
            regex.check(obj.pattern)
        except regex.PatternError as exc:
            raise _KeyProblem(_join(path, "pattern"), f"invalid regex {obj.pattern!r}: {exc}") from None
        if obj.last_offsets < 1 or obj.window_seconds <= 0:
            raise _KeyProblem(path, "last_offsets and window_seconds must be positive")
    elif isinstance(obj, RecordsConfig):
        for name in ("chunk_records", "split_records", "narrow_max_chunks"):
            if getattr(obj, name) < 1:
                raise _KeyProblem(_join(path, name), "must be positive")
        if obj.chunk_records > 2**31 - 1:
            # Gap ranges are hashed as 32-bit offsets into their chunk (record_chunks).
            raise _KeyProblem(_join(path, "chunk_records"), "must be at most 2147483647")
        if obj.split_records % obj.chunk_records:
            raise _KeyProblem(_join(path, "split_records"), "must be a multiple of chunk_records")
        for name in ("max_records_per_run", "max_bytes_per_run", "resample_chunks"):
            if getattr(obj, name) < 0:
                raise _KeyProblem(_join(path, name), "must not be negative")
        if obj.timeout_seconds <= 0:
            raise _KeyProblem(_join(path, "timeout_seconds"), "must be positive")
    elif isinstance(obj, SegmentsConfig):
        for name in ("split_bytes", "split_offsets", "fetch_max_bytes"):
            if getattr(obj, name) < 1:
                raise _KeyProblem(_join(path, name), "must be positive")
    elif isinstance(obj, ClusterConfig):
        if not obj.bootstrap_servers.strip():
            raise _KeyProblem(_join(path, "bootstrap_servers"), "must not be empty")
        if obj.timeout_seconds <= 0:
            raise _KeyProblem(_join(path, "timeout_seconds"), "must be positive")
        if obj.max_concurrent_requests < 1:
            raise _KeyProblem(_join(path, "max_concurrent_requests"), "must be at least 1")
        if "bootstrap.servers" in obj.properties:
            raise _KeyProblem(_join(path, "properties.bootstrap.servers"), "set bootstrap_servers instead")
