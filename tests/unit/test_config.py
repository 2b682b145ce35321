from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path

import pytest

from audit.cli import main
from audit.config import (
    AuditConfig,
    Mm2Config,
    RecordsConfig,
    SegmentsConfig,
    Thresholds,
    TopicRecordScope,
)
from audit.config_file import load_config, parse_config
from audit.errors import ConfigError
from audit.logs import SecretMask
from audit.redaction import redact_properties

FULL = """
mode: cluster-mirroring
source:
  bootstrap_servers: src:9092
  properties:
    security.protocol: SASL_SSL
    sasl.mechanism: PLAIN
    sasl.username: auditor
    sasl.password: ${SRC_PASSWORD}
    ssl.key.password: ${KEY_PASS:-fallback-secret}
    sasl.jaas.config: org.apache.kafka.common.security.plain.PlainLoginModule required password="jaas-secret";
destination:
  bootstrap_servers: ${DST_BOOTSTRAP}
  timeout_seconds: 10
scope:
  topics:
    include: ["orders.*", "payments"]
    exclude: ["orders-tmp"]
  groups:
    include: [".*"]
thresholds:
  max_lag_records: 500
spark:
  master: local[2]
  conf:
    spark.sql.shuffle.partitions: 4
output:
  root: /tmp/runs
"""

ENV = {"SRC_PASSWORD": "s3cr3t-pw", "DST_BOOTSTRAP": "dst:9093"}


def test_defaults_match_design() -> None:
    cfg = parse_config("", env={})
    assert cfg.mode == "cluster-mirroring"
    assert cfg.source is None and cfg.destination is None
    assert cfg.thresholds == Thresholds(
        max_lag_records=10000,
        max_lag_seconds=300.0,
        epoch_headroom=3,
        group_sync_tolerance_records=0,
        max_open_txn_seconds=900.0,
    )
    assert cfg.spark.master == "local[*]"
    assert cfg.output.root == "reports"
    assert load_config(None) == AuditConfig()


def test_full_config_and_env_expansion() -> None:
    cfg = parse_config(FULL, env=ENV)
    assert cfg.source is not None and cfg.destination is not None
    assert cfg.source.properties["sasl.password"] == "s3cr3t-pw"
    assert cfg.source.properties["ssl.key.password"] == "fallback-secret"
    assert cfg.destination.bootstrap_servers == "dst:9093"
    assert cfg.destination.timeout_seconds == 10.0
    assert cfg.thresholds.max_lag_records == 500
    assert cfg.thresholds.epoch_headroom == 3  # untouched keys keep their defaults
    assert cfg.spark.conf == {"spark.sql.shuffle.partitions": "4"}
    assert cfg.source.client_settings()["bootstrap.servers"] == "src:9092"


def test_missing_env_var_names_path_and_variable() -> None:
    with pytest.raises(
        ConfigError, match=r"source\.properties\.sasl\.password: environment variable SRC_PASSWORD"
    ):
        parse_config(FULL, env={"DST_BOOTSTRAP": "x"})


