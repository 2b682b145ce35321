"""Hostile names and files, pure logic: what reaches a terminal or a log line, how scope
patterns treat names that are not one line, and a snapshot column of the wrong type.

Group ids, commit metadata and record headers are whatever a client sent (Kafka restricts
topic names only); the live counterpart, through real brokers, is
tests/integration/test_hostile_live.py.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audit.cli import main
from audit.cli.output import print_outcome
from audit.config import ScopeConfig
from audit.display import visible
from audit.errors import InputError
from audit.logs import LogFormat, register_secrets, setup_logging
from audit.snapshot import check_table
from tests.snapshots import part, write_pair

# ESC sequences that clear the screen (CSI 2J), retitle the terminal (OSC 0 ... BEL) and
# colour what follows; a carriage return that overwrites the line; C1's one-byte CSI; DEL;
# a bidi override that reorders what is read; a NUL.
HOSTILE = "g\x1b[2J\x1b]0;pwned\x07\r\n\t\x7f\x9b31m\u202eevil\x00<script>alert(1)</script>"
# The characters that must never reach a screen raw.
CONTROLS = ("\x1b", "\x07", "\r", "\t", "\x7f", "\x9b", "\u202e", "\x00")


def _assert_inert(text: str) -> None:
    for ch in CONTROLS:
        assert ch not in text, f"{ch!r} reached the output"


def test_visible_escapes_every_control_but_keeps_printable_text() -> None:
    assert visible(HOSTILE) == (
        r"g\x1b[2J\x1b]0;pwned\x07\r\n\t\x7f\x9b31m\u202eevil\x00<script>alert(1)</script>"
    )
    # Printable text is left alone, backslashes included (already-escaped record examples
    # are not escaped twice), and so are spaces and non-ASCII letters.
    assert visible(r"orders é 東京 a\x00b") == r"orders é 東京 a\x00b"
    # Bytes that were not UTF-8 (decoded with surrogateescape) show as the bytes they were.
    assert visible(b"k\xff\xfe".decode("utf-8", "surrogateescape")) == r"k\xff\xfe"


def test_the_failover_plan_preview_shows_group_ids_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    """Bug found: the mm2 failover plan's preview printed group ids raw, so a group named
    with ESC sequences cleared the operator's screen in the middle of a failover."""
    summary: dict[str, object] = {
        "verdict": "PASS",
        "invariants": {"MM2-CKPT-1": {"status": "pass", "violations": 0, "evaluated": 1}},
        "failover_plan": {
            "groups": 1,
            "partitions": 1,
            "reprocess_records": 0,
            "skip_records": 0,
            "path": "/runs/r1/failover-plan",
            "preview": [
                {
                    "group_id": HOSTILE,
                    "topic": "src.orders",
                    "partition": 0,
                    "offset": 42,
                    "reprocess_records": 0,
                    "skip_records": 0,
                }
            ],
        },
    }
    print_outcome(summary, Path("/runs/r1/report/index.html"))
    out = capsys.readouterr().out
    _assert_inert(out)
    assert visible(HOSTILE) in out


@contextlib.contextmanager
def _cli_logging(verbose: bool = False, log_format: LogFormat = "text") -> Iterator[None]:
    """The CLI's log handler (``setup_logging``) for the block; the default one set up
    again after, so no test leaves its handler to the next."""
    setup_logging(verbose=verbose, log_format=log_format)
    try:
        yield
    finally:
        setup_logging()


def _log_a_hostile_warning_and_an_exception(log_format: LogFormat) -> None:
    """A warning naming the hostile group id, then an exception with its traceback, logged
    through the CLI's handler in ``log_format``; the default handler set up again after."""
    with _cli_logging(log_format=log_format):
        logging.getLogger("audit.test").warning("group %s: describe failed", HOSTILE)
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("audit.test").exception("detail")


