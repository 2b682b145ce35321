"""What counts as a secret, and how it is shown: client properties by name, URI userinfo,
HTTP URL passwords, webhook paths, and the configuration's settings that hold any of them
(``SECRET_SETTINGS``). The one rule for whatever leaves the process (report, summary.json,
manifests, Data Docs, metrics, logs, error lines); ``audit.config``'s sections and the log
mask (``audit.logs``) use it."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote, unquote

if TYPE_CHECKING:
    from audit.config import AuditConfig

REDACTED = "***"

# Client property names whose values are secrets (librdkafka / Java client spellings).
_SECRET_KEY = re.compile(
    r"(password|passwd|secret|token|jaas|credential|private|api[._-]?key|(^|[._-])key$|key\.pem|"
    r"keystore\.key|keystore\.certificate\.chain|bearer)",
    re.IGNORECASE,
)


def is_secret_key(key: str) -> bool:
    """True for client properties whose values must never be printed, logged or stored."""
    return bool(_SECRET_KEY.search(key))


_USERINFO = re.compile(r"(//)[^/@\s]+@")


def redact_uri(uri: str) -> str:
    """A path or URI without credentials (``s3a://key:secret@bucket`` -> ``s3a://***@bucket``)."""
    return _USERINFO.sub(r"\1***@", uri)


def uri_secrets(text: str) -> list[str]:
    """The credentials of every URI in ``text`` (its ``user:password`` userinfo, and each
    part), for the log mask: an access key is as much a credential as its secret."""
    out: list[str] = []
    for m in _USERINFO.finditer(text):
        userinfo = m.group(0)[2:-1]
        out.append(userinfo)
        out.extend(unquote(p) for p in userinfo.split(":", 1) if p)
        out.extend(p for p in userinfo.split(":", 1) if p)
    return out


def split_url_credentials(url: str) -> tuple[str, str | None, str | None]:
    """An HTTP URL without its ``user:password@``, and the user and password (decoded).
    A URL without a scheme gets http://, as prometheus-client reads it (``host:9091``)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "http", url
    end = next((i for i, c in enumerate(rest) if c in "/?#"), len(rest))
    authority, tail = rest[:end], rest[end:]
    userinfo, at, host = authority.rpartition("@")
    public = f"{scheme}://{host}{tail}"
    if not at:
        return public, None, None
    user, colon, password = userinfo.partition(":")
    return public, unquote(user), (unquote(password) if colon else None)


def redact_url(url: str) -> str:
    """An HTTP URL with its password shown as ``***`` (the user kept, to say who pushes)."""
    public, user, password = split_url_credentials(url)
    if user is None:
        return url
    scheme, _, rest = public.partition("://")
    shown = quote(user, safe="") + (f":{REDACTED}" if password is not None else "")
    return f"{scheme}://{shown}@{rest}"


def redact_properties(props: Mapping[str, str]) -> dict[str, str]:
    """A copy of client properties with every secret value replaced by ``***``."""
    return {k: (REDACTED if is_secret_key(k) else v) for k, v in props.items()}


# The one redaction rule for what leaves the process (report, summary.json, manifests, Data
# Docs, metrics, logs, error lines): every setting that can hold a secret, by the kind of
# value it holds. A new secret-bearing setting (a webhook URL, say) joins this table.
SecretKind = Literal["properties", "spark_conf", "uri", "uris", "url", "webhooks"]


@dataclass(frozen=True)
class SecretSetting:
    path: tuple[str, ...]
    kind: SecretKind


SECRET_SETTINGS: tuple[SecretSetting, ...] = (
    SecretSetting(("source", "properties"), "properties"),
    SecretSetting(("destination", "properties"), "properties"),
    SecretSetting(("spark", "conf"), "spark_conf"),
    SecretSetting(("spark", "master"), "uri"),
    SecretSetting(("segments", "source", "paths"), "uris"),
    SecretSetting(("segments", "destination", "paths"), "uris"),
    SecretSetting(("output", "pushgateway_url"), "url"),
    SecretSetting(("notify", "webhooks"), "webhooks"),
)


def _spark_conf_shown(conf: Mapping[str, str], cfg: AuditConfig) -> dict[str, str]:
    return {k: (REDACTED if cfg.spark.is_secret_setting(k) else redact_uri(v)) for k, v in conf.items()}


def _spark_conf_secrets(conf: Mapping[str, str], cfg: AuditConfig) -> list[str]:
    out = [v for k, v in conf.items() if cfg.spark.is_secret_setting(k)]
    return out + [s for v in conf.values() for s in uri_secrets(v)]


def _url_secrets(url: str, cfg: AuditConfig) -> list[str]:
    password = split_url_credentials(url)[2]
    return ([password] if password else []) + uri_secrets(url)


def webhook_shown(url: str) -> str:
    """A webhook URL as it may be shown: scheme and host, the rest (the credential of a
    Slack or Teams webhook) redacted."""
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].rpartition("@")[2]
    return f"{scheme}://{host}/{REDACTED}"


def _webhook_secrets(hooks: Any, _cfg: AuditConfig) -> list[str]:
    """Each URL whole, and its path and query: a client error may quote either."""
    out: list[str] = []
    for hook in hooks:
        url = hook["url"] if isinstance(hook, dict) else hook.url
        rest = url.partition("://")[2]
        path = rest.partition("/")[2]
        out += [url, *([f"/{path}"] if len(path) >= 8 else []), *uri_secrets(url)]
    return out


_SHOWN: dict[str, Callable[[Any, AuditConfig], Any]] = {
    "properties": lambda v, _: redact_properties(v),
    "spark_conf": _spark_conf_shown,
    "uri": lambda v, _: redact_uri(v),
    "uris": lambda v, _: [redact_uri(p) for p in v],
    "url": lambda v, _: redact_url(v),
    "webhooks": lambda v, _: [{**h, "url": webhook_shown(h["url"])} for h in v],
}
_SECRETS: dict[str, Callable[[Any, AuditConfig], list[str]]] = {
    "properties": lambda v, _: [val for k, val in v.items() if is_secret_key(k)],
    "spark_conf": _spark_conf_secrets,
    "uri": lambda v, _: uri_secrets(v),
    "uris": lambda v, _: [s for p in v for s in uri_secrets(p)],
    "url": _url_secrets,
    "webhooks": _webhook_secrets,
}


def redacted_config(cfg: AuditConfig) -> dict[str, Any]:
    """The configuration as plain data with every secret replaced (``SECRET_SETTINGS``)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        is_section = dataclasses.is_dataclass(value) and not isinstance(value, type)
        out[f.name] = _plain(dataclasses.asdict(value)) if is_section else value
    for setting in SECRET_SETTINGS:
        *parents, key = setting.path
        node: Any = out
        for name in parents:
            node = node.get(name) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get(key) is not None:
            node[key] = _SHOWN[setting.kind](node[key], cfg)
    return out


def config_secrets(cfg: AuditConfig) -> list[str]:
    """Every secret value the configuration holds, for the log mask (``SECRET_SETTINGS``)."""
    values: list[str] = []
    for setting in SECRET_SETTINGS:
        value: Any = cfg
        for name in setting.path:
            value = getattr(value, name, None)
        if value is not None:
            values.extend(v for v in _SECRETS[setting.kind](value, cfg) if v)
    return values


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
