"""The robot side's Python (issue 26, item 2): Python 3.8 and the robot install's packages only.

What runs on a robot is declared once, in :mod:`netloop.robot_side`. Checked here:

* statically, with vermin (PyPI, pinned in requirements.txt) targeting 3.8, file by file:
  annotations are evaluated for analysis in a file without ``from __future__ import
  annotations`` (there Python 3.8 evaluates them), and netloop's own AST check adds what
  vermin leaves out: ``list[int]``, ``collections.abc.X[...]`` and ``X | Y`` used at run time,
  ``d | {...}``, and 3.9+ methods (``.removeprefix()``) on an object whose type vermin cannot see;
* that the check catches what Python 3.8 lacks (a sample of 3.9-3.11 features, each one
  reported with its line);
* the imports of every robot-side file, at any depth (a lazy import runs on the robot too):
  netloop's own only from the declared set, third-party only from the declared packages;
* each robot-side module imported in a fresh interpreter that can import nothing but the
  standard library, PyYAML and the declared modules (the import closure, not only the list);
* the robot-side programs run there too (marker ``robot``: ``pytest -m robot``): the remote
  wrapper, the clock server, the car driver on fake hardware, the calibration tool, and, with
  the system's rospy and messages allowed as a robot has them, car_node.py and mm_sync as ROS
  nodes against a real roscore.

No Python 3.8 interpreter runs these: Debian 12 has none and only package registries are
reachable here, so the check is static (vermin) plus the import closure on this machine's
Python with everything but the robot's packages refused.
"""
from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from netloop import clocksync, paths, robot_side
from netloop.transports.multimaster import mm_sync_option_params

REPO = paths.REPO
#: vermin's command, installed beside this Python by requirements.txt
VERMIN = [str(Path(sys.executable).parent / "vermin")]
#: vermin's flags: target 3.8, only what violates it, one line per finding
#: (file:line:column:py2:py3:feature); no config file and no "# novm" comments can loosen it;
#: a file that does not parse counts as incompatible.
VERMIN_FLAGS = [f"--target={robot_side.ROBOT_PYTHON[0]}.{robot_side.ROBOT_PYTHON[1]}-", "--violations",
                "--no-tips", "--no-config-file", "--no-parse-comments", "--pessimistic",
                "--format", "parsable", "--processes=1"]

#: Builtin types that became subscriptable (``list[int]``) in 3.9, and names that make a
#: ``X | Y`` a union type (3.10) rather than an ``or`` of integers or sets.
_BUILTIN_GENERICS = {"list", "dict", "tuple", "set", "frozenset", "type"}
_TYPE_NAMES = _BUILTIN_GENERICS | {"int", "float", "complex", "str", "bytes", "bool", "object"}
#: Standard-library classes subscriptable only since 3.9 (PEP 585), by their qualified name.
_STDLIB_GENERICS = {"collections.abc", "abc", "collections", "re.Pattern", "re.Match", "queue.Queue",
                    "os.PathLike", "contextlib.AbstractContextManager"}
#: Methods of builtin types that 3.8 lacks; vermin sees them only on a literal or a known type,
#: these are reported on any object (no 3.8 type of the standard library has them).
_NEW_METHODS = {"removeprefix": "3.9", "removesuffix": "3.9", "is_relative_to": "3.9", "with_stem": "3.9",
                "randbytes": "3.9", "hardlink_to": "3.10", "bit_count": "3.10"}


def _files() -> list[Path]:
    return [REPO / f for f in robot_side.robot_files()]


def _postponed(tree: ast.Module) -> bool:
    """True if the module has ``from __future__ import annotations`` (PEP 563)."""
    return any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
               and any(a.name == "annotations" for a in n.names) for n in tree.body)


def _evaluates_annotations(text: str) -> bool:
    return "get_type_hints" in text or "__annotations__" in text


