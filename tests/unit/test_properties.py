"""Property tests of the parsers of files and configs the auditor reads (Hypothesis): for
any input, the only outcomes are a result or the one error type the CLI turns into exit 2
with one line; the two batch walkers agree and account for every byte. The coverage-guided
fuzzer (``make fuzz``, atheris) runs the same batch check for longer: docs/reliability.md."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.collect.batches.differential import check
from audit.collect.metadata.mirror_state import parse_mirror_state, read_mirror_state
from audit.config_file import parse_config
from audit.errors import ConfigError, InputError
from tests.unit.test_batch_columns import CASES, PLAIN

# About two minutes for the whole module on the CI machine.
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# The batch walkers, where the decisions about bytes are: more examples.
BATCHES = settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SEGMENT = b"".join(PLAIN)


@BATCHES
@given(st.binary(max_size=4096))
def test_any_bytes_give_the_same_rows_and_issues_on_both_walkers(data: bytes) -> None:
    check(data, deep=True)


@st.composite
def damaged_segments(draw: st.DrawFn) -> bytes:
    """A real segment (or one of the crafted cases) with bytes overwritten, cut or inserted:
    most inputs stay near valid batches, where the parser's decisions are."""
    base = bytearray(draw(st.sampled_from([SEGMENT, *CASES.values()])))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["set", "cut", "insert"]))
        at = draw(st.integers(0, max(0, len(base) - 1)))
        if op == "set" and base:
            base[at] = draw(st.integers(0, 255))
        elif op == "cut":
            del base[at : at + draw(st.integers(1, 64))]
        else:
            base[at:at] = draw(st.binary(min_size=1, max_size=16))
    return bytes(base)


@BATCHES
@given(damaged_segments(), st.booleans())
def test_a_damaged_segment_is_never_a_traceback_and_both_walkers_agree(data: bytes, deep: bool) -> None:
    check(data, deep=deep)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=20), inner, max_size=4),
    max_leaves=30,
)
FIELDS = st.sampled_from(
    [
        "Mirrors",
        "MirrorName",
        "Topics",
        "TopicName",
        "Partitions",
        "PartitionIndex",
        "StateValue",
        "LastMirrorOffset",
        "topic",
        "partition",
        "partitions",
        "state",
        "lastMirrorOffset",
        "errorMessage",
    ]
)
SHAPED = st.recursive(
    st.none() | st.integers() | st.sampled_from(["STOPPED", "FAILED", "x"]) | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(FIELDS, inner, max_size=5),
    max_leaves=25,
)


@FAST
@given(st.one_of(JSON, SHAPED))
def test_any_mirror_state_is_a_state_or_an_input_error(data: Any) -> None:
    with contextlib.suppress(InputError):  # the one error the CLI makes exit 2
        parse_mirror_state(data, "state.json")


@FAST
@given(st.text(max_size=300))
def test_any_mirror_state_text_is_a_state_or_an_input_error(tmp_path_factory: Any, text: str) -> None:
    path = Path(tmp_path_factory.mktemp("state")) / "state.json"
    path.write_text(text)
    with contextlib.suppress(InputError):  # the one error the CLI makes exit 2
        read_mirror_state(path)


YAML_PIECES = st.sampled_from(
    [
        "mode: mm2\n",
        "scope:\n",
        "  topics:\n",
        "    include: [",
        "'x'",
        "]\n",
        "thresholds:\n",
        "  max_lag_records: ",
        "-1",
        "10",
        "1e400",
        "&a ",
        "*a",
        "{",
        "}",
        "[",
        "\n",
        ": ",
        "- ",
        "!!python/name:x ",
        "readiness:\n  accept_unchecked: [",
        "CM-EPOCH-1",
        "${NOPE}",
        "\t",
        "\x00",
    ]
)


@FAST
@given(st.one_of(st.text(max_size=200), st.lists(YAML_PIECES, max_size=20).map("".join)))
def test_any_config_text_is_a_config_or_a_config_error(text: str) -> None:
    with contextlib.suppress(ConfigError):  # the one error the CLI makes exit 2
        parse_config(text, env={})


@FAST
@given(st.one_of(JSON.map(json.dumps), st.text(max_size=200)))
def test_any_manifest_is_read_or_an_input_error(tmp_path_factory: Any, text: str) -> None:
    from audit.snapshot import read_manifest

    directory = Path(tmp_path_factory.mktemp("snap"))
    (directory / "manifest.json").write_text(text)
    with contextlib.suppress(InputError):  # the one error the CLI makes exit 2
        read_manifest(directory, "source")


@FAST
@given(st.lists(st.one_of(JSON.map(json.dumps), st.text(max_size=100)), min_size=1, max_size=3))
def test_any_summary_under_the_output_root_is_read_or_skipped(
    tmp_path_factory: Any, texts: list[str]
) -> None:
    from audit.report.history import annotate_since, load_history

    root = Path(tmp_path_factory.mktemp("root"))
    for i, text in enumerate(texts):
        (root / f"run{i}").mkdir()
        (root / f"run{i}" / "summary.json").write_text(text)
    history = load_history(root, limit=10)
    assert all(h["dir"].startswith("run") for h in history)
    annotate_since({"invariants": {}, "run": {}}, history, root)
