"""Credentials and permissions against real brokers: the sandbox's SASL_SSL listeners check
the certificate and the login, Kafka's authorizer the ACLs.

With the right password and certificate, and only the read-only permissions docs/configuration.md
lists (``AUDITOR_PERMISSIONS``), every part of a nightly run reads both clusters over
SASL_SSL (the admin calls, the record readers, kafka-python's transaction calls and wire
fetches) and the password appears nowhere in what the run writes or prints. With a wrong
password or an untrusted certificate each command that reads a cluster stops with one line
that says why, before Spark tasks time out on a cluster they cannot log in to, and leaves
nothing behind. A principal without permissions sees no topic, which is an error, not an
empty PASS.
"""

from __future__ import annotations

import json
import logging
import secrets
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from audit.collect.metadata.permissions import AUDITOR_PERMISSIONS, Permission
from audit.java_runtime import find_java
from audit.sandbox.acls import grant
from audit.sandbox.broker_config import make_keystore, tls_ca
from audit.sandbox.mirror import mirror_once, wait_transactions_settled
from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import Record, commit_offsets, produce
from tests.cli import run_cli, run_in_process


@pytest.fixture(scope="module", autouse=True)
def auditor_permissions(sandbox: SandboxState, sasl_login: tuple[str, str]) -> None:
    """The auditor's principal gets docs/configuration.md's permissions on both clusters, no more."""
    for name in ("source", "destination"):
        grant(sandbox.cluster(name).bootstrap, f"User:{sasl_login[0]}")


def _sasl_bootstrap(sandbox: SandboxState, name: str) -> str:
    bootstrap = sandbox.cluster(name).sasl_bootstrap
    assert bootstrap, "the test sandbox was started without its SASL listeners"
    return bootstrap


def _config(
    tmp: Path,
    sandbox: SandboxState,
    user_password: tuple[str, str],
    topic: str,
    *,
    source: str = "source",
    group: str | None = None,
    ca: Path | None = None,
    extra: str = "",
    login: str | None = None,
) -> Path:
    """A configuration that reads ``topic`` over SASL_SSL; ``source`` names the sandbox
    cluster given as the source (the destination, to point the config at the wrong cluster),
    ``ca`` the certificate to trust (default: the sandbox's), ``login`` the cluster's lines
    after ``ssl.ca.location`` instead of SASL/PLAIN with ``user_password``."""
    user, password = user_password
    ca = ca or tls_ca(sandbox)
    assert ca is not None, "the test sandbox was started without TLS"

    def cluster(name: str) -> str:
        plain = f"    sasl.mechanism: PLAIN\n    sasl.username: {user}\n    sasl.password: {password}\n"
        return (
            f"  bootstrap_servers: {_sasl_bootstrap(sandbox, name)}\n  timeout_seconds: 5\n"
            f"  properties:\n    security.protocol: SASL_SSL\n    ssl.ca.location: {ca}\n"
            + (plain if login is None else login)
        )

    groups = f"'{group}'" if group else ""
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "audit.yaml"
    path.write_text(
        f"source:\n{cluster(source)}destination:\n{cluster('destination')}"
        f"scope:\n  topics:\n    include: ['{topic}']\n  groups:\n    include: [{groups}]\n"
        "spark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: '2'\n"
        f"output:\n  root: {tmp / 'reports'}\n{extra}"
    )
    return path


def _create(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result is in
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1, 2]])])[topic].result(
        timeout=60
    )


def _topic_on_both(sandbox: SandboxState) -> str:
    """A topic with the same ten records on both clusters (written over PLAINTEXT)."""
    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    for name in ("source", "destination"):
        bootstrap = sandbox.cluster(name).bootstrap
        _create(bootstrap, topic)
        produce(bootstrap, topic, [Record(b"k", b"v")] * 10, partition=0)
    return topic


