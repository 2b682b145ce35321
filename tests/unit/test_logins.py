"""Logins beyond properties (audit/collect/logins.py): a named token provider and OIDC client
credentials for both clients, AWS's MSK signer, and every example login in conf/ loading.

The OIDC tests ask the sandbox's token endpoint, a real HTTP server on loopback; the live
logins through real brokers are in tests/integration/test_credentials_live.py."""

from __future__ import annotations

import base64
import json
import pickle
import re
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from audit import api
from audit.collect.logins import OidcClientCredentials, librdkafka_config
from audit.collect.metadata.transactions import kafka_python_from
from audit.config import TOKEN_PROVIDER
from audit.config_file import load_config, parse_config
from audit.errors import ClusterError, ConfigError
from audit.sandbox.token_endpoint import token_endpoint
from tests import tokens
from tests.snapshots import faulty_pair

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


def test_a_token_provider_not_shaped_module_function_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"source\.token_provider") as caught:
        parse_config(_cluster("  token_provider: not-a-spec\n"), env={})
    assert "is not module:function" in str(caught.value)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("no_such_module_here:fetch", "cannot import no_such_module_here"),
        ("tests.tokens:absent", "tests.tokens has no function absent"),
    ],
)
def test_a_token_provider_that_does_not_resolve_is_a_config_error_where_a_client_is_made(
    spec: str, fragment: str
) -> None:
    """The configuration loads (only the shape is checked there); making a client of that
    cluster is where the module is imported, and where it fails, naming the provider."""
    cfg = parse_config(_cluster(f"  token_provider: {spec}\n"), env={})
    with pytest.raises(ConfigError, match=f"token_provider {spec}: ") as caught:
        librdkafka_config(cfg.cluster("source").client_settings())
    assert fragment in str(caught.value)


@pytest.fixture
def loud_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """A token provider module that prints when imported and leaves a file behind: the
    module's name and that file."""
    name = f"loud_tokens_{tmp_path.name.replace('-', '_')}"
    marker = tmp_path / "imported"
    (tmp_path / f"{name}.py").write_text(
        f"from pathlib import Path\nprint('hello from {name}')\nPath({str(marker)!r}).touch()\n"
        "from tests.tokens import auditor as fetch\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, marker
    sys.modules.pop(name, None)


def test_loading_a_configuration_for_an_offline_audit_imports_no_token_provider(
    loud_provider: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A configuration names code to run; reading it for an offline audit of snapshots runs
    none (a module printing at import broke ``--output json``). Where a client of the
    cluster is made, it is imported, and what it prints goes to stderr."""
    name, marker = loud_provider
    config = tmp_path / "audit.yaml"
    config.write_text(_cluster(f"  token_provider: {name}:fetch\n"))
    cfg = load_config(config, env={})
    src, dst = faulty_pair(tmp_path / "snaps")
    api.audit(src, dst, config, out=tmp_path / "run", engine="local")
    assert name not in sys.modules and not marker.exists()
    assert f"hello from {name}" not in capsys.readouterr().out

    rdkafka = librdkafka_config(cfg.cluster("source").client_settings())  # a live client: now
    assert marker.exists() and _claims(rdkafka["oauth_cb"]("")[0])["sub"] == "auditor"
    said = capsys.readouterr()
    assert f"hello from {name}" in said.err and f"hello from {name}" not in said.out


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
    shown = f"http://127.0.0.1:{url.split(':')[2].split('/')[0]}/***"  # the host, the rest redacted
    assert str(refused.value) == (
        f"OIDC token endpoint {shown} refused the client credentials of auditor (HTTP 401): check "
        "sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret"
    )
    found = kafka_python_from(client, 5)
    assert isinstance(found, dict)
    with pytest.raises(ClusterError, match=rf"OIDC token endpoint {re.escape(shown)} did not answer"):
        found["sasl_oauth_token_provider"].token()  # the endpoint is gone


@contextmanager
def _answering(answer: bytes) -> Iterator[int]:
    """A loopback TCP server that reads a request and answers ``answer`` (raw bytes, then
    closes), to every connection until the block ends; its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                request = b""
                while b"\r\n\r\n" not in request or len(request) < _request_length(request):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    request += chunk
                # The whole request read (its body too): a socket closed with unread bytes
                # resets the connection, which the client reads as another failure.
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        done.set()
        thread.join(5)
        server.close()


def _request_length(request: bytes) -> int:
    """The length of a request whose headers ``request`` holds: its headers and its body
    (Content-Length); unknown (0) until the headers are read."""
    head, sep, _ = request.partition(b"\r\n\r\n")
    if not sep:
        return 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(head) + len(sep) + int(value.strip())
    return len(head) + len(sep)


def _ok(body: bytes, length: int | None = None) -> bytes:
    size = len(body) if length is None else length
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (size, body)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (b"SSH-2.0-OpenSSH_9.2\r\n", "gave no valid HTTP answer (BadStatusLine)"),  # not an HTTP server
        (b"\x16\x03\x01\x00\xa5garbage\r\n\r\n", "gave no valid HTTP answer (BadStatusLine)"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70000 + b"\r\n\r\n", "gave no valid HTTP answer (LineTooLong)"),
        (_ok(b'{"access_token": "abc', length=500), "gave no valid HTTP answer (IncompleteRead)"),  # cut off
        (_ok(b"<html>Sign in</html>"), "answered with something that is not JSON"),  # a login page
        (_ok(b"\xff\xfe\x00garbage"), "answered with something that is not JSON"),
        (_ok(b'["access_token"]'), "answered without an access_token"),
        (_ok(b'{"access_token": 7}'), "answered without an access_token"),
        (b"", "did not answer: Remote end closed connection without response"),
    ],
)
def test_a_garbage_answer_from_the_token_endpoint_is_one_cluster_error_line_naming_it(
    answer: bytes, said: str
) -> None:
    with _answering(answer) as port:
        oidc = OidcClientCredentials(
            f"http://127.0.0.1:{port}/realms/kafka/token?tenant=t-s3cret", "a", "s3cret"
        )
        with pytest.raises(ClusterError) as caught:
            oidc.fetch()
    line = str(caught.value)
    assert line.startswith(f"OIDC token endpoint http://127.0.0.1:{port}/*** {said}"), line
    assert "\n" not in line and "s3cret" not in line and "realms" not in line
    if "did not answer" not in said:
        assert line.endswith(
            ": check that sasl.oauthbearer.token.endpoint.url is the identity provider's token endpoint"
        )


@pytest.mark.parametrize("expires_in", [b"NaN", b"Infinity", b"-5"])
def test_a_lifetime_no_clock_can_use_falls_back_to_the_tokens_own(expires_in: bytes) -> None:
    """A token kept forever is never renewed: an unusable expires_in is read as absent."""
    jwt = tokens.auditor()[0]
    with _answering(_ok(b'{"access_token": "%s", "expires_in": %s}' % (jwt.encode(), expires_in))) as port:
        token, expiry = OidcClientCredentials(f"http://127.0.0.1:{port}/token", "a", "b").fetch()
    exp = _claims(jwt)["exp"]
    assert isinstance(exp, int) and token == jwt and expiry == pytest.approx(exp, abs=5)


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
