"""One redaction rule for every URL the tool shows (issue 53): userinfo, query and fragment
hidden in the configuration view, in error lines and in log lines; the value of a key
that holds secrets never echoed by a config error, whatever its type; a Spark session that
cannot start told in one line without the secret."""

from __future__ import annotations

import logging

import pytest

from audit.config import SparkConfig
from audit.config_file import parse_config
from audit.errors import ConfigError
from audit.logs import SecretMask, mask_secrets
from audit.redaction import redact_uri, uri_secrets
from audit.spark_session import start_failure


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("s3a://KEY:pw@bucket/kafka", "s3a://***@bucket/kafka"),
        ("https://reports.example/runs?token=t0k3n-value#top", "https://reports.example/runs?***#***"),
        ("see https://u:p@h:8443/r?sig=abc), then", "see https://***@h:8443/r?***), then"),
        # A password holding an unescaped '#' must not leave its first part as the "host".
        ("http://user:pa#ss@host/x", "http://***@host/x"),
        ("Invalid master URL: spark://user:SECRET@host:7077", "Invalid master URL: spark://***@host:7077"),
        ("/data/kafka-logs/orders-0", "/data/kafka-logs/orders-0"),
        ("local[*]", "local[*]"),
    ],
)
def test_every_url_in_a_text_is_shown_without_userinfo_query_or_fragment(text: str, shown: str) -> None:
    assert redact_uri(text) == shown


def test_the_configuration_view_hides_the_report_link_s_credentials_and_any_url_s_query() -> None:
    cfg = parse_config(
        "notify:\n  report_base_url: 'https://viewer:view-pw-marker@reports.example/audit?token=tok-marker-1#frag-marker'\n"
        "output:\n  pushgateway_url: 'https://pusher:pg-pw-marker@pg.example/p?k=query-marker-2'\n"
        "mirror:\n  state_file: 'https://state.example/mirror.json?sig=sig-marker-3'\n",
        env={},
    )
    shown = cfg.redacted()
    assert shown["notify"]["report_base_url"] == "https://***@reports.example/audit?***#***"
    assert shown["output"]["pushgateway_url"] == "https://pusher:***@pg.example/p?***"
    assert shown["mirror"]["state_file"].endswith("state.example/mirror.json?***")
    for marker in (
        "view-pw-marker",
        "tok-marker-1",
        "frag-marker",
        "pg-pw-marker",
        "query-marker-2",
        "sig-marker-3",
    ):
        assert marker not in repr(shown), marker
    # The log mask knows the report link's credentials too, for a message quoting them alone.
    assert {"view-pw-marker", "tok-marker-1", "frag-marker"} <= set(cfg.secret_values())


@pytest.mark.parametrize(
    "text",
    [
        "output:\n  pushgateway_url: ['https://pusher:SECRET-MARK@pg.example/']\n",
        "output:\n  pushgateway_url: {url: 'https://pusher:SECRET-MARK@pg.example/'}\n",
        "notify:\n  webhooks:\n    - url: ['https://hooks.slack.com/services/T0/B0/SECRET-MARK']\n",
        "notify:\n  report_base_url: ['https://u:SECRET-MARK@reports.example/']\n",
        "spark:\n  master: ['spark://u:SECRET-MARK@host:7077']\n",
        "segments:\n  source:\n    read: files\n    paths: [{p: 's3a://K:SECRET-MARK@bucket/x'}]\n",
        "source:\n  bootstrap_servers: a:9092\n  properties:\n    sasl.password: [SECRET-MARK]\n",
        # Not a secret-bearing key, but a URL with credentials in a mistyped value.
        "output:\n  root: ['s3a://K:SECRET-MARK@bucket/reports']\n",
    ],
)
def test_a_secret_bearing_key_of_the_wrong_type_is_named_never_echoed(text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, env={})
    message = str(caught.value)
    assert "SECRET-MARK" not in message
    assert "expected" in message  # still says what is wrong


def test_a_non_secret_key_of_the_wrong_type_is_still_quoted() -> None:
    with pytest.raises(ConfigError, match=r"thresholds\.max_lag_records: expected an integer, got 'many'"):
        parse_config("thresholds:\n  max_lag_records: many\n", env={})


def test_log_lines_show_urls_by_the_rule_even_without_registered_secrets() -> None:
    mask = SecretMask()
    record = logging.LogRecord(
        "x", logging.WARNING, __file__, 1, "fetching %s failed", ("https://h/r?X-Amz-Signature=abcdef",), None
    )
    mask.filter(record)
    assert record.getMessage() == "fetching https://h/r?*** failed"
    assert mask_secrets("pushed to http://u:pw@pg:9091/") == "pushed to http://***@pg:9091/"


def test_short_query_values_are_not_masked_everywhere() -> None:
    assert uri_secrets("https://h/r?a=1#x") == []


def test_a_spark_start_failure_is_one_line_without_the_secret_or_the_java_trace() -> None:
    cfg = SparkConfig(
        master="spark://user:SECRET-MARK@host:7077",
        conf={"spark.eventLog.dir": "s3a://AKIA-MARK:EVT-MARK@bucket/events"},
    )
    java = (
        "An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n"
        ": org.apache.spark.SparkException: Invalid master URL: spark://user:SECRET-MARK@host:7077\n"
        "\tat org.apache.spark.util.Utils$.extractHostPortFromSparkUrl(Utils.scala:2449)\n"
        "\tat org.apache.spark.rpc.RpcAddress$.fromSparkURL(RpcAddress.scala:54)\n"
    )
    line = start_failure(cfg, RuntimeError(java))
    assert "\n" not in line and "Utils.scala" not in line
    assert "SECRET-MARK" not in line and "spark://***@host:7077" in line
    assert "SparkException: Invalid master URL" in line and "spark.master takes" in line
    missing_jar = RuntimeError(
        "An error occurred while calling None.x.\n: java.lang.RuntimeException: "
        "java.lang.ClassNotFoundException: Class org.apache.hadoop.fs.s3a.S3AFileSystem not found\n\tat y\n"
    )
    line = start_failure(cfg, missing_jar)
    assert "ClassNotFoundException: Class org.apache.hadoop.fs.s3a.S3AFileSystem not found" in line
    assert "spark.jars.packages" in line and "SECRET-MARK" not in line


def test_a_log_record_whose_arguments_do_not_fit_is_shown_without_them() -> None:
    """The mask now reads every record's message: arguments that do not fit must neither
    raise out of the logging call nor reach logging's own error report unmasked."""
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "login %s %s", ("pw-arg-53",), None)
    SecretMask().filter(record)
    assert record.getMessage() == "login %s %s (its arguments did not fit the message)"
