"""The runtime edge stays in small modules: none over 400 lines, at most 12 at the package's top level."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "rootweaver_capabilities"
MAX_LINES = 400
MAX_TOP_LEVEL_MODULES = 12


def test_no_module_is_over_the_line_limit():
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text(encoding="utf-8").splitlines())
             for p in PACKAGE.rglob("*.py")}
    assert sizes
    assert {path: n for path, n in sizes.items() if n > MAX_LINES} == {}


def test_few_top_level_modules():
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert "__init__.py" in modules
    assert len(modules) <= MAX_TOP_LEVEL_MODULES, modules
