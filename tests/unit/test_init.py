"""``mirror-audit init``: a starting configuration for every mode and login that loads as
written, from the examples the package ships, and never over an existing file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from audit.config_examples import LOGINS, MODES, starting_config
from audit.config_file import load_config
from tests.cli import run_in_process


@pytest.mark.parametrize("login", LOGINS)
@pytest.mark.parametrize("mode", MODES)
def test_init_writes_a_config_that_loads_for_each_mode_and_login(
    tmp_path: Path, mode: str, login: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "audit.yaml"
    proc = run_in_process("init", "--mode", mode, "--login", login, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"mirror-audit check --config {out}" in proc.stdout
    text = out.read_text()
    assert text == starting_config(mode, login)  # type: ignore[arg-type]
    for name in set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", text)):
        monkeypatch.setenv(name, "set-by-the-operator")
    cfg = load_config(out)
    assert cfg.mode == mode
    assert cfg.source is not None and cfg.destination is not None
    if login != "plaintext":  # the login's settings, with their comments
        assert cfg.cluster("source").client_settings()["security.protocol"] in ("SASL_SSL", "SSL")
        assert text.count("#") > 3
    if mode == "mm2":
        assert cfg.mirror.mm2.sync_group_offsets is True  # the mm2 example's own keys came along


def test_init_never_replaces_a_file(tmp_path: Path) -> None:
    out = tmp_path / "audit.yaml"
    out.write_text("mode: mm2  # an operator's edited config\n")
    proc = run_in_process("init", "--out", str(out))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"mirror-audit: error: {out} exists: init never overwrites a file; give another --out or move it"
    ]
    assert out.read_text() == "mode: mm2  # an operator's edited config\n"


def test_init_reference_prints_every_key_and_writes_nothing(tmp_path: Path) -> None:
    proc = run_in_process("init", "--reference", "--out", str(tmp_path / "audit.yaml"))
    assert proc.returncode == 0
    reference = Path(__file__).resolve().parents[2] / "conf" / "audit.example.yaml"
    assert proc.stdout == reference.read_text()
    assert not (tmp_path / "audit.yaml").exists()
