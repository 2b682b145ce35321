"""What each sandbox broker is configured with: free loopback ports, a cluster id, its
``server.properties`` (listeners, KRaft quorum, SASL users, Kafka's authorizer) and the
self-signed TLS certificate of the SASL listeners. Written to files; nothing is started."""

from __future__ import annotations

import base64
import random
import re
import shutil
import socket
import subprocess
import uuid
from pathlib import Path

from audit.errors import SandboxError
from audit.sandbox.jars import LOCAL_TIERED_STORAGE_CLASS
from audit.sandbox.state import SandboxState

# --------------------------------------------------------------------------- ports


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# The lowest port the sandbox takes: above the registered services most machines run.
PRIVATE_LOW = 20000


def free_ports(count: int) -> list[int]:
    """Distinct free loopback ports below the kernel's ephemeral range, picked at random and
    held open together so none is handed out twice. Below that range because a port the
    kernel handed out (``bind`` to port 0) is free again once closed, and until the broker
    binds it any client's outgoing connection may take it as its source port (the suite
    runs clients of one sandbox while another starts); at random so two sandboxes starting
    at once rarely try the same one. Falls back to the kernel's choice where the range is
    unknown or leaves no room below it."""
    low = _ephemeral_low()
    if low is None or low - PRIVATE_LOW < 4 * count:
        return _kernel_ports(count)
    socks: list[socket.socket] = []
    rng = random.SystemRandom()
    try:
        for port in rng.sample(range(PRIVATE_LOW, low), low - PRIVATE_LOW):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            socks.append(s)
            if len(socks) == count:
                return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()
    return _kernel_ports(count)


def _ephemeral_low() -> int | None:
    """The first port of the kernel's ephemeral range (Linux), or None where unknown."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _kernel_ports(count: int) -> list[int]:
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


# --------------------------------------------------------------------------- config


def new_cluster_id() -> str:
    """A random Kafka Uuid in its base64url form; never starting with '-' (a CLI flag)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def check_sasl_users(users: dict[str, str]) -> None:
    """Names and passwords go into a JAAS line (``user_<name>="<password>"``): refuse what
    would break its quoting rather than start brokers that reject every login."""
    for name, password in users.items():
        if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
            raise SandboxError(f"SASL user name {name!r}: use letters, digits, '.', '_' or '-'")
        if not password or any(c in password for c in '"\\;') or any(c.isspace() for c in password):
            raise SandboxError(
                f"SASL password of user {name!r}: give a non-empty one without quotes, backslashes, "
                "';' or spaces"
            )


def _sasl_properties(users: dict[str, str], protocol: str) -> dict[str, str]:
    """PLAIN for the users given, and OAUTHBEARER validated by Kafka's unsecured JWT
    validator (the broker's default for OAUTHBEARER when no validator class is configured;
    meant for tests): a token whose ``sub`` is a user name logs in as ``User:<name>``, under
    the same ACLs as its PLAIN login. The sandbox's token endpoint (``token_endpoint``)
    issues such tokens to the users' client credentials."""
    logins = " ".join(f'user_{name}="{password}"' for name, password in users.items())
    listener = f"listener.name.{protocol.lower()}"
    return {
        "sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
        f"{listener}.plain.sasl.jaas.config": (
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {logins};"
        ),
        f"{listener}.oauthbearer.sasl.jaas.config": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
        ),
    }


TLS_STORE_PASSWORD = "sandbox-tls"  # a throwaway key for loopback tests, not a secret


def tls_ca(state: SandboxState) -> Path | None:
    """The certificate to trust (``ssl.ca.location``) when the sandbox's SASL listeners use
    TLS, else None."""
    path = Path(state.workdir) / "tls" / "ca.pem"
    return path if path.exists() else None


