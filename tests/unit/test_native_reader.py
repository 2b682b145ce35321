"""The compiled reader's adapter: which reader a run uses, settings it cannot honour, and
secrets kept out of its messages. No broker is needed: librdkafka checks settings when
its handle is made, before any connection."""

from __future__ import annotations

import logging

import pytest

from audit.collect.records import native as native_reader
from audit.collect.records import readers
from audit.collect.records.read import consumer_settings
from audit.errors import ConfigError

pytestmark = pytest.mark.unit

NOWHERE = {"bootstrap.servers": "127.0.0.1:1"}
# A SASL mechanism librdkafka needs libsasl2 for, which the compiled reader is built without.
GSSAPI = {**NOWHERE, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "GSSAPI"}
SIDES = ("source", "destination")


def _both(settings: dict[str, str]) -> dict[str, dict[str, object]]:
    return {side: consumer_settings(settings, "read_committed") for side in SIDES}


def test_settings_reach_librdkafka_as_its_strings() -> None:
    got = native_reader.as_strings({"enable.auto.commit": False, "fetch.max.bytes": 1 << 20, "a": "b"})
    assert got == {"enable.auto.commit": "false", "fetch.max.bytes": "1048576", "a": "b"}


def test_a_reader_opens_on_the_scans_settings_and_closes_twice() -> None:
    reader = native_reader.open_native(consumer_settings(NOWHERE, "read_committed"))
    reader.close()
    reader.close()


def test_an_unknown_setting_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"no\.such\.property"):
        native_reader.open_native({**NOWHERE, "no.such.property": "1"})


def test_resolve_follows_records_reader() -> None:
    assert readers.resolve("python", _both(NOWHERE)) == "python"
    assert readers.resolve("auto", _both(NOWHERE)) == "batches"
    assert readers.resolve("batches", _both(NOWHERE)) == "batches"
    assert readers.resolve("native", _both(NOWHERE)) == "native"


def test_a_property_kafka_python_cannot_honour_keeps_auto_on_librdkafka(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The batch reader connects through kafka-python: a connection property it has no
    keyword for would be dropped, so the reader is refused by the property's name."""
    odd = {**NOWHERE, "ssl.endpoint.identification.algorithm": "none"}
    settings = {
        "source": consumer_settings(NOWHERE, "read_committed"),
        "destination": consumer_settings(odd, "read_committed"),
    }
    with caplog.at_level(logging.WARNING):
        assert readers.resolve("auto", settings) == "native"
    assert "the destination settings: the property ssl.endpoint.identification.algorithm" in caplog.text
    with pytest.raises(ConfigError, match=r"records.reader is batches .* ssl\.endpoint\.identification"):
        readers.resolve("batches", settings)


def test_settings_the_build_lacks_fall_back_on_auto_and_fail_on_native(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = {"source": consumer_settings(NOWHERE, "read_committed"), "destination": GSSAPI}
    with caplog.at_level(logging.WARNING):
        assert readers.resolve("auto", settings) == "python"
    assert "cannot use the destination settings" in caplog.text and "GSSAPI" in caplog.text
    with pytest.raises(ConfigError, match=r"records.reader is native .* destination settings .*GSSAPI"):
        readers.resolve("native", settings)


def test_a_token_provider_login_takes_the_batch_reader_never_the_compiled_librdkafka_one() -> None:
    """librdkafka's token callback is a Python callable: the batch reader (kafka-python's
    provider) and confluent-kafka can log in with it, the compiled librdkafka reader cannot."""
    from audit.config import TOKEN_PROVIDER

    login = {**NOWHERE, "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}
    settings = _both({**login, TOKEN_PROVIDER: "tests.tokens:auditor"})
    assert readers.resolve("auto", settings) == "batches"
    with pytest.raises(ConfigError, match=r"records.reader is native .*\(a token_provider login"):
        readers.resolve("native", settings)


def test_a_missing_package_falls_back_on_auto_and_fails_on_native(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_reader, "load", lambda: None)
    assert readers.resolve("auto", _both(NOWHERE)) == "python"
    with pytest.raises(ConfigError, match=r"not installed: install it with 'pip install \./native'"):
        readers.resolve("native", _both(NOWHERE))
    with pytest.raises(ImportError, match="not installed"):
        native_reader.open_native(NOWHERE)


def test_a_task_without_the_package_falls_back_only_on_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    assert readers.in_task("native", "auto") == "native"
    assert readers.in_task("batches", "auto") == "batches"
    monkeypatch.setattr(native_reader, "load", lambda: None)
    assert readers.in_task("native", "auto") == "python"
    assert readers.in_task("batches", "auto") == "python"
    assert readers.in_task("batches", "batches") == "batches"
    assert readers.in_task("native", "native") == "native"  # the task then fails, as asked
    assert readers.in_task("python", "auto") == "python"


def test_secret_values_never_reach_a_settings_message() -> None:
    settings = {**GSSAPI, "sasl.password": "hunter2", "sasl.username": "alice"}
    text = native_reader.settings_problem(
        Exception('Invalid value "hunter2" for "sasl.password"; user alice'), settings
    )
    assert "hunter2" not in text and "***" in text and "alice" in text
    with pytest.raises(ConfigError) as err:
        readers.resolve("native", {"source": settings, "destination": settings})
    assert "hunter2" not in str(err.value)
