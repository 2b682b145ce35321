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
import math
import os
import re
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import yaml

from audit.config import (
    AuditConfig,
    BatchSourceConfig,
    ClusterConfig,
)
from audit.config_checks import KeyProblem, check, join
from audit.errors import ConfigError
from audit.paths import config_path, local_path
from audit.redaction import is_secret_path, redact_uri

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
    except KeyProblem as exc:
        # Whatever a check quoted, no URL in the line shows credentials, query or fragment.
        raise ConfigError(redact_uri(f"config file {origin}: {exc}")) from None
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


def _expand_env(value: Any, path: str, env: Mapping[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _expand_env(v, join(path, str(k)), env) for k, v in value.items()}
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
        raise KeyProblem(
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


def _given(value: Any, path: str) -> str:
    """A value a config error quotes: the value of a key that holds secrets never, whatever
    its type (a webhook URL given as a list is still the URL), only what it is; any
    other value with the URLs in it shown by the redaction rule."""
    if is_secret_path(path):
        return f"a {_value_kind(value)} (not shown: {path} holds secrets)"
    return redact_uri(repr(value))


def _value_kind(value: Any) -> str:
    return {dict: "mapping", list: "list", str: "string", bool: "boolean", int: "integer"}.get(
        type(value), type(value).__name__
    )


def _build(cls: type[Any], data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise KeyProblem(path, f"expected a mapping, got {type(data).__name__}")
    hints = get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        key_s = str(key)
        if key_s not in fields:
            close = difflib.get_close_matches(key_s, list(fields), n=1)
            hint = (
                f" (did you mean '{join(path, close[0])}'?)"
                if close
                else f" (known keys: {', '.join(fields)})"
            )
            raise KeyProblem(join(path, key_s), f"unknown key{hint}")
        kwargs[key_s] = _convert(value, hints[key_s], join(path, key_s))
    for name, f in fields.items():
        if (
            name not in kwargs
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        ):
            raise KeyProblem(join(path, name), "required key is missing")
    obj = cls(**kwargs)
    check(obj, path)
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
            raise KeyProblem(path, f"must be one of {_type_name(tp)}, got {_given(value, path)}")
        return value
    if origin is tuple:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise KeyProblem(path, f"expected a list, got {type(value).__name__}")
        (item_tp, _ellipsis) = get_args(tp)
        return tuple(_convert(v, item_tp, f"{path}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise KeyProblem(path, f"expected a mapping, got {type(value).__name__}")
        out: dict[str, str] = {}
        for k, v in value.items():
            if isinstance(v, dict | list) or v is None:
                raise KeyProblem(join(path, str(k)), "expected a scalar value")
            out[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
        return out
    if dataclasses.is_dataclass(tp):
        return _build(tp, {} if value is None else value, path)  # type: ignore[arg-type]
    if tp is bool:
        if not isinstance(value, bool):
            raise KeyProblem(path, f"expected true or false, got {_given(value, path)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise KeyProblem(path, f"expected an integer, got {_given(value, path)}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise KeyProblem(path, f"expected a number, got {_given(value, path)}")
        # YAML's .nan and .inf are numbers, but no setting means them: NaN compares false
        # with every bound a section checks ("<= 0" lets it through to a socket timeout).
        if not math.isfinite(value):
            raise KeyProblem(path, f"expected a finite number, got {value}")
        return float(value)
    if tp is str:
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise KeyProblem(path, f"expected a string, got {_given(value, path)}")
        return str(value)
    raise TypeError(f"unsupported config type {tp!r} at {path}")  # a bug in this module
