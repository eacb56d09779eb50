"""Package structure: no import cycles, and the product packages never import the evals.

Every import statement counts: at module level, inside functions and under
``if TYPE_CHECKING`` alike (a type-only import still ties two modules together).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rootweaver_innovations", "rootweaver_capabilities", "evals")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module an import statement of ``path`` names, wherever the statement is."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)  # "from pkg import module"
    return out


def _graph() -> dict[str, set[str]]:
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    modules = {_module_name(p): p for p in files}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for imp in _imports(path):
            while imp and imp not in modules:
                imp = imp.rpartition(".")[0]
            if imp and imp != name:
                deps.add(imp)
        # importing a submodule runs its packages' __init__ first, except the ones that
        # import ``name`` itself, which are running already
        graph[name] = deps | {a for d in deps for a in _ancestors(d)
                              if a in modules and not name.startswith(a + ".")} - {name}
    return graph


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1 and not (node.startswith(dep + ".")):  # a package importing its own module is fine
                cycle = stack[stack.index(dep):] + [dep]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)


def test_the_product_does_not_import_the_evals():
    graph = _graph()
    product = [m for m in graph if not m.startswith("evals")]
    offenders = {m: sorted(d for d in graph[m] if d.startswith("evals")) for m in product}
    assert not {m: d for m, d in offenders.items() if d}


def _python_files(*roots: str) -> list[Path]:
    return [p for root in roots for p in (ROOT / root).rglob("*.py")]


def test_one_construction_site_of_the_loop_outside_the_tests():
    """Everything that runs the loop (CLI, serve, capability, evals, scripts, benchmarks) gets it
    from ``build_rag``; variants are ``dataclasses.replace`` of that one assembly."""
    sites = []
    for path in _python_files(*PACKAGES, "scripts", "benchmarks"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "MultiHopRAG":
                sites.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert len(sites) == 1 and sites[0].startswith("rootweaver_capabilities/assembly.py:"), sites


def test_only_the_renderer_knows_the_hop_header_text():
    """Text is made in one place and never parsed back: no other product module names the hop
    header prefix or splits a context into lines to find it."""
    holders = sorted(str(p.relative_to(ROOT)) for p in _python_files("rootweaver_innovations", "rootweaver_capabilities")
                     if "HOP_HEADER_PREFIX" in p.read_text(encoding="utf-8") or "From query:" in p.read_text(encoding="utf-8"))
    assert holders == ["rootweaver_capabilities/readers/prompts.py", "rootweaver_innovations/compaction/synth_context.py"]


LEAVES = ("text", "defaults", "registry", "memo", "lazy", "fingerprint")  # import nothing of the package


def _area(module: str) -> str:
    """``rootweaver_innovations.loop.hops`` -> ``loop``; a top-level module is its own area."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _may_import(package: Path) -> set[str]:
    """The areas a subpackage's ``__init__`` docstring allows: its line ``May import: a, b (why), c.``"""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    lines = [line for line in doc.splitlines() if line.startswith("May import:")]
    assert len(lines) == 1, f"{package}/__init__.py: its docstring needs one line 'May import: ...'"
    names = lines[0].removeprefix("May import:").rstrip(".").split(",")
    return {name.split("(")[0].strip() for name in names if name.strip()}


def test_each_innovations_subpackage_imports_only_what_its_init_allows():
    graph, root = _graph(), ROOT / "rootweaver_innovations"
    packages = sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file())
    assert {"loop", "retrieval", "documents", "compaction", "conventions", "answer_rules"} <= set(packages)
    broken = []
    for name in packages:
        allowed = _may_import(root / name) | {name, *LEAVES}  # a leaf module may serve anyone
        for module, deps in graph.items():
            if module.startswith(f"rootweaver_innovations.{name}."):
                broken += [f"{module} -> {d}" for d in sorted(deps) if d.startswith("rootweaver_innovations.")
                           and d != "rootweaver_innovations" and _area(d) not in allowed]
    assert not broken, "imports their package's docstring does not allow: " + "; ".join(broken)


def test_the_leaf_modules_import_nothing_of_the_package():
    graph = _graph()
    leaves = [f"rootweaver_innovations.{name}" for name in LEAVES]
    assert all(leaf in graph for leaf in leaves)
    offenders = {leaf: sorted(d for d in graph[leaf] if d.startswith("rootweaver_innovations.")) for leaf in leaves}
    assert not {leaf: deps for leaf, deps in offenders.items() if deps}


def test_no_product_module_is_long_and_no_package_is_crowded():
    """A module over 450 lines or a package of more than 12 modules is a room to split."""
    files = _python_files("rootweaver_innovations", "rootweaver_capabilities")
    long = [f"{p.relative_to(ROOT)} ({n})" for p in files if (n := len(p.read_text(encoding="utf-8").splitlines())) > 450]
    assert not long, long
    folders = {p.parent for p in files}
    crowded = [f"{d.relative_to(ROOT)} ({n})" for d in folders
               if (n := sum(1 for f in d.glob("*.py") if f.name != "__init__.py")) > 12]
    assert not crowded, crowded
