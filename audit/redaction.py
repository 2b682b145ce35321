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
from typing import Any, ClassVar, Literal, Protocol
from urllib.parse import quote, unquote

REDACTED = "***"


class _SparkSection(Protocol):
    def is_secret_setting(self, name: str) -> bool: ...


class ConfigShape(Protocol):
    """What the configuration's walk for secrets asks of it (``audit.config.AuditConfig``
    is one): a dataclass whose ``spark`` section tells its secret settings. Named by shape,
    so that this module, which the configuration calls, never imports it back."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def spark(self) -> _SparkSection: ...


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
# A URL in any text: a scheme, ``://``, then up to a blank, a quote or an angle bracket.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
# Punctuation that ends a sentence or closes a bracket around a URL, rather than being part
# of it: kept after the redacted URL (``(http://host/x?***)``), never hidden in it.
_TRAILING = ".,;:!)]}"
# Shorter query or fragment parts are not given to the log mask by themselves (a mask of
# "1" would star every digit of every line); the URL rule hides them wherever a URL shows.
_MIN_MASKED_PART = 8


def _split_url(url: str) -> tuple[str, str | None, str, str | None, str | None]:
    """A URL's ``scheme://`` (or "" without one), userinfo (None without), host and path,
    query (None without ``?``) and fragment (None without ``#``)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    else:
        scheme += sep
    end = next((i for i, c in enumerate(rest) if c in "/?#"), len(rest))
    authority, tail = rest[:end], rest[end:]
    userinfo, at, host = authority.rpartition("@")
    tail, hash_, fragment = tail.partition("#")
    path, mark, query = tail.partition("?")
    return (
        scheme,
        userinfo if at else None,
        host + path,
        query if mark else None,
        fragment if hash_ else None,
    )


def _shown_url(url: str) -> str:
    """The one rule for showing a URL: userinfo, query and fragment hidden."""
    scheme, userinfo, location, query, fragment = _split_url(url)
    out = scheme + (f"{REDACTED}@" if userinfo is not None else "") + location
    if query is not None:
        out += f"?{REDACTED}" if query else "?"
    if fragment is not None:
        out += f"#{REDACTED}" if fragment else "#"
    return out


def _url_match(m: re.Match[str]) -> str:
    url = m.group(0)
    kept = len(url) - len(url.rstrip(_TRAILING))
    url, after = (url[:-kept], url[-kept:]) if kept else (url, "")
    return _shown_url(url) + after


def redact_uri(text: str) -> str:
    """A path, URI or any text with every URL in it shown by the one rule: no userinfo,
    query or fragment (``s3a://key:secret@bucket/x?sig=1`` -> ``s3a://***@bucket/x?***``).
    Used for whatever leaves the process: the configuration view, error lines, log lines
    (a query string is where a signed URL or a token-in-link keeps its credential, and a
    fragment where some webhooks do). Text without a URL comes back as it was."""
    # Userinfo first: a password holding an unescaped ``#`` or ``?`` would otherwise end
    # the authority early and show its first part as the host.
    return _URL.sub(_url_match, _USERINFO.sub(r"\1***@", text))


def uri_secrets(text: str) -> list[str]:
    """The credentials of every URI in ``text`` for the log mask: its ``user:password``
    userinfo and each part (an access key is as much a credential as its secret), and its
    query and fragment, whole and each parameter's value, where long enough to mask."""
    out: list[str] = []
    for m in _USERINFO.finditer(text):
        userinfo = m.group(0)[2:-1]
        out.append(userinfo)
        out.extend(unquote(p) for p in userinfo.split(":", 1) if p)
        out.extend(p for p in userinfo.split(":", 1) if p)
    for m in _URL.finditer(text):
        _, _, _, query, fragment = _split_url(m.group(0).rstrip(_TRAILING))
        for part in (query, fragment):
            if not part:
                continue
            values = [v for _, _, v in (p.partition("=") for p in part.split("&"))]
            pieces = [part, *values, *(unquote(v) for v in values)]
            out.extend(p for p in pieces if len(p) >= _MIN_MASKED_PART)
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
    """An HTTP URL by the one rule (``redact_uri``), except that its user is kept beside the
    hidden password, to say who pushes (``http://pusher:***@host``). A URL with a user but
    no scheme gets http://, as prometheus-client reads it."""
    public, user, password = split_url_credentials(url)
    if user is None:
        return _shown_url(url)
    scheme, _, rest = _shown_url(public).partition("://")
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
    # Shown in notices and the report's configuration view: a link to a served output root
    # may carry basic-auth credentials or a token in its query.
    SecretSetting(("notify", "report_base_url"), "uri"),
)

# Where each kind keeps its secret below the setting's own key: a webhook's ``url`` (its
# ``format`` is no secret); every other kind at the key itself or anywhere under it.
_SECRET_LEAF = {"webhooks": ("url",)}


def is_secret_path(path: str) -> bool:
    """Whether the configuration key ``path`` (as a config error names it:
    ``output.pushgateway_url``, ``notify.webhooks[0].url``, ``source.properties.x``) holds
    a secret (``SECRET_SETTINGS``), or is named like one: its value, whatever its type, is
    then never echoed in an error (a URL given as a list is still the URL)."""
    parts = re.sub(r"\[\d+\]", "", path).split(".")
    for setting in SECRET_SETTINGS:
        wanted = (*setting.path, *_SECRET_LEAF.get(setting.kind, ()))
        if tuple(parts[: len(wanted)]) == wanted:
            return True
    return is_secret_key(parts[-1])


