"""Logging set-up: one line per message on stderr, secrets masked on the way out.

The mask is a second line of defence: configuration is redacted before it is logged, but
a secret can still reach a message through an exception text or a client error string.
So is the escaping of control characters in each message: a group id or a client error
named in a log line may carry ESC sequences (which act on the terminal) or a newline (which
forges a log line of its own); they are shown as escapes, so a message stays one inert line.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from audit.display import visible
from audit.redaction import REDACTED, redact_uri

_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


class SecretMask(logging.Filter):
    """Replaces every known secret value in a record's final message with ``***``, and shows
    every URL in it by the redaction rule (no userinfo, query or fragment): a client or
    JVM message may quote a URL whose credentials were never registered."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._secrets: set[str] = {s for s in secrets if s}

    def add(self, secrets: Iterable[str]) -> None:
        self._secrets.update(s for s in secrets if s)

    def mask(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(secret, REDACTED)
        return redact_uri(text)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # args that do not fit: the bare message, masked, never the args
            record.msg, record.args = f"{record.msg} (its arguments did not fit the message)", None
            message = record.msg
        masked = self.mask(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = self.mask(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


LogFormat = Literal["text", "json"]


def _iso_time(record: logging.LogRecord) -> str:
    """The record's time in ISO 8601 with the local zone's offset, to the millisecond: a
    line read next to a scheduler's or a broker's log needs the date and the zone."""
    return datetime.fromtimestamp(record.created).astimezone().isoformat(timespec="milliseconds")


class OneLineFormatter(logging.Formatter):
    """Formats a record with its message's control characters escaped (``audit.display``);
    a traceback after the message keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = visible(record.message)
        return super().formatMessage(record)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return _iso_time(record)


class JsonFormatter(logging.Formatter):
    """One JSON object a line, for log collectors: time (ISO 8601 with the zone), level,
    logger, message, and the traceback where there is one. JSON's own escaping keeps a
    message with control characters or newlines one line."""

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": _iso_time(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["exception"] = record.exc_text
        return json.dumps(out, ensure_ascii=False)


_MASK = SecretMask()


_PY4J = f"{os.sep}py4j{os.sep}"


def _no_client_tracebacks(record: logging.LogRecord) -> bool:
    """kafka-python logs a broker that drops a connection at ERROR with its traceback, also
    where the auditor handles the failure and says what it means in one line of its own;
    its message stays, the traceback only with --verbose. The secret mask may already have
    rendered the traceback into ``exc_text`` when the record was made (``register_secrets``),
    so both are cleared.

    py4j logs a command it retries (a JVM closing its side while answering, as a gateway
    shutting down does) with ``logging.info`` on the root logger, traceback included, past
    the ``py4j`` logger's level: a ``make demo`` printed one. Below WARNING it is dropped."""
    if record.name == "root" and record.levelno < logging.WARNING and _PY4J in record.pathname:
        return False
    if record.name.startswith("kafka."):
        record.exc_info = None
        record.exc_text = None
    return True


def setup_logging(verbose: bool = False, log_format: LogFormat = "text") -> None:
    """Configure the root logger once per process (idempotent for tests): ``text`` lines
    (``2026-11-26T21:53:11.123+00:00 INFO    audit.x: message``) or ``json`` objects."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_mirror_audit", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else OneLineFormatter(_FORMAT))
    handler.addFilter(_MASK)
    if not verbose:
        handler.addFilter(_no_client_tracebacks)
    handler._mirror_audit = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    # Third-party chatter stays quiet unless asked for.
    for noisy in ("py4j", "great_expectations", "kafka", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.INFO if verbose else logging.WARNING)
    # kafka-python's event loop warns of its own slow tasks on a busy machine: not the user's concern.
    logging.getLogger("kafka.net.selector").setLevel(logging.INFO if verbose else logging.ERROR)


def register_secrets(secrets: Iterable[str]) -> None:
    """Mask these values in every log record of the process from now on, whoever set up
    the handlers: the CLI's, or a Python caller's own (the library registers the secrets
    of every configuration a job runs with, ``mask_config``). Records are masked as they
    are made, so no handler, formatter or third-party logger sees the secret."""
    _MASK.add(secrets)
    _install_record_factory()


def mask_config(cfg: Any) -> None:
    """Register a configuration's secrets (client properties, Spark settings, URI
    credentials, the Pushgateway password) with the mask: called by every job."""
    register_secrets(cfg.secret_values())


_factory_installed: list[bool] = []


def _install_record_factory() -> None:
    if _factory_installed:
        return
    previous = logging.getLogRecordFactory()

    def masking_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        # A message whose args do not fit is left as it is: logging reports it when it emits.
        with contextlib.suppress(Exception):
            _MASK.filter(record)
        return record

    logging.setLogRecordFactory(masking_factory)
    _factory_installed.append(True)


def mask_secrets(text: str) -> str:
    return _MASK.mask(text)