def _mirrored_topic(sandbox: SandboxState) -> str:
    """A topic with plain records and a committed transaction on the source, copied offset
    for offset to the destination by the sandbox's mirror emulator (over PLAINTEXT)."""
    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    src, dst = sandbox.cluster("source").bootstrap, sandbox.cluster("destination").bootstrap
    for bootstrap in (src, dst):
        _create(bootstrap, topic)
    produce(src, topic, [Record(f"k{i}".encode(), f"v{i}".encode()) for i in range(30)], partition=0)
    txn = Producer({"bootstrap.servers": src, "transactional.id": f"tx-{topic}"})
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(5):
        txn.produce(topic, f"t{i}".encode(), partition=0)
    txn.commit_transaction(30)
    wait_transactions_settled(src, [topic])
    mirror_once(src, dst, [topic])
    return topic


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_nightly_run_over_sasl_reads_every_part_and_writes_no_password(
    sandbox: SandboxState, sasl_login: tuple[str, str], tmp_path: Path
) -> None:
    topic = _mirrored_topic(sandbox)
    group = f"g-{topic}"
    for name in ("source", "destination"):
        commit_offsets(sandbox.cluster(name).bootstrap, group, {(topic, 0): 20})
    extra = (
        "records:\n  enabled: true\nsegments:\n  source:\n    read: wire\n  destination:\n    read: wire\n"
    )
    cfg = _config(tmp_path / "cfg", sandbox, sasl_login, topic, group=group, extra=extra)
    # Markers where Spark settings hold secrets (tests/spark/test_secret_markers.py plants
    # them in every other place): they reach the run's real Spark session.
    markers = [f"MARKER{secrets.token_hex(6)}" for _ in range(3)]
    cfg.write_text(
        cfg.read_text().replace(
            "    spark.sql.shuffle.partitions: '2'\n",
            "    spark.sql.shuffle.partitions: '2'\n"
            f"    spark.hadoop.fs.s3a.secret.key: {markers[0]}\n"
            f"    spark.hadoop.fs.s3a.access.key: {markers[1]}\n"
            f"    spark.custom.store: s3a://id:{markers[2]}@bucket/x\n",
        )
    )
    assert markers[0] in cfg.read_text()
    run = tmp_path / "run"
    proc = run_cli("nightly", "--config", str(cfg), "--out", str(run))
    assert proc.returncode in (0, 1), proc.stderr[-3000:]  # a verdict, not an error

    summary = json.loads((run / "summary.json").read_text())
    # Records read on both sides over SASL, by the batch reader, and equal; the group and
    # its offsets seen on both sides (a principal without group Describe sees no group).
    for inv in ("CM-DATA-1", "CM-GROUP-1"):
        assert summary["invariants"][inv]["status"] == "pass", summary["invariants"][inv]
    for side in ("source", "destination"):
        notes = json.loads((run / side / "manifest.json").read_text())["notes"]
        assert notes["open_transactions"].startswith("collected"), notes["open_transactions"]  # kafka-python
        assert "groups" not in notes  # cluster Describe granted: every group listed
        assert notes["records"]["reader"] == "batches" and notes["records"]["unreadable_ranges"] == 0
        batches = notes["batches"]
        assert batches["read"] == "wire" and batches["batch_scan_issues"] == 0, batches  # kafka-python
        assert batches["batches"] >= 2 and batches["markers"] == 1, batches

    password = sasl_login[1]
    assert password not in proc.stdout + proc.stderr
    written = {**_files(run), **_files(tmp_path / "cfg" / "reports")}
    assert len(written) > 10
    leaked = [name for name, data in written.items() if password.encode() in data]
    assert leaked == []
    for marker in markers:
        assert marker not in proc.stdout + proc.stderr
        assert [name for name, data in written.items() if marker.encode() in data] == []