def make_keystore(java: str, directory: Path) -> Path:
    """A self-signed certificate for 127.0.0.1 (PKCS12 keystore for the brokers) and its PEM
    (``ca.pem``, what clients trust), made with the JDK's keytool: no CA of the machine's is
    involved, so a client that trusts anything else fails its TLS handshake."""
    keytool = str(Path(java).resolve().parent / "keytool")
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    store = directory / "broker.p12"
    common = ["-alias", "broker", "-keystore", str(store), "-storepass", TLS_STORE_PASSWORD]
    key = ["-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=sandbox-broker", "-validity", "30"]
    san = ["-ext", "SAN=ip:127.0.0.1,dns:localhost", "-storetype", "PKCS12"]
    for args in (
        ["-genkeypair", *common, *key, *san],
        ["-exportcert", *common, "-rfc", "-file", str(directory / "ca.pem")],
    ):
        proc = subprocess.run([keytool, *args], capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            raise SandboxError(f"keytool {args[0]} failed: {(proc.stderr or proc.stdout).strip()[-300:]}")
    return store


# Where each remote storage manager and metadata manager setting goes: after these prefixes
# (Kafka's defaults, set explicitly so the files say what they are).
RSM_PREFIX = "rsm.config."
RLMM_PREFIX = "rlmm.config."


def tiered_storage_properties(remote_dir: Path, brokers: int, listener: str = "PLAINTEXT") -> dict[str, str]:
    """A broker's tiered storage (KIP-405) settings: Kafka's LocalTieredStorage as the remote
    storage manager, keeping the cluster's "remote" segments under ``remote_dir`` (shared by
    its brokers, as an object store would be), and the default topic-based metadata manager
    (``__remote_log_metadata``, reached over the brokers' ``listener``). The intervals are
    short so a closed segment reaches the remote tier, and one past local retention leaves
    the local log, within seconds."""
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": LOCAL_TIERED_STORAGE_CLASS,
        "remote.log.storage.manager.impl.prefix": RSM_PREFIX,
        # LocalTieredStorage.STORAGE_DIR_CONFIG: it writes under <dir>/kafka-tiered-storage.
        f"{RSM_PREFIX}dir": str(remote_dir),
        # Deleted remote segments (retention, topic deletion) are removed from the directory.
        f"{RSM_PREFIX}delete.enable": "true",
        "remote.log.metadata.manager.impl.prefix": RLMM_PREFIX,
        "remote.log.metadata.manager.listener.name": listener,
        f"{RLMM_PREFIX}remote.log.metadata.topic.replication.factor": str(brokers),
        f"{RLMM_PREFIX}remote.log.metadata.topic.num.partitions": "3",
        # One live replica suffices: a test may stop a broker without halting the tiering.
        f"{RLMM_PREFIX}remote.log.metadata.topic.min.isr": "1",
        # Copy and expire every second (default 30 s), retention checked every second (5 min)
        # from a second after start (30 s; an internal setting, "for testing only"), a locally
        # deleted segment's files gone after a second (1 min).
        "remote.log.manager.task.interval.ms": "1000",
        "log.retention.check.interval.ms": "1000",
        "log.initial.task.delay.ms": "1000",
        "log.segment.delete.delay.ms": "1000",
    }


def server_properties(
    node_id: int,
    roles: str,
    port: int,
    controller_port: int,
    data_dir: Path,
    extra: dict[str, str],
    sasl_port: int | None = None,
    sasl_users: dict[str, str] | None = None,
    authorizer: bool = False,
    keystore: Path | None = None,
) -> str:
    listeners = f"PLAINTEXT://127.0.0.1:{port}"
    advertised = listeners
    protocols = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    sasl = "SASL_SSL" if keystore is not None else "SASL_PLAINTEXT"
    if sasl_port is not None:
        listeners += f",{sasl}://127.0.0.1:{sasl_port}"
        advertised += f",{sasl}://127.0.0.1:{sasl_port}"
        protocols += f",{sasl}:{sasl}"
    if "controller" in roles:
        listeners += f",CONTROLLER://127.0.0.1:{controller_port}"
    props = {
        "process.roles": roles,
        "node.id": str(node_id),
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": listeners,
        "advertised.listeners": advertised,
        "listener.security.protocol.map": protocols,
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(data_dir),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "5",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # A member of a share, streams or consumer group (the new protocol) learns its
        # assignment at its next heartbeat: every 5 s by default, so each group a test or
        # the demo starts waited that long for its first records. Loopback answers in
        # milliseconds; sessions keep their 45 s.
        **{
            f"group.{kind}.{key}": "500"
            for kind in ("share", "streams", "consumer")
            for key in ("min.heartbeat.interval.ms", "heartbeat.interval.ms")
        },
        # Leadership moves only when a test asks for it (epochs rise only then).
        "auto.leader.rebalance.enable": "false",
        "log.flush.interval.messages": "9223372036854775807",
    }
    if sasl_port is not None:
        props.update(_sasl_properties(sasl_users or {}, sasl))
        if keystore is not None:
            props["ssl.keystore.type"] = "PKCS12"
            props["ssl.keystore.location"] = str(keystore)
            props["ssl.keystore.password"] = TLS_STORE_PASSWORD
            props["ssl.key.password"] = TLS_STORE_PASSWORD
    if authorizer:
        props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        props["super.users"] = "User:ANONYMOUS"
    props.update(extra)
    return "".join(f"{k}={v}\n" for k, v in props.items())
