"""Which record reader a scan uses: the batch reader, the compiled librdkafka reader
(``native``) or confluent-kafka, decided once on the driver and checked again in each
task. Apart from both readers' adapters, which it chooses between (the batch reader loads
the compiled module, so the choice cannot live in ``native`` without a cycle)."""

from __future__ import annotations

import logging
from typing import Any

from audit.collect.records import batch_reader, native
from audit.collect.records.native import ReaderName
from audit.errors import ConfigError

log = logging.getLogger(__name__)


def resolve(choice: str, settings: dict[str, dict[str, Any]]) -> ReaderName:
    """Which reader the scan tasks use, decided once on the driver from
    ``records.reader`` and each cluster's consumer settings. ``auto`` takes the batch reader
    where it can connect as librdkafka would (about twice as fast: docs/benchmarks.md,
    "The batch reader"), else the compiled librdkafka reader (opened and
    closed on each side to check: librdkafka refuses unsupported settings when the handle is
    made, before any read), else confluent-kafka."""
    if choice == "python":
        return "python"
    module = native.load()
    if module is None:
        if choice in ("native", "batches"):
            raise ConfigError(
                f"records.reader is {choice} but {native.MODULE} is not installed: {native.INSTALL}"
            )
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
            native.open_native(side_settings).close()
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
    if not batch_reader.available():
        return f"this build of {native.MODULE} (it has no batch walker: reinstall it from native/)"
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
    if native.load() is None:
        log.warning("records: no compiled reader on this executor, reading with confluent-kafka")
        return "python"
    if resolved == "batches" and not batch_reader.available():
        log.warning("records: this executor's compiled reader has no batch walker: reading with librdkafka")
        return "native"
    return resolved