def test_log_lines_show_control_characters_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    """Bug found: a log line naming a group (e.g. a describe call that failed for it)
    carried the group id's ESC sequences and newlines to the terminal as they were, so a
    group id could clear the screen or forge a log line of its own."""
    _log_a_hostile_warning_and_an_exception("text")
    err = capsys.readouterr().err
    _assert_inert(err)
    first, *rest = err.splitlines()
    assert first.endswith(f"group {visible(HOSTILE)}: describe failed")
    # A traceback keeps its lines: only the message is one line.
    assert any(line.startswith("Traceback") for line in rest)


def test_json_log_lines_are_one_object_each_with_an_iso_time_and_the_zone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--log-format json: one JSON object a line (a hostile group id included, its
    newlines escaped by JSON), the time in ISO 8601 with the zone's offset."""
    _log_a_hostile_warning_and_an_exception("json")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2, lines
    warning, error = (json.loads(line) for line in lines)
    assert (warning["level"], warning["logger"]) == ("WARNING", "audit.test")
    assert warning["message"] == f"group {HOSTILE}: describe failed"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d", warning["time"]), warning
    assert error["message"] == "detail" and "ValueError: boom" in error["exception"]


def test_text_log_lines_start_with_an_iso_time_and_the_zone(capsys: pytest.CaptureFixture[str]) -> None:
    setup_logging()
    logging.getLogger("audit.test").info("hello")
    (line,) = capsys.readouterr().err.splitlines()
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d INFO    audit.test: hello", line
    ), line


