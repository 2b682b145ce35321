"""The configuration's checks that types alone cannot express, one per section: a value out
of range, a pattern RE2 refuses, settings that contradict each other. The loader
(audit/config_file.py) runs the one for each section it builds; a problem names the key
(``records.chunk_records``) and what is wrong, as the one line a user reads."""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from audit import regex, worker_malloc
from audit.config import (
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
)
from audit.errors import ConfigError
from audit.redaction import redact_url, split_url_credentials


class KeyProblem(Exception):
    """A key's value is wrong: ``path`` names the key, ``message`` what is wrong."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '<top level>'}: {message}")


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def check(obj: Any, path: str) -> None:
    """Run the checks of the section ``obj`` (built from the keys under ``path``), if it has any."""
    for cls, section_check in _CHECKS.items():
        if isinstance(obj, cls):
            section_check(obj, path)
            return


def _positive(obj: Any, path: str, names: tuple[str, ...], least: int = 1) -> None:
    for name in names:
        if getattr(obj, name) < least:
            raise KeyProblem(join(path, name), "must be positive" if least else "must not be negative")


def _pattern(pattern: str, where: str, show: bool = True) -> None:
    try:
        regex.check(pattern)
    except regex.PatternError as exc:
        raise KeyProblem(
            where, f"invalid regex {pattern!r}: {exc}" if show else f"invalid regex: {exc}"
        ) from None


def _thresholds(obj: Thresholds, path: str) -> None:
    _positive(obj, path, tuple(f.name for f in dataclasses.fields(obj)), least=0)


def _readiness(obj: ReadinessConfig, path: str) -> None:
    from audit.validate.invariants import known_ids

    known = known_ids()
    for i, inv_id in enumerate(obj.accept_unchecked):
        if inv_id not in known:
            close = difflib.get_close_matches(inv_id, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else " (see docs/invariants.md for the IDs)"
            raise KeyProblem(f"{join(path, 'accept_unchecked')}[{i}]", f"unknown invariant {inv_id!r}{hint}")
    if obj.nightly_data_max_age_hours is not None and not obj.nightly_data_max_age_hours > 0:
        raise KeyProblem(join(path, "nightly_data_max_age_hours"), "must be positive (hours)")


def _patterns(obj: PatternSet, path: str) -> None:
    for kind in ("include", "exclude"):
        for i, pattern in enumerate(getattr(obj, kind)):
            _pattern(pattern, f"{join(path, kind)}[{i}]")


def _mm2(obj: Mm2Config, path: str) -> None:
    for name in ("source_alias", "target_alias", "separator"):
        if not getattr(obj, name):
            raise KeyProblem(join(path, name), "must not be empty")
    if obj.source_alias == obj.target_alias:
        raise KeyProblem(join(path, "target_alias"), "must differ from source_alias")


def _batch_source(obj: BatchSourceConfig, path: str) -> None:
    if obj.read == "files" and not obj.paths:
        raise KeyProblem(join(path, "paths"), "read: files needs at least one path")
    if obj.read != "files" and obj.paths:
        raise KeyProblem(join(path, "paths"), f"paths are only read with read: files (read is {obj.read!r})")


def _topic_records(obj: TopicRecordScope, path: str) -> None:
    _pattern(obj.pattern, join(path, "pattern"))
    if obj.last_offsets < 1 or obj.window_seconds <= 0:
        raise KeyProblem(path, "last_offsets and window_seconds must be positive")


def _records(obj: RecordsConfig, path: str) -> None:
    _positive(obj, path, ("chunk_records", "split_records", "narrow_max_chunks"))
    if obj.chunk_records > 2**31 - 1:
        # Gap ranges are hashed as 32-bit offsets into their chunk (record_chunks).
        raise KeyProblem(join(path, "chunk_records"), "must be at most 2147483647")
    if obj.split_records % obj.chunk_records:
        raise KeyProblem(join(path, "split_records"), "must be a multiple of chunk_records")
    names = ("max_records_per_run", "max_bytes_per_run", "resample_chunks", "mm2_replay_lookback")
    _positive(obj, path, names, least=0)
    if obj.timeout_seconds <= 0:
        raise KeyProblem(join(path, "timeout_seconds"), "must be positive")


def _segments(obj: SegmentsConfig, path: str) -> None:
    _positive(obj, path, ("split_bytes", "split_offsets", "fetch_max_bytes"))


def _spark(obj: SparkConfig, path: str) -> None:
    why = worker_malloc.check(obj.worker_malloc)
    if why:
        raise KeyProblem(join(path, "worker_malloc"), why)
    for i, pattern in enumerate(obj.secret_conf):
        _pattern(pattern, f"{join(path, 'secret_conf')}[{i}]", show=False)  # named by its index only


def _pushgateway(obj: OutputConfig, path: str) -> None:
    """A Pushgateway URL with credentials must use TLS: basic auth over http (or a URL
    without a scheme, which prometheus-client reads as http) sends them in clear."""
    if not obj.pushgateway_url:
        return
    _, user, _ = split_url_credentials(obj.pushgateway_url)
    insecure = not obj.pushgateway_url.lower().startswith("https://")
    if user is not None and insecure and not obj.pushgateway_allow_plaintext_credentials:
        raise KeyProblem(
            join(path, "pushgateway_url"),
            f"has credentials but no TLS ({redact_url(obj.pushgateway_url)}): basic auth over http sends "
            "them in clear; use https:// (or set output.pushgateway_allow_plaintext_credentials: true)",
        )


def _output(obj: OutputConfig, path: str) -> None:
    _pushgateway(obj, path)
    if obj.lock_wait_seconds < 0:
        raise KeyProblem(join(path, "lock_wait_seconds"), "must not be negative (0: do not wait)")
    if obj.history_runs < 1:
        raise KeyProblem(join(path, "history_runs"), "must be at least 1")


def _webhook(obj: WebhookConfig, path: str) -> None:
    """A URL a notice could never be sent to is refused when the configuration loads, not
    found at the end of a run. The URL is a secret: the problem is named, never the URL."""
    problem = webhook_url_problem(obj.url)
    if problem is not None:
        raise KeyProblem(join(path, "url"), problem)


def webhook_url_problem(url: str) -> str | None:
    """What makes ``url`` no webhook URL (scheme, host, port, a space or control
    character), or None: the checks an HTTP client would otherwise fail on at send time."""
    if not url.lower().startswith(("https://", "http://")):
        return "must be an http:// or https:// URL"
    if any(c.isspace() or not c.isprintable() for c in url):
        return "must not contain spaces or control characters"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        # A port that is not a number (or a password holding "/"), or above 65535.
        return "has a port that is not a number from 1 to 65535 (a password with / ? # @ must be %-encoded)"
    if not parts.hostname:
        return "has no host"
    if port == 0:
        return "has a port that is not a number from 1 to 65535"
    return None


def _notify(obj: NotifyConfig, path: str) -> None:
    # NaN compares false with everything: "<= 0" alone would let it through to the socket.
    if not (math.isfinite(obj.timeout_seconds) and obj.timeout_seconds > 0):
        raise KeyProblem(
            join(path, "timeout_seconds"), "must be a positive number of seconds (not nan or inf)"
        )
    _positive(obj, path, ("retries",), least=0)


def _cluster(obj: ClusterConfig, path: str) -> None:
    if not obj.bootstrap_servers.strip():
        raise KeyProblem(join(path, "bootstrap_servers"), "must not be empty")
    if obj.timeout_seconds <= 0:
        raise KeyProblem(join(path, "timeout_seconds"), "must be positive")
    if obj.max_concurrent_requests < 1:
        raise KeyProblem(join(path, "max_concurrent_requests"), "must be at least 1")
    if "bootstrap.servers" in obj.properties:
        raise KeyProblem(join(path, "properties.bootstrap.servers"), "set bootstrap_servers instead")
    if obj.token_provider is not None:
        _token_provider(obj, path)
    _token_endpoint(obj, path)


def _token_endpoint(obj: ClusterConfig, path: str) -> None:
    """An OIDC token endpoint over http: librdkafka, kafka-python's provider and the Java
    client all send it the client secret (HTTP Basic), in clear. Refused when the
    configuration loads, the one place that covers the three clients (librdkafka and the
    Java client fetch their tokens themselves), as a Pushgateway URL with credentials is."""
    from audit.collect.logins import TOKEN_ENDPOINT, endpoint_shown, plaintext_token_endpoint

    url = plaintext_token_endpoint(obj.properties)
    if url is not None and not obj.token_endpoint_allow_plaintext_credentials:
        allow = join(path, "token_endpoint_allow_plaintext_credentials")
        raise KeyProblem(
            join(path, f"properties.{TOKEN_ENDPOINT}"),
            f"has no TLS ({endpoint_shown(url)}): the OIDC client secret would travel in clear; use "
            f"https:// (or set {allow}: true)",
        )


def _token_provider(obj: ClusterConfig, path: str) -> None:
    from audit.collect.logins import check_spec, sasl_mechanism

    where = join(path, "token_provider")
    try:
        check_spec(obj.token_provider, where)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise KeyProblem(where, str(exc).partition(": ")[2]) from None
    if sasl_mechanism(obj.properties) != "OAUTHBEARER":
        raise KeyProblem(where, "is an OAUTHBEARER login: set properties.sasl.mechanism: OAUTHBEARER")


_CHECKS: dict[type, Callable[[Any, str], None]] = {
    Thresholds: _thresholds,
    ReadinessConfig: _readiness,
    PatternSet: _patterns,
    Mm2Config: _mm2,
    BatchSourceConfig: _batch_source,
    TopicRecordScope: _topic_records,
    RecordsConfig: _records,
    SegmentsConfig: _segments,
    SparkConfig: _spark,
    OutputConfig: _output,
    WebhookConfig: _webhook,
    NotifyConfig: _notify,
    ClusterConfig: _cluster,
}