def test_a_wrong_password_stops_each_command_with_one_line_and_writes_nothing(
    sandbox: SandboxState, sasl_login: tuple[str, str], tmp_path: Path
) -> None:
    user, password = sasl_login
    topic = _topic_on_both(sandbox)
    good = _config(tmp_path / "good", sandbox, sasl_login, topic, extra="records:\n  enabled: true\n")
    wrong = "wrong-" + password
    bad = _config(tmp_path / "bad", sandbox, (user, wrong), topic, extra="records:\n  enabled: true\n")
    run = tmp_path / "run"
    assert run_cli("snapshot", "--config", str(good), "--out", str(run)).returncode == 0
    before = _files(run)

    fetch = ("segments", "fetch", "--config", str(bad), "--role", "source", "--out", str(run / "source"))
    for command, cluster in (
        (("snapshot", "--config", str(bad), "--out", str(tmp_path / "snap")), "destination"),
        (fetch, "source"),
        (("records", "scan", "--config", str(bad), "--run", str(run)), "destination"),
    ):
        proc = run_cli(*command)
        assert proc.returncode == 2, (command, proc.stderr[-3000:])
        last = proc.stderr.strip().splitlines()[-1]
        bootstrap = _sasl_bootstrap(sandbox, cluster)
        assert last.startswith(f"mirror-audit: error: {cluster} cluster ({bootstrap}):"), (command, last)
        assert "the connection was refused" in last and "Authentication failed" in last, (command, last)
        assert "Traceback" not in proc.stderr and "%3|" not in proc.stderr, command  # nor raw librdkafka
        assert wrong not in proc.stdout + proc.stderr and password not in proc.stdout + proc.stderr
    assert not (tmp_path / "snap").exists()
    assert _files(run) == before  # the fetch and the scan added nothing to the snapshots

    # The right password, but trusting another certificate than the brokers': the client
    # refuses the brokers, with the reason and the setting to look at.
    other = make_keystore(find_java(), tmp_path / "other-tls").parent / "ca.pem"
    untrusting = _config(tmp_path / "untrusting", sandbox, sasl_login, topic, ca=other)
    proc = run_cli("snapshot", "--config", str(untrusting), "--out", str(tmp_path / "snap"))
    assert proc.returncode == 2, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(
        f"mirror-audit: error: destination cluster ({_sasl_bootstrap(sandbox, 'destination')}):"
    )
    assert (
        "SSL handshake failed" in last and "certificate verify failed" in last and "ssl.ca.location" in last
    )
    assert "Traceback" not in proc.stderr and password not in proc.stdout + proc.stderr
    assert not (tmp_path / "snap").exists()


def test_commands_refuse_a_cluster_other_than_the_one_their_snapshot_was_taken_from(
    sandbox: SandboxState, sasl_login: tuple[str, str], tmp_path: Path
) -> None:
    """A configuration whose source is the destination cluster would read the destination's
    records against the source snapshot's ranges: refused by cluster id, up front."""
    topic = _topic_on_both(sandbox)
    run = tmp_path / "run"
    good = _config(tmp_path / "good", sandbox, sasl_login, topic)
    assert run_cli("snapshot", "--config", str(good), "--out", str(run)).returncode == 0
    swapped = _config(tmp_path / "swapped", sandbox, sasl_login, topic, source="destination")
    before = _files(run)
    for command in (
        ("segments", "fetch", "--config", str(swapped), "--role", "source", "--out", str(run / "source")),
        ("records", "scan", "--config", str(swapped), "--run", str(run)),
    ):
        proc = run_cli(*command)
        assert proc.returncode == 2, (command, proc.stderr[-3000:])
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith("mirror-audit: error: source cluster"), (command, last)
        assert "but its snapshot was taken from cluster" in last, (command, last)
    assert _files(run) == before


