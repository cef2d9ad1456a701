"""analysis/ reads run directories; it imports no module of the run itself (testbed, runner,
transports, machines, processes, masters, flows, a loop kind's run side, ...). What it needs
about links, profiles and transports travels in the run directory (metadata.json). The
analysis side of each loop kind (``netloop.loops.<kind>.analysis``) is held to the same rule.
Checked statically (ast), every import statement of every module, also those inside functions;
and at run time, what importing every module of the analysis loads (so no allowed module
pulls in the run)."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ANALYSIS = REPO / "analysis"
SRC = REPO / "src" / "netloop"

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
    "netloop.msg": "generated ROS message classes (the live plot subscribes to the loop's samples)",
}

#: Packages the analysis may import as such, not their submodules, and why.
PACKAGES = {
    "netloop.loops": "the one registry of loop kinds: names and the modules of their two sides, imported "
                     "when used",
}

#: A loop kind's analysis side, its config (its sections of the experiment model: data) and its
#: terms (its words of the report's glossary: data), and nothing else of the kind: its run side
#: is the run's.
LOOP_ANALYSIS = re.compile(r"netloop\.loops\.\w+\.(analysis|config|terms)(\.\w+)*")

#: Modules of analysis/ allowed more, and why.
EXCEPTIONS = {
    "synthetic.py": {"netloop.transports": "writes run directories as a run would (test and example data): "
                                          "records each transport's description from the registry",
                     "netloop.experiment": "expands the experiment into cells as netloop run does"},
}


def analysis_modules() -> list[tuple[Path, str]]:
    """(file, module name) of every module of the analysis: analysis/*.py (netloop.analysis)
    and each loop kind's analysis side, src/netloop/loops/<kind>/analysis*.py."""
    out = [(f, f"netloop.analysis.{f.stem}") for f in sorted(ANALYSIS.glob("*.py"))]
    return out + [(f, f"netloop.loops.{f.parent.name}.{f.stem}") for f in sorted(SRC.glob("loops/*/analysis*.py"))]


def is_module(name: str) -> bool:
    """Whether ``name`` is a module or package of netloop's sources (not a name inside one)."""
    parts = name.split(".")[1:]
    if not parts:
        return True
    base = ANALYSIS.joinpath(*parts[1:]) if parts[0] == "analysis" else SRC.joinpath(*parts)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def netloop_imports(path: Path, module: str = "netloop.analysis.x") -> set[str]:
    """Every netloop module ``path`` (the module ``module``) imports, relative imports resolved;
    ``from X import name`` counts X.name when that is a module, else X."""
    package = module.split(".")[:-1]   # a package's __init__ is named <package>.__init__
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                out.add(f"{target}.{a.name}" if is_module(f"{target}.{a.name}") else target)
    return {m for m in out if m == "netloop" or m.startswith("netloop.")}


def is_allowed(module: str, allowed: set[str]) -> bool:
    """Whether the analysis may import ``module``: the analysis itself, ``allowed`` and their
    submodules, the :data:`PACKAGES` themselves, a loop kind's analysis side."""
    return (module == "netloop" or module.startswith("netloop.analysis") or module in PACKAGES
            or bool(LOOP_ANALYSIS.fullmatch(module)) or any(module == a or module.startswith(a + ".") for a in allowed))


def forbidden(path: Path, allowed: set[str], module: str = "netloop.analysis.x") -> list[str]:
    """The netloop modules outside the analysis and ``allowed`` that ``path`` imports."""
    return [m for m in sorted(netloop_imports(path, module)) if not is_allowed(m, allowed)]


def test_analysis_imports_no_runtime_module():
    files = sorted(ANALYSIS.glob("*.py"))
    assert len(files) > 10
    problems = [f"{f.relative_to(REPO)} imports {m}" for f, module in analysis_modules()
                for m in forbidden(f, set(ALLOWED) | set(EXCEPTIONS.get(f.name, {})), module)]
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



#: Imports of the run that the issue names (links, profiles, transports, runner, machines) and
#: a loop kind's run side, reached directly or through the registry's package
RUNTIME_IMPORTS = (
    "from ..testbed.links import Ns3WifiLink\n", "from netloop.testbed import profiles\n",
    "import netloop.testbed\n", "from ..testbed import testbed\n", "from ..transports.catalog import get_transport\n",
    "from .. import runner\n", "from ..machines import RealHosts\n", "import netloop.cpulimit\n",
    "from ..loops import base\n", "from ..loops.rlc import run\n", "from ..loops.rlc import rlc_parameters\n",
    "from netloop.loops.teleop.run import TeleopKind\n", "from ..loops import simulators\n",
    "from ..studies import pound\n", "from .. import processes, master\n",
)


def test_the_check_sees_every_kind_of_runtime_import(tmp_path):
    f = tmp_path / "x.py"
    for source in RUNTIME_IMPORTS:
        f.write_text(source)
        assert forbidden(f, set(ALLOWED)), source
        f.write_text("def later():\n    " + source)   # inside a function too
        assert forbidden(f, set(ALLOWED)), source
    f.write_text("from ..loops import loop_analysis\nfrom ..loops.rlc import analysis\n"
                 "from netloop.loops.teleop.analysis import TELEOP\nfrom ..run_files import load_metadata\n")
    assert not forbidden(f, set(ALLOWED))
    g = tmp_path / "analysis.py"   # a loop kind's analysis side: its relative imports resolved from there
    g.write_text("from ...analysis import plots\nfrom ...analysis.tables import write_csv\n")
    assert not forbidden(g, set(ALLOWED), "netloop.loops.rlc.analysis")
    g.write_text("from . import run\n")
    assert forbidden(g, set(ALLOWED), "netloop.loops.rlc.analysis") == ["netloop.loops.rlc.run"]
    g.write_text("from . import LOOP_SAMPLE_BYTES\n")   # a run-side name, through the kind's package
    assert forbidden(g, set(ALLOWED), "netloop.loops.rlc.analysis") == ["netloop.loops.rlc"]


#: What importing analysis/ (less synthetic.py) may load of netloop besides ALLOWED: packages'
#: __init__ files and what the allowed modules import (paths, the ROS environment record).
LOADED_TOO = {"netloop", "netloop.paths", "netloop.rosenv", "netloop.ros2"}


#: What importing a loop kind's analysis side may load besides it: the kind's package, whose
#: __init__ names the run side's names without importing them
KIND_PACKAGE = re.compile(r"netloop\.loops\.\w+")


def test_importing_the_analysis_loads_no_runtime_module():
    modules = [m for f, m in analysis_modules() if f.stem not in ("__init__", "synthetic")]
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print('\\n'.join(m for m in sys.modules if m.startswith('netloop')))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert res.returncode == 0, res.stderr[-2000:]
    loaded = {m for m in res.stdout.split() if not m.startswith("netloop.analysis")}
    assert {m for m in loaded - set(ALLOWED) - LOADED_TOO - set(PACKAGES)
            if not LOOP_ANALYSIS.fullmatch(m) and not KIND_PACKAGE.fullmatch(m)} == set()
