"""Kafka's Java Admin for share groups (audit/collect/metadata/java_admin.py), its pure
parts: where the client jar is found, and the cluster's login as Java client properties.
The JVM itself, real share groups and Kafka's own tool as the oracle are in
tests/integration/test_share_groups_live.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.collect.metadata.java_admin import JavaAdmin, JavaCallError, ShareGroup, classpath
from audit.collect.metadata.java_login import java_properties, java_system_properties


def _libs(root: Path, *names: str) -> Path:
    root.mkdir(parents=True)
    for name in names:
        (root / name).write_bytes(b"")
    return root


def test_a_kafka_libs_directory_gives_the_client_jar_and_slf4j(tmp_path: Path) -> None:
    names = ("kafka-clients-4.4.0.jar", "slf4j-api-1.7.36.jar", "kafka-server-4.4.0.jar")
    libs = _libs(tmp_path / "libs", *names)
    assert classpath(str(libs)) == [str(libs / "kafka-clients-4.4.0.jar"), str(libs / "slf4j-api-1.7.36.jar")]


def test_a_lone_client_jar_gets_pysparks_slf4j(tmp_path: Path) -> None:
    jar = _libs(tmp_path / "x", "kafka-clients-4.1.0.jar") / "kafka-clients-4.1.0.jar"
    jars = classpath(str(jar))
    assert not isinstance(jars, str)
    assert jars[0] == str(jar) and Path(jars[1]).name.startswith("slf4j-api-")


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("off", "java.kafka_classpath is off"),
        ("/nonexistent/libs", "is neither a directory nor a jar"),
    ],
)
def test_no_client_is_a_reason_never_an_error(setting: str, says: str) -> None:
    reason = classpath(setting)
    assert isinstance(reason, str) and says in reason


def test_auto_looks_in_kafka_home_then_says_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MIRROR_AUDIT_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    reason = classpath("auto")
    assert isinstance(reason, str) and "set java.kafka_classpath" in reason
    _libs(tmp_path / "kafka" / "libs", "kafka-clients-4.2.0.jar", "slf4j-api-1.7.36.jar")
    monkeypatch.setenv("KAFKA_HOME", str(tmp_path / "kafka"))
    jars = classpath("auto")
    assert not isinstance(jars, str) and Path(jars[0]).name == "kafka-clients-4.2.0.jar"


def test_a_scram_login_becomes_a_jaas_line_with_its_quotes_escaped() -> None:
    props = java_properties(
        {
            "bootstrap.servers": "b:9093",
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "audit",
            "sasl.password": 'pa"ss\\word',
            "ssl.ca.location": "/etc/ca.pem",
            "ssl.endpoint.identification.algorithm": "none",
        },
        7.5,
    )
    assert props == {
        "bootstrap.servers": "b:9093",
        "client.id": "mirror-audit",
        "request.timeout.ms": "7500",
        "default.api.timeout.ms": "7500",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": (
            'org.apache.kafka.common.security.scram.ScramLoginModule required username="audit" '
            'password="pa\\"ss\\\\word";'
        ),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/etc/ca.pem",
        "ssl.endpoint.identification.algorithm": "",
    }


def test_client_pem_files_become_a_pem_key_store(tmp_path: Path) -> None:
    (tmp_path / "c.pem").write_text("CERT")
    (tmp_path / "k.pem").write_text("KEY")
    props = java_properties(
        {
            "bootstrap.servers": "b:9093",
            "security.protocol": "SSL",
            "ssl.certificate.location": str(tmp_path / "c.pem"),
            "ssl.key.location": str(tmp_path / "k.pem"),
            "ssl.key.password": "kp",
        },
        1,
    )
    assert not isinstance(props, str)
    store = (props["ssl.keystore.type"], props["ssl.keystore.certificate.chain"], props["ssl.keystore.key"])
    assert store == ("PEM", "CERT", "KEY")
    assert props["ssl.key.password"] == "kp"


@pytest.mark.parametrize(
    ("client", "says"),
    [
        ({"sasl.mechanism": "OAUTHBEARER"}, "OAUTHBEARER without sasl.oauthbearer.method: oidc"),
        ({"sasl.mechanism": "GSSAPI"}, "SASL mechanism GSSAPI is not supported"),
        (
            {"sasl.mechanism": "OAUTHBEARER", "mirror-audit.token_provider": "m:f"},
            "a token_provider (a Python callable) cannot log the Java client in",
        ),
        ({"sasl.mechanism": "PLAIN", "sasl.username": "u"}, "needs sasl.username and sasl.password"),
        ({"fetch.wait.max.ms": "5"}, "the property fetch.wait.max.ms has no Java client equivalent"),
        ({"ssl.key.location": "/nonexistent.pem"}, "cannot be read"),
    ],
)
def test_a_login_the_java_client_cannot_be_given_is_a_reason(client: dict[str, str], says: str) -> None:
    reason = java_properties({"bootstrap.servers": "b:9092", **client}, 1)
    assert isinstance(reason, str) and says in reason


def test_an_oidc_login_becomes_the_java_clients_own_client_credentials_login() -> None:
    client = {
        "bootstrap.servers": "b:9094",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": "http://idp/token",
        "sasl.oauthbearer.client.id": "auditor",
        "sasl.oauthbearer.client.secret": 's"cret',
        "sasl.oauthbearer.scope": "kafka",
        "sasl.oauthbearer.extensions": "logicalCluster=lkc-1,identityPoolId=pool-2",
    }
    props = java_properties(client, 1)
    assert not isinstance(props, str)
    assert props["sasl.login.callback.handler.class"].endswith(".OAuthBearerLoginCallbackHandler")
    assert props["sasl.oauthbearer.token.endpoint.url"] == "http://idp/token"
    assert props["sasl.jaas.config"] == (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'clientId="auditor" clientSecret="s\\"cret" scope="kafka" '
        'extension_logicalCluster="lkc-1" extension_identityPoolId="pool-2";'
    )
    assert java_system_properties(client) == {
        "org.apache.kafka.sasl.oauthbearer.allowed.urls": "http://idp/token"
    }


class _Flaky(JavaAdmin):
    """The share-group read's retry loop alone: ``_share_groups`` fails as told, then answers."""

    retry_seconds = 0.0

    def __init__(self, failures: list[JavaCallError], timeout_seconds: float = 5.0) -> None:
        super().__init__(gateway=type("G", (), {"jvm": None})(), admin=None, timeout_seconds=timeout_seconds)
        self.failures = failures
        self.tries = 0

    def _share_groups(self, group_ids: object) -> list[ShareGroup]:
        self.tries += 1
        if self.failures:
            raise self.failures.pop(0)
        return [ShareGroup("g", "EMPTY", 0, ())]


def test_a_retriable_failure_reading_share_groups_is_tried_again() -> None:
    loading = JavaCallError("CoordinatorLoadInProgressException", "loading", retriable=True)
    admin = _Flaky([loading, loading])
    assert admin.share_groups(["g"]) == [ShareGroup("g", "EMPTY", 0, ())]
    assert admin.tries == 3


def test_a_failure_kafka_does_not_call_retriable_is_raised_at_once() -> None:
    refused = JavaCallError("GroupAuthorizationException", "GroupAuthorizationException: no", retriable=False)
    admin = _Flaky([refused])
    with pytest.raises(JavaCallError, match="GroupAuthorizationException: no"):
        admin.share_groups(["g"])
    assert admin.tries == 1


def test_retrying_stops_at_the_clients_timeout() -> None:
    admin = _Flaky([JavaCallError("TimeoutException", "t", retriable=True)] * 1000, timeout_seconds=0.0)
    with pytest.raises(JavaCallError):
        admin.share_groups(["g"])
    assert admin.tries == 1