def test_dollar_escape() -> None:
    cfg = parse_config("output:\n  root: /tmp/$${HOME}\n", env={})
    assert cfg.output.root == "/tmp/${HOME}"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            "thresholds:\n  max_lag_recordz: 5\n",
            "thresholds.max_lag_recordz: unknown key (did you mean 'thresholds.max_lag_records'?)",
        ),
        ("sourc:\n  bootstrap_servers: x\n", "sourc: unknown key (did you mean 'source'?)"),
        ("scope:\n  topics:\n    includes: [a]\n", "scope.topics.includes: unknown key"),
        ("mode: mirrormaker\n", "mode: must be one of 'cluster-mirroring' | 'mm2'"),
        ("thresholds:\n  max_lag_records: lots\n", "thresholds.max_lag_records: expected an integer"),
        ("thresholds:\n  epoch_headroom: -1\n", "thresholds.epoch_headroom: must not be negative"),
        ("scope:\n  topics:\n    include: ['(']\n", "scope.topics.include[0]: invalid regex"),
        ("source:\n  properties: {}\n", "source.bootstrap_servers: required key is missing"),
        ("source: [1, 2]\n", "source: expected a mapping"),
        ("- a\n- b\n", "<top level>: expected a mapping"),
        (
            "segments:\n  source:\n    read: disk\n",
            "segments.source.read: must be one of 'none' | 'wire' | 'files', got 'disk'",
        ),
        ("segments:\n  split_bytes: 0\n", "segments.split_bytes: must be positive"),
        ("records:\n  chunk_records: 3000000000\n", "records.chunk_records: must be at most 2147483647"),
        (
            "records:\n  reader: rust\n",
            "records.reader: must be one of 'auto' | 'batches' | 'native' | 'python', got 'rust'",
        ),
        (
            "spark:\n  worker_malloc: libmimalloc.so.2\n",
            "spark.worker_malloc: must be auto, system or an absolute path to a shared library",
        ),
        ("segments:\n  split_bytes: -1\n", "segments.split_bytes: must be positive"),
        ("segments:\n  split_offsets: 0\n", "segments.split_offsets: must be positive"),
        ("segments:\n  fetch_max_bytes: 0\n", "segments.fetch_max_bytes: must be positive"),
        (
            "segments:\n  source:\n    read: files\n",
            "segments.source.paths: read: files needs at least one path",
        ),
        (
            "segments:\n  source:\n    read: files\n    paths: []\n",
            "segments.source.paths: read: files needs at least one path",
        ),
        (
            "segments:\n  destination:\n    read: wire\n    paths: [/data]\n",
            "segments.destination.paths: paths are only read with read: files (read is 'wire')",
        ),
        (
            "segments:\n  source:\n    paths: [/data]\n",
            "segments.source.paths: paths are only read with read: files (read is 'none')",
        ),
    ],
)
def test_bad_config_names_the_key(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text, origin="bad.yaml", env={})
    message = str(info.value)
    assert fragment in message
    assert message.startswith("config file bad.yaml: ")
    assert "\n" not in message


def test_spark_worker_malloc_defaults_to_auto() -> None:
    assert parse_config("", env={}).spark.worker_malloc == "auto"
    given = "spark:\n  worker_malloc: /opt/lib/libjemalloc.so.2\n"
    assert parse_config(given, env={}).spark.worker_malloc == "/opt/lib/libjemalloc.so.2"


def test_records_reader_defaults_to_auto() -> None:
    assert parse_config("", env={}).records.reader == "auto"
    assert parse_config("records:\n  reader: python\n", env={}).records.reader == "python"


def test_segments_section_reads_files_or_wire_per_side() -> None:
    cfg = parse_config(
        "mode: cluster-mirroring\n"
        "segments:\n"
        "  source:\n"
        "    read: files\n"
        "    paths: [/var/lib/kafka/data, 's3a://backup/kafka']\n"
        "  destination:\n"
        "    read: wire\n"
        "  deep: true\n"
        "  split_bytes: 1048576\n",
        env={},
    )
    seg = cfg.segments
    assert (seg.source.read, seg.source.paths) == ("files", ("/var/lib/kafka/data", "s3a://backup/kafka"))
    assert (seg.destination.read, seg.destination.paths) == ("wire", ())
    assert (seg.deep, seg.split_bytes) == (True, 1048576)
    assert seg.enabled()
    # One path may be given as a plain string.
    one = parse_config("segments:\n  destination:\n    read: files\n    paths: /data\n", env={})
    assert one.segments.destination.paths == ("/data",)
    assert not parse_config("", env={}).segments.enabled()


def test_invalid_yaml_gives_position() -> None:
    with pytest.raises(ConfigError, match=r"not valid YAML at line 2"):
        parse_config("a: 1\n b: [\n", origin="x.yaml", env={})


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config("/nonexistent/audit.yaml")


