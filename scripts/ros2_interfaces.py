"""Generates netloop's ROS 2 interface package (``netloop``: msg/LoopSample) with rosidl.

Run by the ROS 2 environment's Python (scripts/build.sh does it through ros2/CMakeLists.txt):

    <ros2 venv>/bin/python scripts/ros2_interfaces.py --msg-dir msg --out DIR [--types LoopSample]

Each ROS 1 message of ``--types`` is translated to ROS 2's .msg (ROS 1's ``time`` and
``duration`` become builtin_interfaces/Time and /Duration, ``Header`` std_msgs/Header), then
rosidl's generators write, under DIR: ``msg/`` (the ROS 2 .msg and .idl), and each generator's
sources in ``<generator>/netloop/``, as rosidl's CMake lays them out: ``c`` (rosidl_generator_c,
with the type description JSON that carries the RIHS01 hash), ``typesupport_c``,
``typesupport_fastrtps_c``, ``typesupport_introspection_c`` and ``py`` (rosidl_generator_py). A file is written only
when its content changes, so a rebuild recompiles nothing (ccache and make both see the same
files). The generators are called as the ``rosidl generate`` command's extensions, directly: in
the PyPI wheels that command trips over duplicated entry points.

Standard library and the ROS 2 environment's packages only (not netloop's, which is not on
this interpreter's path).
"""
from __future__ import annotations

import argparse
import filecmp
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

PACKAGE = "netloop"
#: ROS 1 field types that have another name in ROS 2
TYPE_RENAMES = {"time": "builtin_interfaces/Time", "duration": "builtin_interfaces/Duration",
                "Header": "std_msgs/Header"}
_FIELD_RE = re.compile(r"^(\s*)([A-Za-z][A-Za-z0-9_/]*)((?:\[\d*\])?)(\s+\S.*)$")


def ros2_msg_text(ros1_text: str) -> str:
    """A ROS 1 .msg as ROS 2 reads it: the renamed field types, comments and constants kept."""
    out = []
    for line in ros1_text.splitlines():
        m = _FIELD_RE.match(line)
        if m and not line.lstrip().startswith("#"):
            indent, ftype, array, rest = m.groups()
            line = f"{indent}{TYPE_RENAMES.get(ftype, ftype)}{array}{rest}"
        out.append(line)
    return "\n".join(out) + "\n"


def _generators():
    """(subfolder, generator) for every rosidl extension the C type support and Python need."""
    from rosidl_generator_c.cli import GenerateC
    from rosidl_generator_py.cli import GeneratePython
    from rosidl_typesupport_c.cli import GenerateCTypesupport
    from rosidl_typesupport_fastrtps_c.cli import GenerateFastRTPSCTypesupport
    from rosidl_typesupport_introspection_c.cli import GenerateIntrospectionCTypesupport
    c_impls = ["rosidl_typesupport_fastrtps_c", "rosidl_typesupport_introspection_c"]
    return [("c", GenerateC("c")),
            ("typesupport_c", GenerateCTypesupport("typesupport_c", typesupport_implementations=c_impls)),
            ("typesupport_fastrtps_c", GenerateFastRTPSCTypesupport("typesupport_fastrtps_c")),
            ("typesupport_introspection_c", GenerateIntrospectionCTypesupport("typesupport_introspection_c")),
            ("py", GeneratePython("py", typesupport_implementations=["rosidl_typesupport_c"] + c_impls))]


def _sync(src: Path, dst: Path) -> int:
    """Copies the files of ``src`` into ``dst`` where they differ; removes what ``src`` lacks.
    Returns how many files changed."""
    changed = 0
    wanted = set()
    for f in src.rglob("*"):
        if not f.is_file() or "tmp" in f.relative_to(src).parts[:2]:
            continue
        rel = f.relative_to(src)
        wanted.add(rel)
        target = dst / rel
        if target.is_file() and filecmp.cmp(f, target, shallow=False):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
        changed += 1
    if dst.is_dir():
        for f in dst.rglob("*"):
            if f.is_file() and f.relative_to(dst) not in wanted:
                f.unlink()
                changed += 1
    return changed


def generate(msg_dir: Path, types: list[str], out: Path) -> int:
    """Generates everything into ``out``; returns how many files changed."""
    prefix = Path(sys.prefix)
    os.environ.setdefault("AMENT_PREFIX_PATH", str(prefix))
    include_paths = [str(prefix / "share")]
    with tempfile.TemporaryDirectory(prefix="netloop-rosidl-") as tmp:
        work = Path(tmp)
        (work / "msg").mkdir()
        for name in types:
            text = (msg_dir / f"{name}.msg").read_text(encoding="utf-8")
            (work / "msg" / f"{name}.msg").write_text(ros2_msg_text(text), encoding="utf-8")
        files = [f"{work}:msg/{name}.msg" for name in types]
        generators = _generators()
        for sub, gen in generators:   # as rosidl's CMake does: <sub>/<package>/msg/...
            gen.generate(PACKAGE, files, include_paths, work / "gen" / sub / PACKAGE)
        for name in types:            # the IDL rosidl translated the .msg to, installed beside it
            shutil.copyfile(work / "gen" / "c" / PACKAGE / "tmp" / "msg" / f"{name}.idl", work / "msg" / f"{name}.idl")
        changed = _sync(work / "msg", out / "msg")
        for sub, _ in generators:
            changed += _sync(work / "gen" / sub, out / sub)
    return changed


def main(argv: list[str] | None = None) -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":   # rosidl orders some #includes by set order
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], {**os.environ, "PYTHONHASHSEED": "0"})
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--msg-dir", type=Path, required=True, help="the ROS 1 .msg files (netloop's msg/)")
    ap.add_argument("--out", type=Path, required=True, help="where the generated sources go")
    ap.add_argument("--types", nargs="+", default=["LoopSample"], help="messages to generate")
    args = ap.parse_args(argv)
    changed = generate(args.msg_dir.resolve(), args.types, args.out.resolve())
    print(f"ros2_interfaces: {PACKAGE} ({', '.join(args.types)}) generated in {args.out}, {changed} file(s) changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
