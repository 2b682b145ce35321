from __future__ import annotations

import pytest

from audit.cli import build_parser, main


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for command in ("snapshot", "audit", "nightly", "readiness", "demo", "sandbox"):
        assert command in out


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["audit"])  # --out is required
    assert info.value.code == 2
    assert "--out" in capsys.readouterr().err