def test_redaction_everywhere_config_is_shown() -> None:
    cfg = parse_config(FULL, env=ENV)
    shown = repr(cfg.redacted())
    for secret in ("s3cr3t-pw", "fallback-secret", "jaas-secret"):
        assert secret not in shown
    props = cfg.redacted()["source"]["properties"]
    assert props["sasl.password"] == "***"
    assert props["sasl.jaas.config"] == "***"
    assert props["ssl.key.password"] == "***"
    assert props["sasl.username"] == "auditor"  # not a secret: kept so people can see who audits
    assert props["security.protocol"] == "SASL_SSL"
    assert set(cfg.secret_values()) >= {"s3cr3t-pw", "fallback-secret"}


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://pusher:s3cr3t-pg@pushgateway:9091", "http://pusher:***@pushgateway:9091"),
        ("https://pusher:s3cr3t-pg@pg.example:443/prefix", "https://pusher:***@pg.example:443/prefix"),
        ("pusher:s3cr3t-pg@pushgateway:9091", "http://pusher:***@pushgateway:9091"),  # no scheme
        ("http://pushgateway:9091", "http://pushgateway:9091"),
    ],
)
def test_a_pushgateway_password_is_redacted_where_config_is_shown(url: str, shown: str) -> None:
    allow = "  pushgateway_allow_plaintext_credentials: true\n"  # http with a password: explicitly allowed
    cfg = parse_config(f"output:\n  pushgateway_url: '{url}'\n{allow}", env={})
    redacted = cfg.redacted()
    assert redacted["output"]["pushgateway_url"] == shown
    assert "s3cr3t-pg" not in repr(redacted)
    assert redacted["output"]["root"] == cfg.output.root  # the rest of the section as it was
    # The log mask knows it too, for a message that quotes the URL some other way.
    assert ("s3cr3t-pg" in cfg.secret_values()) == ("s3cr3t-pg" in url)


@pytest.mark.parametrize(
    "url", ["http://pusher:s3cr3t-pg@pushgateway:9091", "pusher:s3cr3t-pg@pushgateway:9091"]
)
def test_pushgateway_credentials_without_tls_are_a_config_error_naming_the_key(url: str) -> None:
    with pytest.raises(ConfigError, match=r"output\.pushgateway_url: has credentials but no TLS") as err:
        parse_config(f"output:\n  pushgateway_url: '{url}'\n", env={})
    assert "s3cr3t-pg" not in str(err.value)


def _oidc_source(url: str, extra: str = "") -> str:
    return (
        "source:\n  bootstrap_servers: k:9093\n  properties:\n    sasl.mechanism: OAUTHBEARER\n"
        f"    sasl.oauthbearer.method: oidc\n    sasl.oauthbearer.token.endpoint.url: '{url}'\n"
        "    sasl.oauthbearer.client.id: auditor\n    sasl.oauthbearer.client.secret: s3cr3t-oidc\n"
        f"{extra}destination:\n  bootstrap_servers: d:9093\n"
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://idp.example.com:8080/realms/kafka/token?tenant=t1", "http://idp.example.com:8080/***"),
        ("HTTP://user:pw-in-url@idp.example.com/token", "HTTP://idp.example.com/***"),
        ("idp.example.com/token", "***"),  # no scheme: not https either
    ],
)
def test_an_oidc_token_endpoint_without_tls_is_a_config_error_unless_allowed_by_name(
    url: str, shown: str
) -> None:
    """The client secret goes to the token endpoint in HTTP Basic, from librdkafka,
    kafka-python and the Java client alike: over http, in clear. Refused at load as a
    Pushgateway URL with credentials is, and accepted only where the cluster says so."""
    key = "source.properties.sasl.oauthbearer.token.endpoint.url"
    with pytest.raises(ConfigError) as caught:
        parse_config(_oidc_source(url), env={})
    assert str(caught.value) == (
        f"config file <config>: {key}: has no TLS ({shown}): the OIDC client secret would travel in "
        "clear; use https:// "
        "(or set source.token_endpoint_allow_plaintext_credentials: true)"
    )
    assert "s3cr3t-oidc" not in str(caught.value) and "pw-in-url" not in str(caught.value)
    allowed = parse_config(_oidc_source(url, "  token_endpoint_allow_plaintext_credentials: true\n"), env={})
    assert allowed.cluster("source").token_endpoint_allow_plaintext_credentials is True
    assert allowed.cluster("source").redacted()["token_endpoint_allow_plaintext_credentials"] is True
    secure = parse_config(_oidc_source("https://idp.example.com/realms/kafka/token"), env={})
    assert secure.cluster("source").token_endpoint_allow_plaintext_credentials is False


