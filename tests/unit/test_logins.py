"""Logins beyond properties (audit/collect/logins.py): a named token provider and OIDC client
credentials for both clients, AWS's MSK signer, and every example login in conf/ loading.

The OIDC tests ask the sandbox's token endpoint, a real HTTP server on loopback; the live
logins through real brokers are in tests/integration/test_credentials_live.py."""

from __future__ import annotations

import base64
import json
import pickle
from pathlib import Path

import pytest

from audit.collect.logins import TOKEN_PROVIDER, librdkafka_config
from audit.collect.metadata.transactions import kafka_python_from
from audit.config_file import load_config, parse_config
from audit.errors import ClusterError, ConfigError
from audit.sandbox.token_endpoint import token_endpoint
from tests import tokens

CONF = Path(__file__).resolve().parents[2] / "conf"

OAUTH = {"bootstrap.servers": "k:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}


def _claims(jwt: str) -> dict[str, object]:
    payload = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))  # type: ignore[no-any-return]


def _cluster(extra: str) -> str:
    return (
        "source:\n  bootstrap_servers: k:9093\n  properties:\n    sasl.mechanism: OAUTHBEARER\n"
        f"{extra}destination:\n  bootstrap_servers: d:9093\n"
    )


def test_a_named_provider_travels_in_the_settings_and_becomes_both_clients_login() -> None:
    cfg = parse_config(_cluster("  token_provider: tests.tokens:auditor\n"), env={})
    settings = cfg.cluster("source").client_settings()
    assert settings[TOKEN_PROVIDER] == "tests.tokens:auditor"
    assert cfg.cluster("source").redacted()["token_provider"] == "tests.tokens:auditor"

    rdkafka = librdkafka_config(settings)
    assert TOKEN_PROVIDER not in rdkafka  # never handed to librdkafka as a property
    token, expiry = rdkafka["oauth_cb"]("")
    assert _claims(token)["sub"] == "auditor" and expiry > 0

    found = kafka_python_from(settings, 5, ignored=frozenset())
    assert isinstance(found, dict), found
    provider = found["sasl_oauth_token_provider"]
    tokens.ISSUED.clear()
    first = provider.token()
    assert provider.token() == first and len(tokens.ISSUED) == 1  # kept until near its expiry
    # Plain data: it pickles into Spark's tasks, and still works there.
    assert _claims(pickle.loads(pickle.dumps(provider)).token())["sub"] == "auditor"


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ("  token_provider: not-a-spec\n", "is not module:function"),
        ("  token_provider: no_such_module_here:fetch\n", "cannot import no_such_module_here"),
        ("  token_provider: tests.tokens:absent\n", "tests.tokens has no function absent"),
    ],
)
def test_a_bad_token_provider_is_a_config_error_naming_the_key(extra: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=r"source\.token_provider") as caught:
        parse_config(_cluster(extra), env={})
    assert fragment in str(caught.value)


def test_a_token_provider_without_oauthbearer_is_refused() -> None:
    text = "source:\n  bootstrap_servers: k:9093\n  token_provider: tests.tokens:auditor\n"
    with pytest.raises(ConfigError, match=r"set properties\.sasl\.mechanism: OAUTHBEARER"):
        parse_config(text + "destination:\n  bootstrap_servers: d:9093\n", env={})


def test_oauthbearer_without_a_token_source_says_what_kafka_python_needs() -> None:
    """librdkafka's own unsecured-JWT or other methods: kafka-python cannot follow, and says so
    (its paths then fall back as they do for any login it cannot do)."""
    found = kafka_python_from({**OAUTH, "sasl.oauthbearer.config": "principal=a"}, 5)
    assert found == (
        "SASL OAUTHBEARER needs a token_provider (module:function) or sasl.oauthbearer.method: oidc "
        "for kafka-python"
    )