def spark_secrets(spark: Any) -> list[str]:
    """The secrets of a ``spark`` section (``SparkConfig``) alone, for a message made where
    the whole configuration is not at hand (a Spark session failing to start): its secret
    settings' values and the credentials of every URI in its master and settings."""
    conf: Mapping[str, str] = spark.conf
    out = [v for k, v in conf.items() if spark.is_secret_setting(k)]
    out += [s for v in (spark.master, *conf.values()) for s in uri_secrets(v)]
    return [s for s in out if s]


def _spark_conf_shown(conf: Mapping[str, str], cfg: ConfigShape) -> dict[str, str]:
    return {k: (REDACTED if cfg.spark.is_secret_setting(k) else redact_uri(v)) for k, v in conf.items()}


def _spark_conf_secrets(conf: Mapping[str, str], cfg: ConfigShape) -> list[str]:
    out = [v for k, v in conf.items() if cfg.spark.is_secret_setting(k)]
    return out + [s for v in conf.values() for s in uri_secrets(v)]


def _url_secrets(url: str, cfg: ConfigShape) -> list[str]:
    password = split_url_credentials(url)[2]
    return ([password] if password else []) + uri_secrets(url)


# A host as a webhook URL may be shown: a name or an IPv4 or [IPv6] address, and a port.
# Anything else left where the host goes (a malformed URL: a password holding "/" or "?")
# could be part of a credential, and is not shown.
_SHOWN_HOST = re.compile(r"([A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]+)?")


def webhook_shown(url: str) -> str:
    """A webhook URL as it may be shown: scheme and host (and port), never its userinfo,
    path, query or fragment, any of which can be the credential (a Slack or Teams
    webhook's path, a ``?token=`` query)."""
    scheme, _, rest = url.partition("://")
    host = re.split(r"[/?#]", rest, maxsplit=1)[0].rpartition("@")[2]
    if not _SHOWN_HOST.fullmatch(host):
        host = REDACTED
    shown_scheme = scheme if scheme.lower() in ("http", "https") else REDACTED
    return f"{shown_scheme}://{host}/{REDACTED}"


def webhook_secrets(url: str) -> list[str]:
    """A webhook URL whole, and its path, query and fragment, together and alone (an error
    may quote any of them), and its userinfo. A piece shorter than ``_MIN_MASKED_PART`` is
    too common a string to mask everywhere."""
    _, _, location, query, fragment = _split_url(url)
    path = location[next((i for i, c in enumerate(location) if c == "/"), len(location)) :]
    target = path + (f"?{query}" if query is not None else "")
    tail = target + (f"#{fragment}" if fragment is not None else "")
    pieces = (tail, target, path, query or "", fragment or "")
    return [url, *(p for p in pieces if len(p) >= _MIN_MASKED_PART), *uri_secrets(url)]


def _webhook_secrets(hooks: Any, _cfg: ConfigShape) -> list[str]:
    return [s for hook in hooks for s in webhook_secrets(hook["url"] if isinstance(hook, dict) else hook.url)]


_SHOWN: dict[str, Callable[[Any, ConfigShape], Any]] = {
    "properties": lambda v, _: redact_properties(v),
    "spark_conf": _spark_conf_shown,
    "uri": lambda v, _: redact_uri(v),
    "uris": lambda v, _: [redact_uri(p) for p in v],
    "url": lambda v, _: redact_url(v),
    "webhooks": lambda v, _: [{**h, "url": webhook_shown(h["url"])} for h in v],
}
_SECRETS: dict[str, Callable[[Any, ConfigShape], list[str]]] = {
    "properties": lambda v, _: [val for k, val in v.items() if is_secret_key(k)],
    "spark_conf": _spark_conf_secrets,
    "uri": lambda v, _: uri_secrets(v),
    "uris": lambda v, _: [s for p in v for s in uri_secrets(p)],
    "url": _url_secrets,
    "webhooks": _webhook_secrets,
}


def redacted_config(cfg: ConfigShape) -> dict[str, Any]:
    """The configuration as plain data with every secret replaced (``SECRET_SETTINGS``),
    and every URL anywhere else in it shown by the one rule (``redact_uri``)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        is_section = dataclasses.is_dataclass(value) and not isinstance(value, type)
        out[f.name] = _plain(dataclasses.asdict(value)) if is_section else _plain(value)
    for setting in SECRET_SETTINGS:
        *parents, key = setting.path
        node: Any = out
        for name in parents:
            node = node.get(name) if isinstance(node, dict) else None
        raw = _setting_value(cfg, setting)
        if isinstance(node, dict) and raw is not None:
            # From the configuration itself, not the URL-redacted copy: a kind may show
            # more than the general rule (an HTTP user).
            node[key] = _SHOWN[setting.kind](raw, cfg)
    return out


def _setting_value(cfg: ConfigShape, setting: SecretSetting) -> Any:
    """A setting's value as plain data (dicts and lists), or None where it is not set."""
    value: Any = cfg
    for name in setting.path:
        value = getattr(value, name, None)
    if isinstance(value, tuple):
        return [
            dataclasses.asdict(v) if dataclasses.is_dataclass(v) and not isinstance(v, type) else v
            for v in value
        ]
    return dict(value) if isinstance(value, dict) else value


def config_secrets(cfg: ConfigShape) -> list[str]:
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
    return redact_uri(value) if isinstance(value, str) else value
