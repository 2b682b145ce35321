"""The sandbox's broker settings, without starting a broker (the live tests start them)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from audit.cli import build_parser
from audit.errors import SandboxError
from audit.sandbox import broker_config
from audit.sandbox.broker_config import check_sasl_users as _check_sasl_users
from audit.sandbox.broker_config import server_properties as _server_properties


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


def test_a_sasl_listener_is_added_beside_plaintext_and_brokers_keep_plaintext_between_them() -> None:
    props = _props(
        _server_properties(1, "broker,controller", 9092, 9093, Path("/d"), {}, 9094, {"auditor": "pw1"})
    )
    assert props["listeners"] == (
        "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093"
    )
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9094"
    assert "SASL_PLAINTEXT:SASL_PLAINTEXT" in props["listener.security.protocol.map"].split(",")
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert props["sasl.enabled.mechanisms"] == "PLAIN,OAUTHBEARER"
    assert props["listener.name.sasl_plaintext.plain.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_auditor="pw1";'
    )
    # OAUTHBEARER with no validator class configured: Kafka's unsecured JWT validator.
    assert props["listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
    )
    assert not any("callback.handler" in k for k in props)


def test_without_sasl_users_there_is_no_sasl_listener() -> None:
    props = _props(_server_properties(2, "broker", 9092, 9093, Path("/d"), {}))
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert not any(k.startswith("sasl.") or k.startswith("listener.name.") for k in props)


@pytest.mark.parametrize(
    "users",
    [{"a b": "pw"}, {"": "pw"}, {"auditor": ""}, {"auditor": 'p"w'}, {"auditor": "p;w"}, {"auditor": "p w"}],
)
def test_a_login_that_would_break_the_jaas_line_is_refused(users: dict[str, str]) -> None:
    with pytest.raises(SandboxError, match="SASL"):
        _check_sasl_users(users)


def test_sandbox_up_takes_repeatable_sasl_users_and_refuses_one_without_a_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = build_parser().parse_args(["sandbox", "up", "--sasl-user", "a:x:y", "--sasl-user", "b:z"])
    assert dict(args.sasl_user) == {"a": "x:y", "b": "z"}
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["sandbox", "up", "--sasl-user", "nopassword"])
    assert exc.value.code == 2
    assert "NAME:PASSWORD" in capsys.readouterr().err


def test_with_a_keystore_the_sasl_listener_speaks_tls() -> None:
    props = _props(
        _server_properties(
            2, "broker", 9092, 9093, Path("/d"), {}, 9094, {"auditor": "pw1"}, keystore=Path("/t/broker.p12")
        )
    )
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094"
    assert "SASL_SSL:SASL_SSL" in props["listener.security.protocol.map"].split(",")
    assert "listener.name.sasl_ssl.plain.sasl.jaas.config" in props
    assert props["ssl.keystore.location"] == "/t/broker.p12" and props["ssl.keystore.type"] == "PKCS12"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"


def test_sandbox_ports_are_free_distinct_and_below_the_ephemeral_range() -> None:
    """A port below the kernel's ephemeral range cannot be taken by a client's outgoing
    connection between the choice and the broker's bind (tests run clients of one sandbox
    while another starts)."""
    low = broker_config._ephemeral_low()
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.bind(("127.0.0.1", 0))  # a port in use is never handed out
    try:
        ports = broker_config.free_ports(12)
        assert len(set(ports)) == 12 and held.getsockname()[1] not in ports
        assert all(broker_config.port_free(p) for p in ports)
        if low is not None:
            assert all(broker_config.PRIVATE_LOW <= p < low for p in ports), (ports, low)
    finally:
        held.close()


def test_sandbox_ports_fall_back_to_the_kernels_choice_where_the_range_is_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(broker_config, "_ephemeral_low", lambda: None)
    ports = broker_config.free_ports(3)
    assert len(set(ports)) == 3 and all(broker_config.port_free(p) for p in ports)


def test_the_source_tasks_isolation_is_the_newest_replication_consumer_the_log_configured() -> None:
    """A restarted MirrorMaker 2 first runs its task from the stored config, then from the new
    one: start waits for the newest replication consumer, not the first."""
    from audit.sandbox.mm2 import task_isolation

    def block(client: str, isolation: str) -> str:
        return (
            "[2026-11-27 15:40:37,465] INFO ConsumerConfig values: \n"
            f"\tclient.id = {client}\n\tgroup.id = null\n\tisolation.level = {isolation}\n"
            "[2026-11-27 15:40:37,500] INFO Kafka version: 4.3.1\n"
        )

    stale, fresh = "source->target|MirrorSourceConnector-0|replication-consumer", "read_committed"
    offsets = "source->target|MirrorCheckpointConnector-0|offsets-consumer"
    assert task_isolation(block(stale, "read_uncommitted")) == "read_uncommitted"
    assert task_isolation(block(stale, "read_uncommitted") + block(stale, fresh)) == fresh
    # Another client's configuration, after the task's, does not count.
    assert task_isolation(block(stale, fresh) + block(offsets, "read_uncommitted")) == fresh
    assert task_isolation(block(offsets, fresh)) is None