def test_oidc_client_credentials_get_kafka_python_a_token_from_the_same_endpoint() -> None:
    with token_endpoint({"auditor": "s3cret"}) as endpoint:
        client = {
            **OAUTH,
            "sasl.oauthbearer.method": "OIDC",
            "sasl.oauthbearer.token.endpoint.url": endpoint.url,
            "sasl.oauthbearer.client.id": "auditor",
            "sasl.oauthbearer.client.secret": "s3cret",
            "sasl.oauthbearer.scope": "kafka",
            "sasl.oauthbearer.extensions": "logicalCluster=lkc-1, identityPoolId=pool-2",
        }
        found = kafka_python_from(client, 5, ignored=frozenset())  # every property accounted for
        assert isinstance(found, dict), found
        provider = found["sasl_oauth_token_provider"]
        token = provider.token()
        provider.token()
        assert endpoint.issued.tokens == {"auditor": 1}
    assert _claims(token)["sub"] == "auditor" and _claims(token)["scope"] == "kafka"
    assert provider.extensions() == {"logicalCluster": "lkc-1", "identityPoolId": "pool-2"}
    assert librdkafka_config(client) == client  # librdkafka does OIDC itself


def test_wrong_oidc_credentials_and_a_dead_endpoint_are_one_line_each() -> None:
    with token_endpoint({"auditor": "s3cret"}) as endpoint:
        url = endpoint.url
        client = {
            **OAUTH,
            "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.token.endpoint.url": url,
            "sasl.oauthbearer.client.id": "auditor",
            "sasl.oauthbearer.client.secret": "wrong",
        }
        found = kafka_python_from(client, 5)
        assert isinstance(found, dict)
        with pytest.raises(ClusterError) as refused:
            found["sasl_oauth_token_provider"].token()
    assert str(refused.value) == (
        f"OIDC token endpoint {url} refused the client credentials of auditor (HTTP 401): check "
        "sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret"
    )
    found = kafka_python_from(client, 5)
    assert isinstance(found, dict)
    with pytest.raises(ClusterError, match=f"OIDC token endpoint {url} did not answer"):
        found["sasl_oauth_token_provider"].token()  # the endpoint is gone


def test_oidc_settings_missing_a_key_name_it() -> None:
    found = kafka_python_from({**OAUTH, "sasl.oauthbearer.method": "oidc"}, 5)
    assert found == (
        "OIDC needs sasl.oauthbearer.token.endpoint.url, sasl.oauthbearer.client.id, "
        "sasl.oauthbearer.client.secret"
    )


def test_awss_signer_makes_an_msk_iam_token_from_the_credential_chain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No AWS account needed: the signer presigns locally with static credentials."""
    from audit.collect.logins import aws_msk_iam

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret-not-a-real-key-0000000000")
    monkeypatch.setenv("AWS_REGION", "us-east-2")
    token, expiry = aws_msk_iam()
    url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    assert url.startswith("https://kafka.us-east-2.amazonaws.com/?Action=kafka-cluster%3AConnect")
    assert "X-Amz-Credential=AKIAEXAMPLEEXAMPLE00" in url and "X-Amz-Signature=" in url
    assert expiry > 0
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    with pytest.raises(ConfigError, match="set AWS_REGION"):
        aws_msk_iam()


ENV = {
    name: "x"
    for name in (
        "SOURCE_KAFKA_PASSWORD",
        "DEST_KAFKA_PASSWORD",
        "AUDITOR_KEY_PASSWORD",
        "OIDC_CLIENT_SECRET",
        "SOURCE_API_KEY",
        "SOURCE_API_SECRET",
        "DEST_API_KEY",
        "DEST_API_SECRET",
    )
}


@pytest.mark.parametrize("example", sorted(p.name for p in (CONF / "logins").glob("*.yaml")))
def test_every_login_example_loads_and_both_clients_can_log_in_with_it(example: str) -> None:
    """Each conf/logins/ example is a valid configuration whose login kafka-python can do
    too (so no path of the auditor falls back for it)."""
    cfg = load_config(CONF / "logins" / example, env=ENV)
    for role in ("source", "destination"):
        found = kafka_python_from(cfg.cluster(role).client_settings(), 5, ignored=frozenset())
        assert isinstance(found, dict), (example, role, found)


def test_the_login_examples_are_the_five_the_readme_lists_and_mm2s_example_loads() -> None:
    assert sorted(p.stem for p in (CONF / "logins").glob("*.yaml")) == [
        "confluent-cloud",
        "msk-iam",
        "mtls",
        "oauthbearer-oidc",
        "scram",
    ]
    assert load_config(CONF / "mm2.example.yaml", env={}).mode == "mm2"