def test_a_principal_without_permissions_sees_no_topic_and_gets_an_error_not_a_pass(
    sandbox: SandboxState, sasl_login: tuple[str, str], tmp_path: Path
) -> None:
    """Kafka lists only the topics a principal may describe: to ``stranger`` (logged in, no
    ACL) the clusters look empty, and an audit of nothing must not end PASS (or GO)."""
    topic = _topic_on_both(sandbox)
    cfg = _config(tmp_path, sandbox, ("stranger", sasl_login[1]), topic)
    for command in (
        ("nightly", "--config", str(cfg), "--out", str(tmp_path / "run")),
        ("readiness", "--config", str(cfg), "--out", str(tmp_path / "ready")),
    ):
        proc = run_cli(*command)
        assert proc.returncode == 2, (command, proc.stdout[-2000:], proc.stderr[-3000:])
        last = proc.stderr.strip().splitlines()[-1]
        assert last.startswith("mirror-audit: error: source cluster") and "no topic in scope" in last, last
        assert "may Describe the topics" in last, last
    assert not (tmp_path / "run").exists() and not (tmp_path / "ready").exists()

    # Allowed to describe topics but not the cluster: a snapshot, whose manifest and log say
    # that the groups listed are only those the principal may describe (here: none).
    for name in ("source", "destination"):
        grant(sandbox.cluster(name).bootstrap, "User:stranger", [Permission("topic", "*", "DESCRIBE", "")])
    proc = run_cli("snapshot", "--config", str(cfg), "--out", str(tmp_path / "snap"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    for side in ("source", "destination"):
        note = json.loads((tmp_path / "snap" / side / "manifest.json").read_text())["notes"]["groups"]
        assert note.startswith("only the 0 groups this principal may Describe"), note
        assert f"WARNING audit.collect.metadata.snapshot: {side}: only the 0 groups" in proc.stderr


def test_a_principal_that_may_not_read_gets_each_range_unreadable_with_the_reason(
    sandbox: SandboxState, sasl_login: tuple[str, str], tmp_path: Path
) -> None:
    """``describer`` may describe the topics but not read them: the snapshot works, and the
    record scan (batch reader) and the wire fetch (kafka-python) finish with every range
    unreadable and the broker's reason, rather than waiting out their timeouts."""
    for name in ("source", "destination"):
        grant(sandbox.cluster(name).bootstrap, "User:describer", [Permission("topic", "*", "DESCRIBE", "")])
    topic = _topic_on_both(sandbox)
    cfg = _config(tmp_path, sandbox, ("describer", sasl_login[1]), topic, extra="records:\n  enabled: true\n")
    run = tmp_path / "run"
    assert run_cli("snapshot", "--config", str(cfg), "--out", str(run)).returncode == 0

    proc = run_cli("records", "scan", "--config", str(cfg), "--run", str(run))
    assert proc.returncode == 0, proc.stderr[-3000:]  # a collection step: the audit judges
    note = json.loads((run / "source" / "manifest.json").read_text())["notes"]["records"]
    assert note["reader"] == "batches" and note["unreadable_ranges"] == 2, note  # a range per side
    for issue in note["issues"]:
        assert "Topic authorization failed" in issue["detail"], issue
    # What each side read is kept beside its chunks: nothing, and why (an audit counts the
    # ranges unchecked: tests/spark/test_data_level_outcomes.py).
    for side in ("source", "destination"):
        ranges = pq.read_table(run / side / "record_chunk_ranges.parquet").to_pylist()
        assert ranges, side
        for r in ranges:
            assert (r["complete"], r["read_to"]) == (False, r["start_offset"]), r
            assert "Topic authorization failed" in r["detail"], r

    proc = run_cli(
        "segments", "fetch", "--config", str(cfg), "--role", "source", "--out", str(run / "source")
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    issues = pq.read_table(run / "source" / "batch_scan_issues.parquet").to_pylist()
    assert [(i["topic"], i["kind"]) for i in issues] == [(topic, "fetch_error")]
    assert "TopicAuthorizationFailedError" in issues[0]["detail"], issues


def test_check_passes_with_the_documented_permissions_and_names_one_withheld(
    sandbox: SandboxState, sasl_login: tuple[str, str], tmp_path: Path
) -> None:
    """``mirror-audit check`` over SASL_SSL: with docs/configuration.md's permissions (the module's
    ``auditor``) every check passes and nothing is written; ``describer`` granted the same
    but topic Read is told exactly that, with exit 2, by what the cluster answers."""
    topic = _topic_on_both(sandbox)
    extra = "records:\n  enabled: true\n"
    cfg = _config(tmp_path / "ok", sandbox, sasl_login, topic, extra=extra)
    before = sorted(p for p in tmp_path.rglob("*"))
    proc = run_cli("check", "--config", str(cfg))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p for p in tmp_path.rglob("*")) == before  # wrote nothing, not even the output root
    lines = proc.stdout.splitlines()
    for role in ("destination", "source"):
        cluster_id = sandbox.cluster(role).cluster_id
        assert any(ln.startswith(f"{role:<12} ok") and f"cluster {cluster_id}" in ln for ln in lines), lines
        for granted in ("cluster Describe", "topic Describe", "topic Read", "topic DescribeConfigs"):
            assert any(ln.startswith(f"{role:<12} ok") and granted in ln for ln in lines), (granted, lines)
    assert not [ln for ln in lines if " FAIL " in ln], lines
    assert lines[-1].startswith("check: ready")
    assert sasl_login[1] not in proc.stdout + proc.stderr

    withheld = [p for p in AUDITOR_PERMISSIONS if (p.resource, p.operation) != ("topic", "READ")]
    for name in ("source", "destination"):
        grant(sandbox.cluster(name).bootstrap, "User:describer", withheld)
    cfg = _config(tmp_path / "no-read", sandbox, ("describer", sasl_login[1]), topic, extra=extra)
    proc = run_cli("check", "--config", str(cfg))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    failed = [ln for ln in proc.stdout.splitlines() if " FAIL " in ln]
    assert len(failed) == 2, proc.stdout  # one per cluster, and nothing else
    for role, line in zip(("destination", "source"), failed, strict=True):
        assert (
            line.startswith(f"{role:<12} FAIL")
            and f"topic Read withheld on 1 of 1 in-scope topics ({topic})" in line
        )
        assert "grant the auditor's principal topic Read" in line
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("mirror-audit: error: check found 2 problems: destination: topic Read withheld"), (
        last
    )
    assert "Traceback" not in proc.stderr


def _oidc(endpoint: str, client_id: str, secret: str) -> str:
    """A cluster's OIDC login lines; the sandbox's token endpoint is http on loopback, which
    a configuration must accept by name (without it, a config error: no TLS)."""
    return (
        "    sasl.mechanism: OAUTHBEARER\n    sasl.oauthbearer.method: oidc\n"
        f"    sasl.oauthbearer.token.endpoint.url: {endpoint}\n"
        f"    sasl.oauthbearer.client.id: {client_id}\n    sasl.oauthbearer.client.secret: {secret}\n"
        "  token_endpoint_allow_plaintext_credentials: true\n"
    )


def test_an_oidc_login_reads_every_part_over_oauthbearer_and_writes_no_secret(
    sandbox: SandboxState, sasl_login: tuple[str, str], tmp_path: Path
) -> None:
    """OAUTHBEARER with OIDC client credentials against the sandbox's token endpoint:
    librdkafka fetches its tokens itself, kafka-python through the auditor's provider; a
    nightly run with records and a wire fetch reads everything (snapshot, batched
    ListOffsets, transactions, wire fetch, the batch reader), then readiness says GO."""
    from audit.sandbox.token_endpoint import token_endpoint

    user, secret = sasl_login
    topic = _mirrored_topic(sandbox)
    extra = (
        "records:\n  enabled: true\nsegments:\n  source:\n    read: wire\n  destination:\n    read: wire\n"
    )
    with token_endpoint({user: secret}) as endpoint:
        login = _oidc(endpoint.url, user, secret)
        cfg = _config(tmp_path / "cfg", sandbox, sasl_login, topic, extra=extra, login=login)
        run = tmp_path / "run"
        proc = run_in_process("nightly", "--config", str(cfg), "--out", str(run))
        assert proc.returncode in (0, 1), proc.stderr[-3000:]
        ready = run_in_process("readiness", "--config", str(cfg), "--out", str(tmp_path / "ready"))
        check = run_in_process("check", "--config", str(cfg))
        issued = dict(endpoint.issued.tokens)
    assert check.returncode == 0, check.stdout + check.stderr[-3000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["invariants"]["CM-DATA-1"]["status"] == "pass", summary["invariants"]["CM-DATA-1"]
    for side in ("source", "destination"):
        notes = json.loads((run / side / "manifest.json").read_text())["notes"]
        assert notes["open_transactions"].startswith("collected"), notes["open_transactions"]  # kafka-python
        assert notes["records"]["reader"] == "batches" and notes["records"]["unreadable_ranges"] == 0
        assert notes["batches"]["read"] == "wire" and notes["batches"]["batch_scan_issues"] == 0
        assert notes["batches"]["markers"] == 1, notes["batches"]
    assert ready.returncode == 0, ready.stdout + ready.stderr[-3000:]
    assert "readiness: GO" in ready.stdout
    # Tokens for the auditor's client id only; librdkafka's and kafka-python's both.
    assert list(issued) == [user] and issued[user] >= 2, issued
    written = {**_files(run), **_files(tmp_path / "ready")}
    assert [name for name, data in written.items() if secret.encode() in data] == []
    assert secret not in proc.stdout + proc.stderr + ready.stdout + ready.stderr


def test_wrong_oidc_client_credentials_are_one_line_naming_the_endpoint(
    sandbox: SandboxState, sasl_login: tuple[str, str], tmp_path: Path
) -> None:
    from audit.sandbox.token_endpoint import token_endpoint

    user, secret = sasl_login
    topic = _topic_on_both(sandbox)
    with token_endpoint({user: secret}) as endpoint:
        login = _oidc(endpoint.url, user, "wrong-" + secret)
        cfg = _config(tmp_path / "cfg", sandbox, sasl_login, topic, login=login)
        proc = run_cli("readiness", "--config", str(cfg), "--out", str(tmp_path / "ready"))
        refused = endpoint.issued.refused
    assert proc.returncode == 2, proc.stdout + proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("mirror-audit: error: destination cluster"), last
    assert "Traceback" not in proc.stderr and "wrong-" + secret not in proc.stdout + proc.stderr
    assert refused >= 1
    assert not (tmp_path / "ready").exists()


def test_a_named_token_provider_logs_both_clients_in(
    sandbox: SandboxState, sasl_login: tuple[str, str], tmp_path: Path
) -> None:
    """``token_provider: tests.tokens:auditor``: librdkafka's oauth_cb and kafka-python's
    provider call it (readiness reads offsets in batches and open transactions with
    kafka-python, everything else with librdkafka) and the answer is GO."""
    from tests import tokens

    topic = _mirrored_topic(sandbox)
    login = "    sasl.mechanism: OAUTHBEARER\n  token_provider: tests.tokens:auditor\n"
    cfg = _config(tmp_path / "cfg", sandbox, sasl_login, topic, login=login)
    tokens.ISSUED.clear()
    ready = run_in_process("readiness", "--config", str(cfg), "--out", str(tmp_path / "ready"))
    assert ready.returncode == 0, ready.stdout + ready.stderr[-3000:]
    for side in ("source", "destination"):
        notes = json.loads((tmp_path / "ready" / side / "manifest.json").read_text())["notes"]
        assert notes["open_transactions"].startswith("collected"), notes["open_transactions"]
    assert len(tokens.ISSUED) >= 4  # both clients, both clusters


def test_an_msk_iam_token_from_awss_signer_reaches_both_clients(
    sandbox: SandboxState,
    sasl_login: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As far as a machine without AWS goes: AWS's signer makes the token from static
    credentials, both clients send it to a real OAUTHBEARER listener, and the broker (which
    is not MSK and validates JWTs) refuses it: an authentication error, said in one line."""
    import base64

    from audit.collect.metadata.transactions import kafka_python_admin, kafka_python_settings
    from audit.config_file import load_config
    from tests import tokens

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret-not-a-real-key-0000000000")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    topic = _topic_on_both(sandbox)
    login = "    sasl.mechanism: OAUTHBEARER\n  token_provider: tests.tokens:msk_signed\n"
    path = _config(tmp_path / "cfg", sandbox, sasl_login, topic, login=login)
    cluster = load_config(path).cluster("source")

    tokens.ISSUED.clear()
    proc = run_in_process("check", "--config", str(path))  # librdkafka first, as every job
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Authentication failed" in proc.stdout + proc.stderr or "authentication" in proc.stdout.lower()
    assert tokens.ISSUED, "librdkafka never asked the provider"
    url = base64.urlsafe_b64decode(tokens.ISSUED[0] + "=" * (-len(tokens.ISSUED[0]) % 4)).decode()
    assert url.startswith("https://kafka.eu-west-1.amazonaws.com/?Action=kafka-cluster%3AConnect"), url
    assert "X-Amz-Signature=" in url

    tokens.ISSUED.clear()
    settings = kafka_python_settings(cluster)
    assert isinstance(settings, dict), settings
    # The broker's refusal is what this asserts, not how fast it comes: on a loaded machine
    # the config's 5 s bootstrap ran out before the login was tried (seen once in a full run).
    settings = {**settings, "bootstrap_timeout_ms": 15_000}
    refusal = 'SaslAuthenticationFailedError: {"status":"invalid_token"}'
    # Up to three logins: on a loaded machine the broker once dropped every connection of
    # one attempt before the SASL exchange ("socket disconnected", seen in a full run right
    # after librdkafka's dozens of refused logins above), which says nothing of the token.
    for _ in range(3):
        refused = pytest.raises(Exception)  # kafka-python's own error, whatever it wraps it in
        with caplog.at_level(logging.WARNING, logger="kafka"), refused, kafka_python_admin(settings) as admin:
            admin.list_topics()
        if refusal in caplog.text:
            break
    assert tokens.ISSUED, "kafka-python never asked the provider"
    # The broker read the token and refused it as a token (not a connection problem).
    assert refusal in caplog.text