def test_spark_settings_and_segment_uris_are_redacted_and_masked() -> None:
    text = """
spark:
  conf:
    spark.hadoop.fs.s3a.secret.key: s3-secret-marker
    spark.hadoop.fs.s3a.access.key: AKIAMARKER
    spark.my.credential.store: cred-marker
    spark.custom.opaque: opaque-marker
    spark.eventLog.dir: s3a://EVTKEY:evt-pass-marker@bucket/events
    spark.executor.memory: 2g
  secret_conf: ['spark\\.custom\\..*']
segments:
  source:
    read: files
    paths: ['s3a://PATHKEY:path-pass-marker@bucket/kafka']
"""
    cfg = parse_config(text, env={})
    shown = repr(cfg.redacted())
    markers = (
        "s3-secret-marker",
        "AKIAMARKER",
        "cred-marker",
        "opaque-marker",
        "evt-pass-marker",
        "path-pass-marker",
        "EVTKEY",
        "PATHKEY",
    )
    for marker in markers:
        assert marker not in shown, marker
        assert any(marker in v for v in cfg.secret_values()), marker
    assert cfg.redacted()["spark"]["conf"]["spark.executor.memory"] == "2g"
    assert cfg.redacted()["segments"]["source"]["paths"] == ["s3a://***@bucket/kafka"]


@pytest.mark.parametrize(
    "key",
    [
        "sasl.oauthbearer.client.secret",
        "ssl.keystore.key",
        "ssl.key.pem",
        "basic.auth.user.info.token",
        "api.key",
    ],
)
def test_secret_key_names(key: str) -> None:
    assert redact_properties({key: "v"}) == {key: "***"}


@pytest.mark.parametrize("key", ["ssl.endpoint.identification.algorithm", "key.serializer", "client.id"])
def test_non_secret_key_names(key: str) -> None:
    assert redact_properties({key: "v"}) == {key: "v"}


def test_secret_mask_filter_masks_messages() -> None:
    mask = SecretMask(["hunter2"])
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "auth failed with %s", ("hunter2",), None)
    assert mask.filter(record)
    assert record.getMessage() == "auth failed with ***"


def test_scope_matching_and_internal_topics() -> None:
    cfg = parse_config(FULL, env=ENV)
    assert cfg.scope.topic_in_scope("orders")
    assert cfg.scope.topic_in_scope("orders.eu")
    assert not cfg.scope.topic_in_scope("orders-tmp")
    assert not cfg.scope.topic_in_scope("payments-x")  # whole-name match
    default = AuditConfig().scope
    for internal in (
        "__consumer_offsets",
        "__transaction_state",
        "mm2-offset-syncs.dst.internal",
        "connect-offsets",
    ):
        assert not default.topic_in_scope(internal)
    assert default.topic_in_scope("anything")


