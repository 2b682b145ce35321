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
