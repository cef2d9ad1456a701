"""analysis/ reads run directories; it imports no module of the run itself (testbed, runner,
transports, machines, processes, masters, flows, loops, ...). What it needs about links,
profiles and transports travels in the run directory (metadata.json). Checked statically
(ast), every import statement of every module, also those inside functions; and at run time,
what importing every module of analysis/ loads (so no allowed module pulls in the run)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ANALYSIS = REPO / "analysis"

#: Modules of netloop outside analysis/ that analysis may import, and why.
ALLOWED = {
    "netloop.rundir": "the run directory: its files, metadata.json, record names",
    "netloop.run_files": "metadata.json, campaign.json, analysis.json as typed, format-versioned records",
    "netloop.jsonio": "atomic JSON writes",
    "netloop.schema": "the typed configuration's nodes and errors",
    "netloop.schema_nodes": "the typed configuration's nodes and errors",
    "netloop.model": "the experiment file's typed model (data)",
    "netloop.reference": "the loop's reference schedule: arithmetic over the experiment's square_wave keys",
    "netloop.ros2.qos": "ROS 2's QoS profiles by name (data of the experiment model)",
    "netloop.clocksync": "offset_at: arithmetic over the clock exchanges a run recorded",
    "netloop.loops": "the one registry of loop kinds: names and the modules of their two sides, imported "
                     "when used (a kind's analysis side imports no run-side module: test_loop_kind_plugin)",
    "netloop.msg": "generated ROS message classes (the live plot subscribes to the loop's samples)",
}

#: Modules of analysis/ allowed more, and why.
EXCEPTIONS = {
    "synthetic.py": {"netloop.transports": "writes run directories as a run would (test and example data): "
                                          "records each transport's description from the registry",
                     "netloop.experiment": "expands the experiment into cells as netloop run does"},
}


def netloop_imports(path: Path) -> set[str]:
    """Every netloop module ``path`` imports (relative imports resolved: analysis/ is
    netloop.analysis), ``from X import name`` counted as X and as X.name."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ["netloop", "analysis"][: 3 - node.level]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
    return {m for m in out if m == "netloop" or m.startswith("netloop.")}


def forbidden(path: Path, allowed: set[str]) -> list[str]:
    """The netloop modules outside analysis/ and ``allowed`` that ``path`` imports."""
    return [m for m in sorted(netloop_imports(path)) if m != "netloop" and not m.startswith("netloop.analysis")
            and not any(m == a or m.startswith(a + ".") for a in allowed)]


def test_analysis_imports_no_runtime_module():
    files = sorted(ANALYSIS.glob("*.py"))
    assert len(files) > 10
    problems = [f"{f.relative_to(REPO)} imports {m}" for f in files
                for m in forbidden(f, set(ALLOWED) | set(EXCEPTIONS.get(f.name, {})))]
    assert not problems, "analysis/ must read what it needs from the run directory:\n" + "\n".join(problems)


def test_the_check_sees_a_runtime_import(tmp_path):
    f = tmp_path / "x.py"
    for source in ("from ..testbed.profiles import link_capacity_mbit\n",
                   "def f():\n    from ..transports import get_transport\n",
                   "import netloop.runner\n", "from netloop.machines import load_machines\n",
                   "from .. import flows\n"):
        f.write_text(source)
        assert forbidden(f, set(ALLOWED)), source
    f.write_text("from ..rundir import RunDir, sink_names\nfrom . import metrics\nfrom ..schema import ConfigError\n")
    assert not forbidden(f, set(ALLOWED))


#: What importing analysis/ (less synthetic.py) may load of netloop besides ALLOWED: packages'
#: __init__ files and what the allowed modules import (paths, the ROS environment record).
LOADED_TOO = {"netloop", "netloop.paths", "netloop.rosenv", "netloop.ros2"}


def test_importing_the_analysis_loads_no_runtime_module():
    modules = [f"netloop.analysis.{f.stem}" for f in sorted(ANALYSIS.glob("*.py"))
               if f.stem not in ("__init__", "synthetic")]
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print('\\n'.join(m for m in sys.modules if m.startswith('netloop')))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert res.returncode == 0, res.stderr[-2000:]
    loaded = {m for m in res.stdout.split() if not m.startswith("netloop.analysis")}
    assert loaded - set(ALLOWED) - LOADED_TOO == set()
