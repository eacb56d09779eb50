"""docs/configuration.md is what scripts/gen_config_reference.py generates from the schema."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from rootweaver_capabilities.config import knob_reference

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gen_config_reference.py"
DOC = REPO / "docs" / "configuration.md"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_config_reference", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_reference_is_the_generated_one():
    generated = _generator().render()
    committed = DOC.read_text(encoding="utf-8") if DOC.is_file() else ""
    assert committed == generated, "docs/configuration.md is out of date: run python scripts/gen_config_reference.py"


def test_the_reference_lists_every_knob_once():
    text = _generator().render()
    for knob in knob_reference():
        assert text.count(f"| `{knob.key}` |") == 1, knob.key


def test_check_mode_names_the_command_that_regenerates(tmp_path, monkeypatch, capsys):
    generator = _generator()
    stale = tmp_path / "docs" / "configuration.md"
    stale.parent.mkdir()
    stale.write_text("stale\n", encoding="utf-8")
    monkeypatch.setattr(generator, "ROOT", tmp_path)
    monkeypatch.setattr(generator, "OUT", stale)
    assert generator.main(["--check"]) == 1
    assert "run python scripts/gen_config_reference.py" in capsys.readouterr().err
    assert generator.main([]) == 0 and generator.main(["--check"]) == 0
    assert stale.read_text(encoding="utf-8") == generator.render()
