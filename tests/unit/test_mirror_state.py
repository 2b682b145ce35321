"""The mirror's own state, read from either JSON shape the KIP-1279 prototype prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.collect.metadata.mirror_state import (
    MirrorPartitionRecord,
    describe_response,
    parse_mirror_state,
    read_mirror_state,
)
from audit.errors import InputError

RESPONSE = {
    "ThrottleTimeMs": 0,
    "ErrorCode": 0,
    "ErrorMessage": None,
    "Mirrors": [
        {
            "ErrorCode": 0,
            "ErrorMessage": None,
            "MirrorName": "a-to-b",
            "SourceBootstrap": "localhost:9091",
            "Topics": [
                {
                    "TopicName": "orders",
                    "Partitions": [
                        {
                            "PartitionIndex": 0,
                            "StateValue": "STOPPED",
                            "ErrorMessage": None,
                            "RetryAttempt": 0,
                            "SourceOffset": 120,
                            "DestinationOffset": 101,
                            "LastMirrorEpoch": 5,
                            "LastMirrorOffset": 100,
                        },
                        {
                            "PartitionIndex": 1,
                            "StateValue": "FAILED",
                            "ErrorMessage": "fetch from source failed: not leader",
                            "RetryAttempt": -1,
                            "SourceOffset": -1,
                            "DestinationOffset": -1,
                            "LastMirrorEpoch": -1,
                            "LastMirrorOffset": -1,
                        },
                    ],
                }
            ],
        }
    ],
}

CLI_ROWS = [
    {
        "mirror": "a-to-b",
        "topic": "orders",
        "partition": 0,
        "sourceOffset": 120,
        "destinationOffset": 101,
        "lag": 19,
        "state": "STOPPED",
        "retryAttempt": 0,
        "errorMessage": None,
    },
    {"mirror": "a-to-b", "topic": "payments", "partitions": [0, 1], "state": "MIRRORING", "extra": "ignored"},
]


def test_the_describe_response_is_read_partition_by_partition_with_minus_one_as_unknown() -> None:
    state = parse_mirror_state(RESPONSE, "resp.json")
    assert state.shape == "describe-cluster-mirrors"
    assert state.missing_fields == ()
    stopped, failed = state.records
    assert stopped == MirrorPartitionRecord("a-to-b", "orders", 0, "STOPPED", 120, 101, 5, 100, None)
    assert failed.state == "FAILED" and failed.error_message == "fetch from source failed: not leader"
    assert (failed.source_offset, failed.last_mirror_offset, failed.last_mirror_epoch) == (None, None, None)


def test_field_names_are_matched_whatever_their_case_and_an_older_state_field_is_read() -> None:
    """Kafka's own JSON converters write camelCase (mirrors, topicName, stateValue); an older
    prototype called the state ``State``."""
    camel = json.loads(json.dumps(RESPONSE).replace('"StateValue"', '"State"'))

    def lower_first(obj: object) -> object:
        if isinstance(obj, dict):
            return {k[0].lower() + k[1:]: lower_first(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [lower_first(v) for v in obj]
        return obj

    state = parse_mirror_state(lower_first(camel))
    assert [r.state for r in state.records] == ["STOPPED", "FAILED"]
    assert state.records[0].last_mirror_offset == 100


def test_cli_rows_are_read_and_name_what_they_do_not_carry() -> None:
    state = parse_mirror_state(CLI_ROWS, "rows.json")
    assert state.shape == "cli-rows"
    assert [(r.topic, r.partition, r.state) for r in state.records] == [
        ("orders", 0, "STOPPED"),
        ("payments", 0, "MIRRORING"),
        ("payments", 1, "MIRRORING"),
    ]
    # The CLI's rows carry no last mirrored position: the checks needing it are skipped.
    assert set(state.missing_fields) == {"LastMirrorEpoch", "LastMirrorOffset"}
    assert state.records[0].last_mirror_offset is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([{"topic": "orders", "state": "STOPPED"}], "row 0: the partition is missing"),
        ([{"partition": 0, "state": "STOPPED"}], "row 0: the topic is missing (expected the field topic)"),
        ([{"topic": "orders", "partition": 0}], "row 0: the state is missing (expected the field state)"),
        (
            [{"topic": "orders", "partition": -2, "state": "STOPPED"}],
            "partition -2 is not a partition number",
        ),
        (
            {
                "Mirrors": [
                    {"MirrorName": "m", "Topics": [{"TopicName": "t", "Partitions": [{"StateValue": "X"}]}]}
                ]
            },
            "Mirrors[0].Topics[0].Partitions[0]: the partition is missing (expected the field "
            "PartitionIndex)",
        ),
        (
            {"ErrorCode": 41, "ErrorMessage": "not controller", "Mirrors": []},
            "carries error 41: not controller",
        ),
        (
            {"mirrors": [{"MirrorName": "m", "ErrorCode": 3, "ErrorMessage": "unknown mirror"}]},
            "Mirrors[0] (m): error 3: unknown mirror",
        ),
        ({"something": 1}, "neither a DescribeClusterMirrors response"),
        (
            [
                {"topic": "t", "partition": 0, "state": "STOPPED"},
                {"topic": "t", "partition": 0, "state": "PAUSED"},
            ],
            "t-0 appears twice",
        ),
    ],
)
def test_a_row_without_what_every_check_needs_is_an_input_error_naming_it(data: object, message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_mirror_state(data, "state.json")
    assert message in str(info.value) and str(info.value).startswith("state.json")


def test_a_file_that_is_not_json_or_missing_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        read_mirror_state(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(InputError, match=f"mirror state file {bad} is not readable JSON"):
        read_mirror_state(bad)


def test_the_emulators_shape_reads_back_as_written() -> None:
    records = parse_mirror_state(RESPONSE).records
    assert parse_mirror_state(describe_response(list(records))).records == records


# Confluent Cluster Linking (audit/collect/metadata/cluster_linking.py); the fixtures' sources
# are in tests/fixtures/cluster_linking/SOURCES.md.
CLUSTER_LINKING = Path(__file__).resolve().parents[1] / "fixtures" / "cluster_linking"


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("rest_mirrors_stopped.json", "cluster-linking-rest"),
        ("cli_describe_stopped.json", "cluster-linking-cli"),
    ],
)
def test_cluster_linkings_mirror_topics_read_as_mirror_state(name: str, shape: str) -> None:
    """A promoted (STOPPED) mirror topic: the state, and last_source_fetch_offset (replicated
    up to, exclusive) as the last mirrored offset; the epoch and the source's end, which
    Cluster Linking does not report, named missing."""
    state = read_mirror_state(CLUSTER_LINKING / name)
    assert state.shape == shape
    assert state.records == (
        MirrorPartitionRecord("link-1", "orders", 0, "STOPPED", None, None, None, 90, None),
        MirrorPartitionRecord("link-1", "orders", 1, "STOPPED", None, None, None, 50, None),
    )
    assert set(state.missing_fields) == {"SourceOffset", "DestinationOffset", "LastMirrorEpoch"}


@pytest.mark.parametrize(
    ("status", "error", "state", "message"),
    [
        ("ACTIVE", "", "MIRRORING", None),
        ("ACTIVE", "NO_ERROR", "MIRRORING", None),
        ("PAUSED", None, "PAUSED", None),
        ("STOPPED", "", "STOPPED", None),
        ("LINK_PAUSED", None, "PAUSED", "Cluster Linking status LINK_PAUSED"),
        ("PENDING_STOPPED", None, "STOPPING", "Cluster Linking status PENDING_STOPPED"),
        ("PENDING_SYNCHRONIZE", None, "STOPPING", "Cluster Linking status PENDING_SYNCHRONIZE"),
        (
            "FAILED",
            "SOURCE_TOPIC_ID_CHANGED",
            "FAILED",
            "Cluster Linking status FAILED: SOURCE_TOPIC_ID_CHANGED",
        ),
        ("LINK_FAILED", None, "FAILED", "Cluster Linking status LINK_FAILED"),
        ("SOURCE_UNAVAILABLE", None, "FAILED", "Cluster Linking status SOURCE_UNAVAILABLE"),
        ("PENDING_MIRROR", None, "LOG_ALIGNMENT", "Cluster Linking status PENDING_MIRROR"),
        ("PENDING_RESTORE", None, "LOG_ALIGNMENT", "Cluster Linking status PENDING_RESTORE"),
        (
            "PENDING_SETUP_FOR_RESTORE",
            None,
            "LOG_ALIGNMENT",
            "Cluster Linking status PENDING_SETUP_FOR_RESTORE",
        ),
        ("SOMETHING_NEW", None, "UNKNOWN", "Cluster Linking status SOMETHING_NEW (not known to this reader)"),
    ],
)
def test_each_cluster_linking_status_maps_to_a_state_and_keeps_its_name(
    status: str, error: str | None, state: str, message: str | None
) -> None:
    """Never a status read as mirroring that is not ACTIVE: the failing and unreachable ones
    are FAILED, one this reader does not know is UNKNOWN, and the status stays in the message."""
    row = {"link_name": "l", "mirror_topic_name": "t", "mirror_status": status, "partition": 0}
    if error is not None:
        row["mirror_topic_error"] = error
    (record,) = parse_mirror_state([row], "rows.json").records
    assert (record.state, record.error_message) == (state, message)


def test_cluster_linking_offsets_not_fetched_yet_and_list_rows_read_as_unknown() -> None:
    rest = {
        "kind": "KafkaMirrorData",
        "link_name": "l",
        "mirror_topic_name": "t",
        "mirror_status": "PENDING_MIRROR",
        "mirror_lags": [{"partition": 0, "lag": 0, "last_source_fetch_offset": -1}],
    }
    (record,) = parse_mirror_state(rest, "one.json").records
    assert record.last_mirror_offset is None  # -1: not fetched yet
    # `confluent kafka mirror list -o json`: a row per topic, its states alone.
    listed = [{"link_name": "l", "mirror_topic_name": "t", "mirror_status": "ACTIVE", "num_partition": 2}]
    state = parse_mirror_state(listed, "list.json")
    assert [(r.partition, r.state, r.last_mirror_offset) for r in state.records] == [
        (0, "MIRRORING", None),
        (1, "MIRRORING", None),
    ]
    assert "LastMirrorOffset" in state.missing_fields


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"kind": "KafkaMirrorDataList", "data": "x"}, "data is not a list of mirror topics"),
        (
            {"kind": "KafkaMirrorData", "mirror_topic_name": "t", "mirror_status": "ACTIVE"},
            "mirror_lags is missing",
        ),
        (
            [{"mirror_topic_name": "t", "partition": 0}],
            "mirror_status None is not a Cluster Linking mirror status",
        ),
        ([{"mirror_topic_name": "t", "mirror_status": "ACTIVE", "partition": "0"}], "partition '0' is not"),
        ([{"mirror_topic_name": "t", "mirror_status": "ACTIVE"}], "neither a partition nor num_partition"),
    ],
)
def test_a_cluster_linking_file_that_cannot_be_used_is_an_input_error_naming_it(
    data: object, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        parse_mirror_state(data, "cl.json")
