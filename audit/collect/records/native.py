"""The adapter of the compiled record reader (package ``mirror-audit-native``, built from
``native/``): librdkafka consumes, Rust frames and hashes each record exactly as
``record_chunks`` does, and Python sees only the finished chunk rows.

Why it exists: the Python reader spends about 2 us of CPU a record, half of it in
confluent-kafka building a ``Message`` object per record, and a record scan is bound by
that (docs/benchmarks.md, "Record scan"). The compiled reader reads the same ranges with
the same consumer settings and gives equal rows (a live test compares both), at the cost
of a Rust build when the package is installed. It is optional: ``records.reader: auto``
(the default) falls back to confluent-kafka where it is not installed or cannot use a
cluster's settings (a SASL mechanism its librdkafka was built without, GSSAPI).
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from audit.collect.logins import TOKEN_PROVIDER
from audit.errors import ConfigError
from audit.redaction import REDACTED, is_secret_key

log = logging.getLogger(__name__)

ReaderName = Literal["batches", "native", "python"]
MODULE = "mirror_audit_native"
INSTALL = "install it with 'pip install ./native' (needs Rust's cargo) or set records.reader: python"


def load() -> Any | None:
    """The compiled module, or None where it is not installed."""
    try:
        import mirror_audit_native
    except ImportError:
        return None
    return mirror_audit_native


def as_strings(settings: dict[str, Any]) -> dict[str, str]:
    """librdkafka properties as the strings its C API takes (True as "true", as
    confluent-kafka passes them)."""
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in settings.items()}


def settings_problem(exc: BaseException, settings: dict[str, Any]) -> str:
    """librdkafka's words for a refused setting, with every secret value replaced (its
    message can quote the value it refused)."""
    text = str(exc)
    for key, value in as_strings(settings).items():
        if value and is_secret_key(key):
            text = text.replace(value, REDACTED)
    return text


def open_native(settings: dict[str, Any]) -> Any:
    """A compiled reader over one cluster; raises ValueError (secrets redacted) for a
    setting this build cannot honour and ImportError where the package is missing."""
    module = load()
    if module is None:
        raise ImportError(f"{MODULE} is not installed: {INSTALL}")
    if TOKEN_PROVIDER in settings:
        # librdkafka's token callback is a Python callable: the compiled reader has none.
        raise ValueError("a token_provider login (its token callback runs in Python)")
    try:
        return module.Reader(as_strings(settings))
    except module.SettingsError as exc:
        raise ValueError(settings_problem(exc, settings)) from None


def resolve(choice: str, settings: dict[str, dict[str, Any]]) -> ReaderName:
    """Which reader the scan tasks use, decided once on the driver from
    ``records.reader`` and each cluster's consumer settings. ``auto`` takes the batch reader
    where it can connect as librdkafka would (about twice as fast: docs/benchmarks.md,
    "The batch reader"), else the compiled librdkafka reader (opened and
    closed on each side to check: librdkafka refuses unsupported settings when the handle is
    made, before any read), else confluent-kafka."""
    if choice == "python":
        return "python"
    module = load()
    if module is None:
        if choice in ("native", "batches"):
            raise ConfigError(f"records.reader is {choice} but {MODULE} is not installed: {INSTALL}")
        log.info("records: the compiled reader is not installed, reading with confluent-kafka")
        return "python"
    if choice in ("auto", "batches"):
        problem = batch_problem(settings)
        if problem is None:
            log.info("records: reading record batches with the batch reader")
            return "batches"
        if choice == "batches":
            raise ConfigError(
                f"records.reader is batches but it cannot use {problem}: "
                "set records.reader: auto, native or python"
            )
        log.warning("records: the batch reader cannot use %s: reading with librdkafka", problem)
    for side, side_settings in settings.items():
        try:
            open_native(side_settings).close()
        except ValueError as why:
            if choice == "native":
                raise ConfigError(
                    f"records.reader is native but its librdkafka cannot use the {side} settings ({why}): "
                    "set records.reader: auto or python"
                ) from None
            log.warning(
                "records: the compiled reader cannot use the %s settings (%s): reading with confluent-kafka",
                side,
                why,
            )
            return "python"
    log.info("records: reading with the compiled reader (librdkafka %s)", module.librdkafka_version())
    return "native"


def batch_problem(settings: dict[str, dict[str, Any]]) -> str | None:
    """Why the batch reader cannot read a side ("the <side> settings: <why>"), or None."""
    from audit.collect.records import batch_reader

    if not batch_reader.available():
        return f"this build of {MODULE} (it has no batch walker: reinstall it from native/)"
    for side, side_settings in settings.items():
        try:
            batch_reader.fetch_settings(side_settings, 30.0)
        except batch_reader.BatchSettingsError as why:
            return f"the {side} settings: {why}"
    return None


def in_task(resolved: ReaderName, choice: str) -> ReaderName:
    """The reader a Spark task uses: the driver's choice, except that under ``auto`` an
    executor without the compiled package (a cluster whose nodes differ from the driver)
    reads with what it has instead of failing its task."""
    if choice != "auto" or resolved == "python":
        return resolved
    if load() is None:
        log.warning("records: no compiled reader on this executor, reading with confluent-kafka")
        return "python"
    if resolved == "batches":
        from audit.collect.records import batch_reader

        if not batch_reader.available():
            log.warning(
                "records: this executor's compiled reader has no batch walker: reading with librdkafka"
            )
            return "native"
    return resolved
