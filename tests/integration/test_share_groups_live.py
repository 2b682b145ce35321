"""Share groups (KIP-932) audited on real 4.4.0 brokers, against Kafka's own tool.

Real share consumers (Kafka's KafkaShareConsumer) make the groups on the source, some
records acknowledged and some held in flight; the sandbox's syncer sets their start
offsets on the destination as KIP-1279 does (clamped, an active destination group left
alone), one of them ahead of the clamp. The snapshot reads the groups with the Java
Admin; ``kafka-share-groups.sh --describe --offsets`` (ShareGroupCommand, run as its own
process) is the oracle for what it read.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from audit.collect.metadata.java_admin import classpath, java_gateway
from audit.java_runtime import find_java
from audit.sandbox.share_groups import delete_share_groups, start_share_consumer, sync_share_group_offsets
from audit.sandbox.state import SandboxState
from tests.cli import run_in_process
from tests.integration.test_audit_live import _config, _mirror_topic


def _described(sandbox: SandboxState, cluster: str, group: str) -> set[tuple[str, str, int, int, int | None]]:
    """``kafka-share-groups --describe --offsets --group G``: (group, topic, partition,
    start offset, lag) per row with a start offset."""
    out = subprocess.run(
        [
            find_java(),
            "-cp",
            f"{sandbox.jars}/*",
            "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
            "--bootstrap-server",
            sandbox.cluster(cluster).bootstrap,
            "--describe",
            "--offsets",
            "--group",
            group,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    rows = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 5 and fields[0] == group and fields[3] != "-":
            lag = None if fields[4] == "-" else int(fields[4])
            rows.add((fields[0], fields[1], int(fields[2]), int(fields[3]), lag))
    return rows


def _await_start(sandbox: SandboxState, group: str, start: int, timeout: float = 60.0) -> None:
    """Until kafka-share-groups shows ``group``'s start offset on the source at ``start``.
    The member holding records in flight commits its acknowledgements before the share
    coordinator has moved the start offset past them: a snapshot taken in between read 0
    where the describe just after it read 20 (one full run in three), a race of the
    fixture, not of the reader. (The members that closed show their start as the describe
    does, before and after the snapshot alike.)"""
    deadline = time.monotonic() + timeout
    while True:
        found = _described(sandbox, "source", group)
        if found and all(row[3] == start for row in found):
            return
        assert time.monotonic() < deadline, f"{group}'s start offset not yet {start}: {sorted(found)}"
        time.sleep(0.5)


def test_share_groups_are_read_as_kafka_share_groups_describes_them_and_audited_by_the_clamp(
    sandbox: SandboxState, tmp_path: Path
) -> None:
    run = uuid.uuid4().hex[:8]
    topic = f"shared-{run}"
    _mirror_topic(sandbox, topic, 60, [[1, 2]])
    source, destination = sandbox.cluster("source").bootstrap, sandbox.cluster("destination").bootstrap
    synced, ahead, active = (f"{name}-{run}" for name in ("synced", "ahead", "active"))
    consumers = [
        start_share_consumer(source, synced, topic, acknowledge=20, hold=5),  # in flight: held
        start_share_consumer(source, ahead, topic, acknowledge=20),
        start_share_consumer(source, active, topic, acknowledge=20),
    ]
    try:
        consumers.pop().close()  # its acknowledgements are committed; it stays a group
        consumers.pop().close()
        on_destination = start_share_consumer(destination, active, topic, acknowledge=1)
        try:
            written = sync_share_group_offsets(
                source,
                destination,
                [synced, ahead, active],
                adjust=lambda g, t, p, clamped: clamped + 7 if g == ahead else clamped,
            )
            assert written == 2  # the group active on the destination is left alone
            _await_start(sandbox, synced, 20)  # its 20 acknowledged records, persisted
            cfg = _config(tmp_path, sandbox, f"scope:\n  topics:\n    include: ['{topic}']\n")
            snap = tmp_path / "snap"
            taken = run_in_process("snapshot", "--config", str(cfg), "--out", str(snap))
            assert taken.returncode == 0, taken.stderr[-3000:]
            for cluster in ("source", "destination"):
                read = {
                    (r["group_id"], r["topic"], r["partition"], r["start_offset"], r["lag"])
                    for r in pq.read_table(snap / cluster / "share_group_offsets.parquet").to_pylist()
                    if r["group_id"].endswith(run)
                }
                oracle = set().union(*(_described(sandbox, cluster, g) for g in (synced, ahead, active)))
                assert read == oracle, cluster
                assert read, f"no share group start offset on the {cluster}"
            groups = {r["group_id"]: r for r in pq.read_table(snap / "source" / "groups.parquet").to_pylist()}
            assert groups[synced]["group_type"] == "share" and groups[synced]["member_count"] == 1
            audited = run_in_process(
                "audit",
                "--config",
                str(cfg),
                "--source",
                str(snap / "source"),
                "--destination",
                str(snap / "destination"),
                "--out",
                str(tmp_path / "run"),
                "--engine",
                "local",
                "--output",
                "json",
            )
        finally:
            on_destination.close()
    finally:
        for consumer in consumers:
            consumer.close()
        # The shared sandbox's later snapshots read every group: leave none of these.
        for cluster in ("source", "destination"):
            delete_share_groups(sandbox.cluster(cluster).bootstrap, [synced, ahead, active])
    summary: dict[str, Any] = json.loads(audited.stdout)["summary"]
    group_1 = summary["invariants"]["CM-GROUP-1"]
    assert group_1["status"] == "fail", group_1
    failing = [e for c in group_1["checks"] for e in c["examples"]]
    assert {(e["group_id"], e["sync_delta"]) for e in failing if "sync_delta" in e} == {(ahead, 7)}
    compared = {
        r["group_id"]: r
        for r in pq.read_table(tmp_path / "run" / "compare" / "groups.parquet").to_pylist()
        if r["group_id"].endswith(run)
    }
    assert compared[active]["classification"] == "active-on-destination"
    assert compared[synced]["classification"] == "synced" and compared[synced]["offsets_compared"]
    assert summary["invariants"]["CM-GROUP-3"]["status"] == "pass"


def test_the_jvm_of_a_java_admin_ends_with_its_block() -> None:
    """A snapshot starts a JVM only to read share groups; a nightly job or the sandbox's
    mirror must not keep one alive per snapshot until the process exits."""
    jars = classpath("auto")
    assert not isinstance(jars, str), jars
    with java_gateway(jars) as gateway:
        pid = int(gateway.jvm.java.lang.ProcessHandle.current().pid())
        os.kill(pid, 0)  # alive inside the block
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_failed_java_call_is_read_while_its_jvm_lives_and_kafkas_retriable_errors_are_told_apart() -> None:
    """A Java Admin future that failed becomes one line read inside the JVM (a py4j error
    outliving its gateway cannot say its own name: CI once showed only "<exception str()
    failed>"), and Kafka's RetriableException subclasses are the ones tried again."""
    from audit.collect.metadata.java_admin import JavaAdmin, JavaCallError

    jars = classpath("auto")
    assert not isinstance(jars, str), jars
    failed = []
    with java_gateway(jars) as gateway:
        admin = JavaAdmin(gateway, None, 5.0)
        for name, message in (
            ("CoordinatorLoadInProgressException", "loading"),
            ("GroupAuthorizationException", "no"),
        ):
            future = gateway.jvm.java.util.concurrent.CompletableFuture()
            error = getattr(gateway.jvm.org.apache.kafka.common.errors, name)(message)
            future.completeExceptionally(error)
            with pytest.raises(JavaCallError) as caught:
                admin._get(future)
            failed.append(caught.value)
    assert [(e.cause, str(e), e.retriable) for e in failed] == [
        ("CoordinatorLoadInProgressException", "CoordinatorLoadInProgressException: loading", True),
        ("GroupAuthorizationException", "GroupAuthorizationException: no", False),
    ]


def test_the_continuous_mirror_syncs_share_groups_as_the_coordinator_does(sandbox: SandboxState) -> None:
    """The sandbox's running mirror (the failover demo's) syncs a share group's start
    offsets too, clamped, within its share sync period, as KIP-1279's coordinator does."""
    from audit.collect.metadata.java_admin import java_admin
    from audit.config import ClusterConfig
    from audit.sandbox import mirror_control
    from audit.sandbox.mirror_process import SHARE_SYNC_SECONDS

    run = uuid.uuid4().hex[:8]
    topic, group = f"mirrored-{run}", f"follows-{run}"
    _mirror_topic(sandbox, topic, 40, [[1, 2]])
    source, destination = sandbox.cluster("source").bootstrap, sandbox.cluster("destination").bootstrap
    for acknowledged in (15, 5):  # the second session's fetch moves the start offset to 15
        start_share_consumer(source, group, topic, acknowledge=acknowledged).close()

    def starts(bootstrap: str) -> dict[tuple[str, int], int]:
        with java_admin(ClusterConfig(bootstrap), "auto") as admin:
            assert not isinstance(admin, str), admin
            read = admin.share_groups([group])
            return {(o.topic, o.partition): o.start_offset for g in read for o in g.offsets}

    on_source = starts(source)
    assert on_source and all(o > 0 for o in on_source.values()), on_source
    mirror_control.start(sandbox, topics=topic, groups=group)
    try:
        deadline = time.monotonic() + 3 * SHARE_SYNC_SECONDS + 30
        while starts(destination) != on_source and time.monotonic() < deadline:
            time.sleep(1)
        assert starts(destination) == on_source
    finally:
        mirror_control.stop(sandbox)
        for bootstrap in (source, destination):
            delete_share_groups(bootstrap, [group])


def test_share_groups_are_read_over_sasl_ssl_and_an_oidc_login_the_java_client_refuses_is_a_note(
    sandbox: SandboxState, sasl_login: tuple[str, str], tmp_path: Path
) -> None:
    """The Java client logs in as the cluster's config says. SASL_SSL with the sandbox's
    PEM CA and PLAIN with the password: the snapshot reads the share group's start offsets
    as the PLAINTEXT listener gives them, and no secret reaches a file. OAUTHBEARER with
    OIDC client credentials: the Java client asks the sandbox's token endpoint, but refuses
    its unsigned tokens (it requires a signature; the sandbox's brokers accept only
    unsigned ones), so the share groups are listed, not read, and the note says why:
    CM-GROUP-1 then counts them unchecked (tests/spark/test_share_groups.py)."""
    from audit.sandbox.acls import grant
    from audit.sandbox.token_endpoint import token_endpoint
    from tests.integration.test_credentials_live import _config as sasl_config
    from tests.integration.test_credentials_live import _files, _mirrored_topic, _oidc

    for name in ("source", "destination"):  # the documented permissions, as the credentials tests grant
        grant(sandbox.cluster(name).bootstrap, f"User:{sasl_login[0]}")
    topic = _mirrored_topic(sandbox)
    group = f"sasl-share-{uuid.uuid4().hex[:8]}"
    source = sandbox.cluster("source").bootstrap
    for acknowledged in (10, 5):
        start_share_consumer(source, group, topic, acknowledge=acknowledged).close()
    expected = _described(sandbox, "source", group)
    assert expected
    user, secret = sasl_login

    def snapshot(name: str, login: str | None) -> tuple[Path, str]:
        cfg = sasl_config(tmp_path / name, sandbox, sasl_login, topic, login=login)
        snap = tmp_path / f"snap-{name}"
        taken = run_in_process("snapshot", "--config", str(cfg), "--out", str(snap))
        assert taken.returncode == 0, taken.stderr[-3000:]
        assert [f for f, data in _files(snap).items() if secret.encode() in data] == []
        assert secret not in taken.stdout + taken.stderr
        return snap, json.loads((snap / "source" / "manifest.json").read_text())["notes"]["share_groups"]

    try:
        snap, note = snapshot("password", None)
        assert note.startswith("1 share groups, start offsets read"), note
        read = {
            (r["group_id"], r["topic"], r["partition"], r["start_offset"], r["lag"])
            for r in pq.read_table(snap / "source" / "share_group_offsets.parquet").to_pylist()
        }
        assert read == expected
        with token_endpoint({user: secret}) as endpoint:
            snap, note = snapshot("oidc", _oidc(endpoint.url, user, secret))
        assert note == (
            "1 share groups listed, their start offsets not read: the Java client did not start: "
            "LoginException: Malformed JWT provided; expected three sections (header, payload, and signature)"
        ), note
        assert not (snap / "source" / "share_group_offsets.parquet").exists()
    finally:
        delete_share_groups(source, [group])