@pytest.mark.parametrize("verbose", [False, True])
def test_a_clients_traceback_shows_only_with_verbose_even_with_secrets_registered(
    verbose: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bug found (CI, a broker killed during a snapshot): kafka-python logs a dropped
    connection at ERROR with its traceback. Its traceback was hidden only while no secret
    was registered: the mask renders a record's traceback as it is made, and the filter that
    hid it looked only at what the mask had already cleared. Any config with a password
    therefore printed the client's tracebacks under the one-line error."""
    register_secrets(["s3cret-for-the-traceback-test"])
    with _cli_logging(verbose=verbose):
        try:
            raise ConnectionResetError(104, "Connection reset by peer")
        except ConnectionResetError:
            logging.getLogger("kafka.net.transport").exception("Error receiving network data")
    err = capsys.readouterr().err
    assert "Error receiving network data" in err
    assert ("Traceback" in err) is verbose, err


@pytest.mark.parametrize("verbose", [False, True], ids=["default", "verbose"])
def test_py4j_retry_chatter_on_the_root_logger_shows_only_with_verbose(
    verbose: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bug found (a fresh clone's ``make demo``): py4j logs a command it retries with
    ``logging.info`` on the root logger, traceback included ("Exception while sending
    command ... Answer from Java side is empty", a gateway closing while it answered), past
    the level the ``py4j`` logger is held at; the demo printed the traceback. The record is
    made as py4j's own call makes it: on the root logger, from py4j's source file."""
    import py4j.java_gateway

    root = logging.getLogger()
    with _cli_logging(verbose=verbose):
        try:
            raise ConnectionError("Answer from Java side is empty")
        except ConnectionError:
            record = root.makeRecord(
                "root",
                logging.INFO,
                py4j.java_gateway.__file__,
                1038,
                "Exception while sending command.",
                (),
                sys.exc_info(),
            )
        root.handle(record)
        logging.getLogger("audit.test").info("the audit's own line")
    err = capsys.readouterr().err
    assert "the audit's own line" in err
    assert ("Exception while sending command" in err) is verbose, err
    assert ("Traceback" in err) is verbose, err


def test_the_default_scope_includes_group_ids_that_are_not_one_line() -> None:
    """Bug found: RE2's '.' does not match a newline by default, so with the default scope
    (``.*``: everything) a group whose id holds a newline was silently out of scope and its
    committed offsets never audited. Names are not lines: '.' matches any character."""
    scope = ScopeConfig()
    for gid in ("a\nb", "trailing\n", "\r\n", HOSTILE):
        assert scope.group_in_scope(gid), repr(gid)


def test_a_backreference_in_scope_is_exit_2_naming_the_pattern(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RE2 has no backreferences: the configuration error names the key and the pattern and
    says why (before: RE2's bare 'invalid escape sequence: \\1', no hint what to use)."""
    src, dst = write_pair(tmp_path, [part()], [part(leader_epoch=8)])
    cfg = tmp_path / "audit.yaml"
    cfg.write_text("scope:\n  groups:\n    include: ['(app)-\\1']\n")
    out = str(tmp_path / "r")
    code = main(
        ["readiness", "--source", str(src), "--destination", str(dst), "--config", str(cfg), "--out", out]
    )
    err = capsys.readouterr().err
    assert code == 2
    (line,) = err.strip().splitlines()
    assert "scope.groups.include[0]" in line and "'(app)-\\\\1'" in line, line
    assert "no lookaround or backreferences" in line, line
    assert not (tmp_path / "r" / "summary.json").exists()


@pytest.mark.parametrize(
    ("column", "values", "found"),
    [
        ("high_watermark", pa.array(["100"], pa.string()), "string"),
        ("log_start_offset", pa.array([0.0], pa.float64()), "double"),
        ("topic", pa.array([7], pa.int64()), "int64"),
    ],
)
def test_a_snapshot_column_of_the_wrong_type_names_file_column_and_types(
    tmp_path: Path, column: str, values: pa.Array, found: str
) -> None:
    """Bug found: a column of the wrong type passed the reader's check (only names were
    checked); each engine then cast it its own way: a numeric string silently became an
    offset, a malformed one was a Spark traceback ("internal error") or an Arrow message."""
    src, _ = write_pair(tmp_path, [part()], [part()])
    path = src / "partitions.parquet"
    table = pq.read_table(path)
    table = table.set_column(table.schema.get_field_index(column), column, values)
    pq.write_table(table, path)
    with pytest.raises(InputError) as info:
        check_table(src, "partitions")
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message and f"'{column}'" in message
    assert f"is {found}" in message and "mirror-audit-snapshot/1" in message
    assert "take the snapshot again" in message


def test_compatible_column_types_are_still_accepted(tmp_path: Path) -> None:
    """What other writers of the contract produce is kept: a narrower integer (pandas'
    int8/int16, an unsigned one), a large string, a dictionary-encoded string, a column
    of nulls where the column is nullable, and Spark's list element names."""
    src, _ = write_pair(tmp_path, [part()], [part()])
    path = src / "partitions.parquet"
    table = pq.read_table(path)
    for column, values in (
        ("partition", pa.array([0], pa.int8())),
        ("high_watermark", pa.array([100], pa.uint32())),
        ("topic", pa.array(["orders"], pa.large_string())),
        ("topic_id", pa.array(["id-orders"]).dictionary_encode()),
        ("max_timestamp_ms", pa.nulls(1)),
    ):
        table = table.set_column(table.schema.get_field_index(column), column, values)
    pq.write_table(table, path)
    assert check_table(src, "partitions") is True


def test_a_decoded_c1_character_and_a_raw_byte_print_apart_in_record_examples() -> None:
    """U+009B (valid UTF-8: 0xc2 0x9b) and a lone 0x9b byte (not UTF-8) both printed as
    ``\\x9b`` in a divergence example: the examples were not lossless."""
    from audit.collect.records.narrow import _escaped

    char = b"\xc2\x9b".decode("utf-8", "surrogateescape")
    byte = b"\x9b".decode("utf-8", "surrogateescape")
    assert _escaped(char) == r"\u009b"
    assert _escaped(byte) == r"\x9b"
    assert _escaped("\x1b\\") == r"\x1b\\"


def test_an_error_line_naming_a_group_id_stays_one_inert_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from audit import cli
    from audit.errors import ClusterError

    def fail(args: object) -> int:
        raise ClusterError(f"describe_consumer_groups({HOSTILE}) failed")

    from audit.cli import audit_commands

    monkeypatch.setattr(audit_commands, "cmd_snapshot", fail)
    assert cli.main(["snapshot", "--config", "x.yaml", "--out", "run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not any(c in err for c in CONTROLS), repr(err)
