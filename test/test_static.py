"""Static checks of the Python sources: no unused imports or variables, no undefined names."""
from __future__ import annotations

import subprocess
import sys

from netloop import paths


def test_pyflakes_is_clean():
    sources = [str(paths.REPO / d) for d in ("src/netloop", "analysis", "car_driver", "nodes", "test")
               if (paths.REPO / d).exists()]
    res = subprocess.run([sys.executable, "-m", "pyflakes", *sources], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def _module_name(path, root, package):
    rel = path.relative_to(root).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join([package, *parts])


def _imports(path, name: str, is_package: bool) -> set[str]:
    """The netloop modules a file imports, at module level or inside functions (a lazy
    import still ties the two modules together)."""
    import ast  # noqa: PLC0415
    tree = ast.parse(path.read_text(encoding="utf-8"))
    base = name.split(".") if is_package else name.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                target = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("netloop"):
                out.add(target)
                out.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("netloop"))
    return out


def test_no_import_cycle_in_the_analysis_package():
    """The analysis modules import each other in one direction only (report → sections →
    analyses → results/tables), lazily or not."""
    root = paths.REPO / "analysis"
    files = {_module_name(p, root, "netloop.analysis"): p for p in root.glob("*.py")}
    graph = {name: {m for m in _imports(p, name, p.name == "__init__.py") if m in files and m != name}
             for name, p in files.items()}
    graph["netloop.analysis"] = set()   # the package's __init__ imports nothing of its own
    seen, stack, cycles = set(), [], []

    def visit(node):
        if node in stack:
            cycles.append(stack[stack.index(node):] + [node])
            return
        if node in seen:
            return
        seen.add(node)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            visit(nxt)
        stack.pop()
    for name in sorted(graph):
        visit(name)
    assert not cycles, [" → ".join(c) for c in cycles]
    assert "netloop.analysis.results" in graph["netloop.analysis.kinds"]   # the graph is not empty
