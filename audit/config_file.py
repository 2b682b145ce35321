"""Configuration files: YAML read, ``${ENV}`` expanded, validated into ``AuditConfig``.

Why hand-rolled instead of a schema library: the checks we need are few (types, ranges,
regexes, unknown keys) and the one thing that matters to an operator at 3 a.m. is a
one-line message naming the exact key path (``thresholds.max_lag_recordz``), with a
suggestion. The loader walks the dataclass tree of ``audit.config`` and reports the first
problem that way. Paths in a file are taken from the file's directory.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import yaml

from audit import regex, worker_malloc
from audit.config import (
    AuditConfig,
    BatchSourceConfig,
    ClusterConfig,
    Mm2Config,
    NotifyConfig,
    OutputConfig,
    PatternSet,
    ReadinessConfig,
    RecordsConfig,
    SegmentsConfig,
    SparkConfig,
    Thresholds,
    TopicRecordScope,
    WebhookConfig,
    redact_url,
    split_url_credentials,
)
from audit.errors import ConfigError
from audit.paths import config_path, local_path

_ENV_REF = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


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


class _NoAliasLoader(yaml.SafeLoader):
    """PyYAML's safe loader without anchors and aliases: a configuration needs none, and a
    few hundred bytes of nested aliases (a "billion laughs") expand to gigabytes before a
    single key could be checked."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases (*name) are not allowed in a configuration", event.start_mark
            )
        return super().compose_node(parent, index)


def parse_config(
    text: str,
    origin: str = "<config>",
    env: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
) -> AuditConfig:
    """``base_dir``: the directory relative paths in the text are taken from (None: left
    as written, for callers that resolve them later against the current directory)."""
    try:
        raw = yaml.load(text, Loader=_NoAliasLoader)
    except RecursionError:
        raise ConfigError(f"config file {origin} is nested too deeply to be a configuration") from None
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
    state_file = cfg.mirror.state_file
    textfile = cfg.output.metrics_textfile
    return dataclasses.replace(
        cfg,
        source=cluster(cfg.source),
        destination=cluster(cfg.destination),
        segments=dataclasses.replace(seg, source=side(seg.source), destination=side(seg.destination)),
        mirror=dataclasses.replace(
            cfg.mirror, state_file=None if state_file is None else config_path(state_file, base)
        ),
        output=dataclasses.replace(
            cfg.output,
            root=config_path(cfg.output.root, base),
            metrics_textfile=None if textfile is None else config_path(textfile, base),
        ),
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


def _check_pushgateway(obj: OutputConfig, path: str) -> None:
    """A Pushgateway URL with credentials must use TLS: basic auth over http (or a URL
    without a scheme, which prometheus-client reads as http) sends them in clear."""
    if not obj.pushgateway_url:
        return
    _, user, _ = split_url_credentials(obj.pushgateway_url)
    insecure = not obj.pushgateway_url.lower().startswith("https://")
    if user is not None and insecure and not obj.pushgateway_allow_plaintext_credentials:
        raise _KeyProblem(
            _join(path, "pushgateway_url"),
            f"has credentials but no TLS ({redact_url(obj.pushgateway_url)}): basic auth over http sends "
            "them in clear; use https:// (or set output.pushgateway_allow_plaintext_credentials: true)",
        )


def _check(obj: Any, path: str) -> None:
    """Semantic checks that types alone cannot express."""
    if isinstance(obj, Thresholds):
        for f in dataclasses.fields(obj):
            if getattr(obj, f.name) < 0:
                raise _KeyProblem(_join(path, f.name), "must not be negative")
    elif isinstance(obj, ReadinessConfig):
        from audit.validate.invariants import known_ids

        known = known_ids()
        for i, inv_id in enumerate(obj.accept_unchecked):
            if inv_id not in known:
                close = difflib.get_close_matches(inv_id, sorted(known), n=1)
                hint = f" (did you mean {close[0]}?)" if close else " (see docs/invariants.md for the IDs)"
                where = f"{_join(path, 'accept_unchecked')}[{i}]"
                raise _KeyProblem(where, f"unknown invariant {inv_id!r}{hint}")
        if obj.nightly_data_max_age_hours is not None and not obj.nightly_data_max_age_hours > 0:
            raise _KeyProblem(_join(path, "nightly_data_max_age_hours"), "must be positive (hours)")
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
        for name in ("max_records_per_run", "max_bytes_per_run", "resample_chunks", "mm2_replay_lookback"):
            if getattr(obj, name) < 0:
                raise _KeyProblem(_join(path, name), "must not be negative")
        if obj.timeout_seconds <= 0:
            raise _KeyProblem(_join(path, "timeout_seconds"), "must be positive")
    elif isinstance(obj, SegmentsConfig):
        for name in ("split_bytes", "split_offsets", "fetch_max_bytes"):
            if getattr(obj, name) < 1:
                raise _KeyProblem(_join(path, name), "must be positive")
    elif isinstance(obj, SparkConfig):
        why = worker_malloc.check(obj.worker_malloc)
        if why:
            raise _KeyProblem(_join(path, "worker_malloc"), why)
        for i, pattern in enumerate(obj.secret_conf):
            try:
                regex.check(pattern)
            except regex.PatternError as exc:
                raise _KeyProblem(f"{_join(path, 'secret_conf')}[{i}]", f"invalid regex: {exc}") from None
    elif isinstance(obj, OutputConfig):
        _check_pushgateway(obj, path)
        if obj.lock_wait_seconds < 0:
            raise _KeyProblem(_join(path, "lock_wait_seconds"), "must not be negative (0: do not wait)")
        if obj.history_runs < 1:
            raise _KeyProblem(_join(path, "history_runs"), "must be at least 1")
    elif isinstance(obj, WebhookConfig):
        if not obj.url.lower().startswith(("https://", "http://")):
            raise _KeyProblem(_join(path, "url"), "must be an http:// or https:// URL")
    elif isinstance(obj, NotifyConfig):
        if obj.timeout_seconds <= 0:
            raise _KeyProblem(_join(path, "timeout_seconds"), "must be positive")
        if obj.retries < 0:
            raise _KeyProblem(_join(path, "retries"), "must not be negative")
    elif isinstance(obj, ClusterConfig):
        if not obj.bootstrap_servers.strip():
            raise _KeyProblem(_join(path, "bootstrap_servers"), "must not be empty")
        if obj.timeout_seconds <= 0:
            raise _KeyProblem(_join(path, "timeout_seconds"), "must be positive")
        if obj.max_concurrent_requests < 1:
            raise _KeyProblem(_join(path, "max_concurrent_requests"), "must be at least 1")
        if "bootstrap.servers" in obj.properties:
            raise _KeyProblem(_join(path, "properties.bootstrap.servers"), "set bootstrap_servers instead")
        if obj.token_provider is not None:
            from audit.collect.logins import check_spec, sasl_mechanism

            try:
                check_spec(obj.token_provider, _join(path, "token_provider"))
            except ConfigError as exc:
                raise _KeyProblem(_join(path, "token_provider"), str(exc).partition(": ")[2]) from None
            if sasl_mechanism(obj.properties) != "OAUTHBEARER":
                raise _KeyProblem(
                    _join(path, "token_provider"),
                    "is an OAUTHBEARER login: set properties.sasl.mechanism: OAUTHBEARER",
                )