def test_cli_readiness_with_mistyped_key_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("thresholds:\n  max_lag_recordz: 5\n")
    code = main(["readiness", "--config", str(bad), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2
    assert "thresholds.max_lag_recordz" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_example_config_is_valid_and_documents_every_key() -> None:
    example = Path(__file__).resolve().parents[2] / "conf" / "audit.example.yaml"
    cfg = load_config(example, env={"SOURCE_KAFKA_PASSWORD": "pw1", "DEST_KAFKA_PASSWORD": "pw2"})
    assert cfg.thresholds == Thresholds()  # the example shows the defaults
    text = example.read_text()
    for section in (
        "mode",
        "source",
        "destination",
        "scope",
        "thresholds",
        "mirror",
        "segments",
        "records",
        "spark",
        "output",
        "validation",
    ):
        assert f"\n{section}:" in text
    for key in Thresholds.__dataclass_fields__:
        assert f"  {key}:" in text
    assert cfg.records == RecordsConfig()  # record-level verification is off by default
    for key in RecordsConfig.__dataclass_fields__:
        assert f"  {key}:" in text
    for key in TopicRecordScope.__dataclass_fields__:
        assert f" {key}:" in text
    assert cfg.segments == SegmentsConfig()  # batch-level collection is off by default
    for key in SegmentsConfig.__dataclass_fields__:
        assert f"  {key}:" in text
    assert cfg.mirror.mm2 == Mm2Config()  # the mm2 section shows the defaults too
    for key in Mm2Config.__dataclass_fields__:
        assert f" {key}:" in text


@pytest.mark.timeout(120)  # never reached by RE2; a backtracking engine would not return for hours
def test_scope_patterns_are_re2_and_a_backtracking_one_terminates() -> None:
    """The pattern that takes a backtracking engine 2^40 steps on a 40-character name is
    answered (RE2 matches in time linear in the name); what RE2 cannot express is refused
    when the config is read, naming the key."""
    cfg = parse_config("scope:\n  topics:\n    include: ['(a+)+b']\n", env={})
    assert cfg.scope.topic_in_scope("a" * 40) is False
    assert cfg.scope.topic_in_scope("a" * 40 + "b") is True
    with pytest.raises(ConfigError, match=r"scope.topics.exclude\[0\]: invalid regex.*no lookaround"):
        parse_config("scope:\n  topics:\n    exclude: ['(?!keep).*']\n", env={})


def _float_settings(cls: type, path: str = "") -> list[str]:
    """Every setting typed as a number with a fraction, in every section (nested ones too),
    as a YAML key path; the clusters' sections under ``source``."""
    import types as pytypes
    from typing import Union, get_args, get_origin, get_type_hints

    out = []
    for f in dataclasses.fields(cls):
        tp = get_type_hints(cls)[f.name]
        if get_origin(tp) in (Union, pytypes.UnionType):
            tp = next((a for a in get_args(tp) if a is not type(None)), tp)
        key = f"{path}.{f.name}" if path else f.name
        if tp is float:
            out.append(key)
        elif dataclasses.is_dataclass(tp):
            out += _float_settings(tp, key)  # type: ignore[arg-type]
    return out


FLOAT_SETTINGS = _float_settings(AuditConfig)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
@pytest.mark.parametrize("key", FLOAT_SETTINGS)
def test_no_number_setting_accepts_nan_or_infinity(key: str, value: str) -> None:
    """NaN compares false with every bound a section checks, so "<= 0" let a timeout of
    .nan through to the sockets (source, destination and records timeouts did); no setting
    means a number that is not finite, so the loader refuses them all, naming the key."""
    *sections, name = key.split(".")
    text = "".join(f"{'  ' * i}{s}:\n" for i, s in enumerate(sections))
    if sections and sections[0] in ("source", "destination"):
        text += "  bootstrap_servers: localhost:9092\n"
    text += f"{'  ' * len(sections)}{name}: {value}\n"
    with pytest.raises(ConfigError, match=rf"^.*{re.escape(key)}: expected a finite number"):
        parse_config(text, env={})


def test_the_number_settings_include_the_timeouts() -> None:
    for key in ("source.timeout_seconds", "records.timeout_seconds", "notify.timeout_seconds"):
        assert key in FLOAT_SETTINGS