def _annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of every node inside an annotation (arguments, returns, annotated assignments)."""
    roots = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            roots += [x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs if x.annotation]
            roots += [x.annotation for x in (a.vararg, a.kwarg) if x is not None and x.annotation]
            if node.returns is not None:
                roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(n) for root in roots for n in ast.walk(root)}


def _typeish(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and node.value is None:
        return True
    if isinstance(node, ast.Name):
        return node.id in _TYPE_NAMES
    if isinstance(node, ast.Subscript):
        return _typeish(node.value)
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id in ("typing", "collections", "abc")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _typeish(node.left) or _typeish(node.right)
    return False


def _dictish(node: ast.AST) -> bool:
    """A dict display, comprehension or ``dict(...)`` call: ``|`` on it is a dict union."""
    return isinstance(node, (ast.Dict, ast.DictComp)) or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict")


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def own_findings(path: Path) -> list[str]:
    """What vermin leaves out: ``list[int]`` and ``collections.abc.X[...]`` (3.9) and ``X | Y``
    union types (3.10) that Python evaluates at run time (outside annotations, and inside them
    where annotations are evaluated: no PEP 563), ``|`` on a dict display or ``dict()`` (3.9),
    and 3.9+ methods called on any object."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    skip = _annotation_nodes(tree) if _postponed(tree) and not _evaluates_annotations(text) else set()
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                and node.value.id in _BUILTIN_GENERICS):
            found.append(f"{path}:{node.lineno}: needs Python 3.9: builtin generic {node.value.id}[...] "
                         f"evaluated at run time")
        elif (isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr)
              and (_typeish(node.left) or _typeish(node.right))):
            found.append(f"{path}:{node.lineno}: needs Python 3.10: union type `X | Y` evaluated at run time")
        elif (isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.BitOr)
              and any(_dictish(side) for side in ((node.left, node.right) if isinstance(node, ast.BinOp)
                                                  else (node.target, node.value)))):
            found.append(f"{path}:{node.lineno}: needs Python 3.9: dict union `|` / `|=`")
        elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
              and any(_dotted(node.value) == g or _dotted(node.value).startswith(g + ".") for g in _STDLIB_GENERICS)):
            found.append(f"{path}:{node.lineno}: needs Python 3.9: generic {_dotted(node.value)}[...] "
                         f"evaluated at run time")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in _NEW_METHODS):
            found.append(f"{path}:{node.lineno}: needs Python {_NEW_METHODS[node.func.attr]}: "
                         f"method .{node.func.attr}()")
    return found


