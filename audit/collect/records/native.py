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

from audit.config import TOKEN_PROVIDER
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