def python38_findings(files: list[Path]) -> list[str]:
    """Every line of ``files`` that Python 3.8 cannot run, as ``file:line: needs Python V:
    feature`` (vermin, then netloop's own run-time typing check); empty when all is 3.8."""
    assert Path(VERMIN[0]).is_file(), f"{VERMIN[0]} missing: vermin comes with requirements.txt (make build)"
    postponed, evaluated = [], []
    for path in files:
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            evaluated.append(path)      # vermin --pessimistic reports it
            continue
        (postponed if _postponed(tree) and not _evaluates_annotations(text) else evaluated).append(path)
    found = []
    for group, extra in ((postponed, []), (evaluated, ["--eval-annotations"])):
        if not group:
            continue
        res = subprocess.run(VERMIN + VERMIN_FLAGS + extra + [str(p) for p in group],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode in (0, 1) and "Traceback" not in res.stderr, res.stdout + res.stderr
        per_file_only = {}
        for line in res.stdout.splitlines():
            m = re.match(r"^(.*?):(\d*):(\d*):([^:]*):([^:]*):(.*)$", line)
            if not m or not m.group(1):
                continue    # the last line: the minimum versions of all files together
            file, lineno, _, _, py3, feature = m.groups()
            if lineno:
                found.append(f"{file}:{lineno}: needs Python {py3}: {feature}")
            else:
                per_file_only[file] = py3
        reported = {f.split(":")[0] for f in found}
        # a file over the target with no line named (e.g. it does not parse) is a finding too
        found += [f"{file}: needs Python {py3} (vermin names no line)"
                  for file, py3 in per_file_only.items() if file not in reported and py3 not in ("", "~3")
                  and _above_target(py3)]
        if res.returncode == 1 and not found:
            found.append(f"vermin failed without naming a line: {res.stdout}{res.stderr}")
    for path in files:
        found += own_findings(path)
    return found


def _above_target(py3: str) -> bool:
    if py3.startswith("!"):
        return True
    try:
        return tuple(int(x) for x in py3.split(".")[:2]) > robot_side.ROBOT_PYTHON
    except ValueError:
        return True


# --- the declaration --------------------------------------------------------------------------

def test_the_declaration_names_existing_files_and_reads_without_netloop():
    missing = [f for f in robot_side.robot_files() + list(robot_side.ROBOT_DATA) if not (REPO / f).exists()]
    assert not missing, missing
    # the robot install reads it with the system's python3, isolated: no netloop, no site packages
    res = subprocess.run(["/usr/bin/python3", "-I", "-S", str(REPO / "src/netloop/robot_side.py"), "files"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == robot_side.robot_files()
    assert "src/netloop/remote_exec.py" in res.stdout and "car_driver/car_node.py" in res.stdout
    res = subprocess.run(["/usr/bin/python3", "-I", "-S", str(REPO / "src/netloop/robot_side.py"), "bogus"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and "usage" in res.stderr


def test_every_car_driver_module_is_declared():
    """The car driver runs on the car: a new file in car_driver/ must be declared."""
    modules = {f"netloop.car_driver.{p.stem}" if p.stem != "__init__" else "netloop.car_driver"
               for p in (REPO / "car_driver").glob("*.py")}
    assert modules - set(robot_side.ROBOT_MODULES) == set()


def _started_modules(path: Path) -> set[str]:
    """Modules a file starts as ``[..., "-m", "netloop.X", ...]`` or ``python_module_argv("netloop.X", ...)``."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.List):
            words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            out.update(b for a, b in zip(words, words[1:]) if a == "-m" and isinstance(b, str))
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
              == "python_module_argv" and node.args and isinstance(node.args[0], ast.Constant)):
            out.add(node.args[0].value)
    return {m for m in out if m.startswith("netloop")}


def test_what_the_operator_starts_on_a_machine_is_declared():
    """Every Python module the operator's code starts as a process of a run (``"-m",
    "netloop.X"`` in an argv, ``python_module_argv``, the remote wrapper's ``-m``) is
    robot-side. Left out: the emulated testbed (netloop.testbed), whose processes run in
    namespaces on the operator's own machine."""
    started = set()
    for path in (REPO / "src/netloop").rglob("*.py"):
        if "testbed" not in path.relative_to(REPO / "src/netloop").parts:
            started |= _started_modules(path)
    started.update(re.findall(r"-m (netloop(?:\.\w+)+)", (REPO / "bin/netloop-remote-exec").read_text()))
    assert {"netloop.remote_exec", "netloop.clocksync", "netloop.transports.mm_sync",
            "netloop.ros2.zenoh_router"} <= started, started
    assert started - set(robot_side.ROBOT_MODULES) == set()


# --- Python 3.8, statically --------------------------------------------------------------------

def test_the_robot_side_is_python_3_8():
    """vermin from PyPI (pinned in requirements.txt) targeting 3.8, plus the run-time typing
    check; a failure names the file, the line and the feature."""
    findings = python38_findings(_files())
    assert not findings, "robot-side code that Python 3.8 cannot run:\n" + "\n".join(findings)


_TOO_NEW = {
    # line text -> the version it needs (each must be reported on its line)
    "import zoneinfo": "3.9",
    "@dataclasses.dataclass(kw_only=True)": "3.10",
    "fd = os.pidfd_open(1)": "3.9",
    "    match v:": "3.10",
    '    return "abc".removeprefix("a")': "3.9",
    'merged = {"a": 1} | {"b": 2}': "3.9",
    'merged_too = merged | {"c": 3}': "3.9",
    "merged |= dict(d=4)": "3.9",
    "Alias = dict[str, int]": "3.9",
    "ok = isinstance(3, int | str)": "3.10",
    "maybe = int | None": "3.10",
    "cached = functools.cache(f)": "3.9",
    "least = math.lcm(2, 3)": "3.9",
    "pairs = list(zip([1], [2], strict=True))": "3.10",
    'with (open("a") as fa, open("b") as fb):': "3.9",
    "except* ValueError:": "3.11",
    '    return s.removesuffix("x"), n.bit_count(), Path(s).is_relative_to("/")': "3.9",
    '    return path.is_relative_to("/"), path.with_stem("x")': "3.9",
    "Call = collections.abc.Callable[[int], int]": "3.9",
    'proc = subprocess.Popen(["true"], process_group=0)': "3.11",
}

_FINE_ON_38 = """\
from __future__ import annotations
import dataclasses


@dataclasses.dataclass
class Point:
    x: list[int] | None = None


def walrus(a, /, b: dict[str, int] | None = None) -> tuple[int, ...]:
    if (n := len(a)) > 1:
        print(f"{n=}")
    return (n, 3 | 4, {1} | {2})
"""


def test_the_check_reports_what_python_3_8_lacks(tmp_path):
    """The check is only as good as what it catches: a file using 3.9-3.11 features is
    reported line by line; a file using 3.8's own (walrus, positional-only, f"{x=}",
    postponed annotations) is not."""
    body = textwrap.dedent("""\
        from __future__ import annotations
        import collections.abc
        import dataclasses
        import functools
        import math
        import os
        import subprocess
        import zoneinfo
        from pathlib import Path


        @dataclasses.dataclass(kw_only=True)
        class A:
            x: int = 0


        fd = os.pidfd_open(1)


        def f(v):
            match v:
                case 1:
                    return 1
            return "abc".removeprefix("a")


        merged = {"a": 1} | {"b": 2}
        merged_too = merged | {"c": 3}
        merged |= dict(d=4)
        Alias = dict[str, int]
        ok = isinstance(3, int | str)
        maybe = int | None
        cached = functools.cache(f)
        least = math.lcm(2, 3)
        pairs = list(zip([1], [2], strict=True))
        with (open("a") as fa, open("b") as fb):
            pass
        try:
            pass
        except* ValueError:
            pass


        def g(s, n):
            return s.removesuffix("x"), n.bit_count(), Path(s).is_relative_to("/")


        def h(path):
            return path.is_relative_to("/"), path.with_stem("x")


        Call = collections.abc.Callable[[int], int]
        proc = subprocess.Popen(["true"], process_group=0)
        """)
    too_new = tmp_path / "too_new.py"
    too_new.write_text(body)
    unpostponed = tmp_path / "unpostponed.py"
    unpostponed.write_text("def g(a: list[int]) -> None:\n    return None\n\n\n"
                           "def h(a: int | None):\n    return a\n\n\nx: dict[str, int] = {}\n")
    fine = tmp_path / "fine.py"
    fine.write_text(_FINE_ON_38)
    findings = python38_findings([too_new, unpostponed, fine])
    lines = body.splitlines()
    for text, version in _TOO_NEW.items():
        lineno = lines.index(text) + 1
        assert any(f.startswith(f"{too_new}:{lineno}: needs Python {version}") for f in findings), \
            (text, lineno, findings)
    for lineno, version in ((1, "3.9"), (5, "3.10"), (9, "3.9")):
        assert any(f.startswith(f"{unpostponed}:{lineno}: needs Python {version}") for f in findings), \
            (lineno, findings)
    assert not [f for f in findings if f.startswith(str(fine))], findings


def test_the_operator_side_needs_no_newer_python_than_setup_py_states():
    """setup.py's python_requires is the operator's minimum: nothing needs a newer one."""
    tree = ast.parse((REPO / "setup.py").read_text())
    (requires,) = [kw.value.value for node in ast.walk(tree) if isinstance(node, ast.keyword)
                   for kw in [node] if kw.arg == "python_requires"]
    assert requires == ">=3.10"
    classifiers = (REPO / "setup.py").read_text()
    assert "Programming Language :: Python :: 3.10" in classifiers and "Operating System :: POSIX :: Linux" in classifiers
    res = subprocess.run(VERMIN + ["--target=3.10-", "--violations", "--no-tips", "--no-config-file", "--format",
                                   "parsable", "--processes=1", "src", "analysis", "car_driver", "nodes", "bench",
                                   "setup.py"], cwd=REPO, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in res.stdout.splitlines() if re.match(r"^[^:]+:\d+:", ln)]
    assert res.returncode == 0 and not lines, res.stdout[-3000:] + res.stderr[-3000:]


def test_the_cli_on_an_older_python_says_what_it_needs():
    """``bin/netloop`` on Python 3.8 (a robot's) stops at once with the minimum and where the
    robot's set is, rather than failing deep inside on a keyword-only dataclass."""
    code = ("import runpy, sys; sys.version_info = (3, 8, 10, 'final', 0); sys.version = '3.8.10 (faked)'; "
            "sys.argv = ['netloop', '--help']; runpy.run_module('netloop', run_name='__main__')")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "needs Python 3.10 or newer (this is 3.8.10)" in res.stderr and "robot_side.py" in res.stderr
    assert not res.stdout
    findings = python38_findings([REPO / "src/netloop/__main__.py"])
    assert not findings, findings           # the guard itself runs on 3.8


# --- imports ------------------------------------------------------------------------------------

def _module_of(path: Path) -> str:
    rel = path.relative_to(REPO)
    if rel.parts[0] == "src":
        parts = list(rel.with_suffix("").parts[1:])
    elif rel.parts[0] in ("analysis", "car_driver"):
        parts = ["netloop", *rel.with_suffix("").parts]
    else:
        return rel.stem
    return ".".join(p for p in parts if p != "__init__")


def imports_of(path: Path) -> set[str]:
    """Every module a file imports, at any depth, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = _module_of(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            if target.startswith("netloop"):
                # ``from netloop.car_driver import calibrate_steering`` imports a module, not a name
                out.update(f"{target}.{a.name}" for a in node.names
                           if (REPO / robot_side.module_path(f"{target}.{a.name}")).exists())
    return out - {"__future__"}


def test_robot_side_files_import_only_the_robot_side():
    declared = set(robot_side.ROBOT_MODULES) | set(robot_side.ROBOT_GENERATED)
    wrong = []
    for path in _files():
        for module in sorted(imports_of(path)):
            top = module.split(".")[0]
            if top == "netloop":
                if module not in declared:
                    wrong.append(f"{path.relative_to(REPO)} imports {module}, which is not robot-side")
            elif top not in sys.stdlib_module_names and top not in robot_side.ROBOT_PYTHON_PACKAGES:
                wrong.append(f"{path.relative_to(REPO)} imports {module}, not a robot package "
                             f"(netloop.robot_side.ROBOT_PYTHON_PACKAGES)")
    assert not wrong, "\n".join(wrong)


#: Run as ``python ROBOT_ENV MODULE [args]`` or ``python ROBOT_ENV -c CODE``: before anything
#: of netloop is imported, every import is refused but the standard library (by name, or found
#: in its folder, such as _sysconfigdata), PyYAML, the declared robot-side modules and those in
#: NETLOOP_ROBOT_ALLOW (comma-separated top-level names). Imports that netloop's code tried and
#: were refused are also listed in the file NETLOOP_ROBOT_REFUSED, so one that a ``try: ...
#: except ImportError`` swallowed is seen too (a name found nowhere, such as the standard
#: library's probe for Jython's ``org``, is not; nor a third-party package's optional import).
ROBOT_ENV = '''
import importlib.abc, importlib.machinery, os, runpy, sys, sysconfig
sys.path.insert(0, {src!r})
ALLOWED_NETLOOP = set({modules!r})
GENERATED = tuple(m + "." for m in {generated!r})
ALLOWED_TOP = set(sys.stdlib_module_names) | {{"yaml", "_yaml"}} | set(
    filter(None, os.environ.get("NETLOOP_ROBOT_ALLOW", "").split(",")))
STDLIB = tuple(os.path.realpath(sysconfig.get_path(k)) + os.sep for k in ("stdlib", "platstdlib"))
REFUSED = os.environ.get("NETLOOP_ROBOT_REFUSED")
# NETLOOP_ROBOT_SYSTEM=1: also what the system's apt installed (rospy, the ROS messages), as on a
# robot, but never the operator's packages, wherever they are
SYSTEM = os.environ.get("NETLOOP_ROBOT_SYSTEM") == "1"
OPERATOR_ONLY = {{"numpy", "scipy", "matplotlib", "control", "pybullet", "jinja2", "markupsafe", "zenoh",
                 "cyclonedds", "pytest", "cv2", "PIL", "vermin"}}


def in_stdlib(name, path):
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None or not spec.origin:
        return None                 # found nowhere (or a namespace): the import fails by itself
    origin = os.path.realpath(spec.origin)
    if SYSTEM and name not in OPERATOR_ONLY and origin.startswith("/usr/lib/python3/dist-packages/"):
        return True
    return origin.startswith(STDLIB) and "-packages" not in origin


OURS = tuple(os.path.realpath(d) + os.sep for d in {ours!r})


def by_netloop():
    """True if the import being refused is netloop's (or the test's own code), not an optional
    import inside a third-party package (genpy tries numpy), which is refused all the same."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith("<frozen") or name == __file__ or os.sep + "importlib" + os.sep in name):
            return name == "<robot>" or os.path.realpath(name).startswith(OURS)
        frame = frame.f_back
    return True


class RobotOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top == "netloop":
            if fullname in ALLOWED_NETLOOP or fullname.startswith(GENERATED):
                return None
        elif top in ALLOWED_TOP or "." in fullname:
            return None             # allowed, or a submodule of an allowed package
        else:
            found = in_stdlib(fullname, path)
            if found is None or found:
                return None
        if REFUSED and by_netloop():
            with open(REFUSED, "a") as f:
                f.write(fullname + "\\n")
        raise ModuleNotFoundError("not on the robot: " + fullname, name=fullname)


sys.meta_path.insert(0, RobotOnly())
if sys.argv[1] == "-c":
    code = sys.argv[2]
    sys.argv = ["-c"] + sys.argv[3:]
    exec(compile(code, "<robot>", "exec"), {{"__name__": "__main__"}})
else:
    module = sys.argv[1]
    sys.argv = [module] + sys.argv[2:]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
'''


@pytest.fixture
def robot_python(tmp_path):
    """argv prefix running a module (or ``-c CODE``) with only the robot's packages importable;
    the file the refused imports are listed in."""
    runner = tmp_path / "robot_env.py"
    runner.write_text(ROBOT_ENV.format(src=str(REPO / "src"), generated=list(robot_side.ROBOT_GENERATED),
                                       ours=[str(REPO / "src"), str(REPO / "car_driver")],
                                       modules=sorted(robot_side.ROBOT_MODULES + robot_side.ROBOT_GENERATED)))
    refused = tmp_path / "refused.txt"
    env = dict(os.environ, NETLOOP_ROBOT_REFUSED=str(refused), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    return [sys.executable, str(runner)], env, refused


def test_the_robot_env_refuses_the_operator_side(robot_python):
    """The fence itself works: numpy and netloop.schema cannot be imported in it."""
    argv, env, refused = robot_python
    for module in ("numpy", "netloop.schema", "netloop.machines", "scipy"):
        res = subprocess.run(argv + ["-c", f"import {module}"], env=env, capture_output=True, text=True,
                             timeout=60)
        assert res.returncode != 0 and f"not on the robot: {module}" in res.stderr, res.stderr
    assert {"numpy", "netloop.schema", "netloop.machines", "scipy"} <= set(refused.read_text().split())


@pytest.mark.robot
@pytest.mark.parametrize("module", [m for m in robot_side.ROBOT_MODULES if m != "netloop"])
def test_each_robot_module_imports_with_only_the_robots_packages(robot_python, module):
    argv, env, refused = robot_python
    code = (f"import importlib, sys; importlib.import_module({module!r}); "
            "print(sorted(m for m in sys.modules if m.startswith('netloop')))")
    res = subprocess.run(argv + ["-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-3000:]
    assert not refused.exists(), f"{module} tried to import {refused.read_text().split()}"
    loaded = set(ast.literal_eval(res.stdout.strip().splitlines()[-1]))
    assert module in loaded and loaded <= set(robot_side.ROBOT_MODULES), loaded


# --- the robot-side programs, run with only the robot's packages ---------------------------------

@pytest.mark.robot
@pytest.mark.integration
def test_mm_sync_runs_as_a_ros_node_with_only_the_robots_packages(robot_python, roscore, tmp_path):
    """The multimaster transport's sync as a robot runs it (``python -m
    netloop.transports.mm_sync``): the transports package does not pull the operator's side in;
    it reads its master, reports statistics (netloop/MasterSyncStats from the build's messages)
    and ends on SIGINT."""
    argv, env, refused = robot_python
    env.update(roscore.env, ROS_MASTER_URI=roscore.uri, ROS_IP="127.0.0.1", NETLOOP_ROBOT_SYSTEM="1",
               PYTHONPATH=str(paths.DEVEL / "lib/python3/dist-packages"))
    stats = tmp_path / "mm_sync_robot.jsonl"
    roscore.set_params(mm_sync_option_params(None) | {
        "host": "robot", "address": "127.0.0.1", "domain": str(tmp_path), "discovery": "static", "port": 0,
        "peers": [], "allowed_peers": ["127.0.0.1"], "heartbeat_hz": 10.0, "sync_interval": 0.1,
        "stats_period": 0.2, "stats_path": str(stats)}, "/mm_sync_robot")
    with open(tmp_path / "mm_sync.log", "wb") as log:
        proc = subprocess.Popen(argv + ["netloop.transports.mm_sync", "__name:=mm_sync_robot"], env=env,
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not (stats.exists() and stats.read_text().count("\n") >= 2) and time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "mm_sync.log").read_text()[-3000:]
            time.sleep(0.1)
        lines = stats.read_text().splitlines() if stats.exists() else []
        assert len(lines) >= 2, (tmp_path / "mm_sync.log").read_text()[-3000:]
        report = json.loads(lines[-1])
        assert report["host"] == "robot" and report["peers"] == {}, report
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=20) == 0, (tmp_path / "mm_sync.log").read_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert not refused.exists(), f"mm_sync tried to import {refused.read_text().split()}"


@pytest.mark.robot
@pytest.mark.integration
def test_the_car_node_runs_as_a_ros_node_with_only_the_robots_packages(robot_python, roscore, tmp_path):
    """car_node.py as launch/car.launch starts it on the car, against a real roscore, with the
    system's rospy and messages and nothing of the operator's: it drives on cmd_vel, the
    watchdog stops it when commands stop, SIGINT ends it cleanly with every output off."""
    argv, env, refused = robot_python
    env.update(roscore.env, ROS_MASTER_URI=roscore.uri, ROS_IP="127.0.0.1", NETLOOP_ROBOT_SYSTEM="1",
               PYTHONPATH=str(paths.DEVEL / "lib/python3/dist-packages"))
    state_file = tmp_path / "car_state.json"
    started = []

    def start(name, cmd):
        log = open(tmp_path / f"{name}.log", "wb")
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        log.close()
        started.append(proc)
        return proc

    def state():
        try:
            return json.loads(state_file.read_text())
        except (OSError, ValueError):
            return None

    def wait(cond, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = state()
            if s is not None and cond(s):
                return s
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}:\n" + (tmp_path / "car_node.log").read_text()[-3000:])

    try:
        node = start("car_node", argv + ["netloop.car_driver.car_node", "__name:=car_driver", "_hardware:=fake",
                                         "_camera:=false", "_watchdog_timeout:=0.25",
                                         f"_fake_state_file:={state_file}"])
        wait(lambda s: s["pca9685"]["prescale"] == 101, 30, "the node to start")
        pub = start("pub", ["rostopic", "pub", "-r", "20", "/cmd_vel", "geometry_msgs/Twist",
                            "{linear: {x: 0.3}, angular: {z: 0.0}}"])
        s = wait(lambda s: s["controller"]["running"], 30, "the motors to run")
        assert s["pca9685"]["channels"]["4"]["duty"] == 0.5, s
        os.killpg(pub.pid, signal.SIGINT)
        pub.wait(timeout=10)
        s = wait(lambda s: not s["controller"]["running"], 5, "the watchdog")
        assert "watchdog" in s["controller"]["stop_reason"], s
        os.killpg(node.pid, signal.SIGINT)
        assert node.wait(timeout=20) == 0, (tmp_path / "car_node.log").read_text()[-3000:]
        s = state()
        assert s["controller"]["shut_down"] and all(ch["duty"] == 0 for ch in s["pca9685"]["channels"].values())
    finally:
        for proc in started:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert not refused.exists(), f"the node tried to import {refused.read_text().split()}"


@pytest.mark.robot
def test_the_remote_wrapper_runs_a_command_with_its_environment_and_status(robot_python, tmp_path):
    argv, env, refused = robot_python
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with open(out, "w") as fo, open(err, "w") as fe:
        # stdin stays open (as an SSH session's does) until the command has ended by itself
        proc = subprocess.Popen(argv + ["netloop.remote_exec", "--env", "NETLOOP_PROBE=robot", "--", "sh", "-c",
                                        'echo "probe=$NETLOOP_PROBE"; exit 3'],
                                env=env, stdin=subprocess.PIPE, stdout=fo, stderr=fe)
        try:
            code = proc.wait(timeout=60)
        finally:
            proc.stdin.close()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert code == 3 and "probe=robot" in out.read_text(), out.read_text() + err.read_text()
    assert not refused.exists(), refused.read_text()


@pytest.mark.robot
def test_the_remote_wrapper_stops_its_command_when_stdin_closes(robot_python, tmp_path):
    """The SSH connection ending closes the wrapper's stdin: the command (and its group) stops."""
    argv, env, refused = robot_python
    pidfile = tmp_path / "child.pid"
    proc = subprocess.Popen(argv + ["netloop.remote_exec", "--grace", "1", "--", "sh", "-c",
                                    f'echo $$ > {pidfile}; exec sleep 60'],
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(pidfile.read_text())
        started = time.monotonic()
        proc.stdin.close()
        proc.wait(timeout=30)
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert time.monotonic() - started < 10, err
    assert proc.returncode == 128 + signal.SIGINT, (proc.returncode, err)
    assert "standard input closed" in err, err
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    assert not refused.exists(), refused.read_text()


@pytest.mark.robot
def test_the_clock_server_answers_the_operator(robot_python):
    argv, env, refused = robot_python
    server = subprocess.Popen(argv + ["netloop.clocksync", "serve", "--bind", "127.0.0.1", "--idle", "10"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert line.startswith("port "), line + server.stderr.read()
        m = clocksync.measure("127.0.0.1", int(line.split()[1]), count=8)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert m["samples"] == 8 and m["lost"] == 0
    assert abs(m["offset_ms"]) <= m["uncertainty_ms"] + 0.5, m    # one clock: offset 0 within the bound
    assert not refused.exists(), refused.read_text()


@pytest.mark.robot
def test_the_calibration_tool_runs_on_fake_hardware(robot_python):
    argv, env, refused = robot_python
    res = subprocess.run(argv + ["netloop.car_driver.calibrate_steering", "--hardware", "fake", "--offset", "5"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "steering +0.00 rad ->" in res.stdout and "offset: 5" in res.stdout, res.stdout
    assert not refused.exists(), refused.read_text()


@pytest.mark.robot
def test_the_car_driver_drives_and_stops_on_fake_hardware(robot_python):
    """The driver's command path without ROS: profile, fake PCA9685 and pins, a forward
    command, the watchdog's stop, shutdown with every output off; numpy (the fake camera's)
    is not needed for it."""
    argv, env, refused = robot_python
    code = textwrap.dedent("""\
        import json, time
        from netloop.car_driver.car_node import Hardware
        from netloop.car_driver.controller import CarController
        from netloop.car_driver.profiles import load_profile
        profile = load_profile("smart_video_car")
        hw = Hardware("fake", profile)
        car = CarController(profile, hw.bus, hw.gpio, watchdog_timeout=0.2)
        car.start()
        car.command(0.3, 0.0)
        driving = [hw.bus.duty(4), hw.bus.duty(5), sorted(set(hw.gpio.levels.values()))]
        time.sleep(0.3)
        fired = car.check_watchdog()
        stopped = [hw.bus.duty(4), hw.bus.duty(5), sorted(set(hw.gpio.levels.values()))]
        errors = car.shutdown()
        off = [hw.bus.duty(n) for n in range(16)]
        print(json.dumps({"driving": driving, "fired": fired, "stopped": stopped,
                          "errors": [str(e) for e in errors], "off": off}))
        """)
    res = subprocess.run(argv + ["-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert max(out["driving"][:2]) > 0 and 1 in out["driving"][2], out
    assert out["fired"] and out["stopped"] == [0, 0, [0]], out
    assert out["errors"] == [] and set(out["off"]) == {0}, out
    assert not refused.exists(), refused.read_text()
