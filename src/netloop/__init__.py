"""netloop: control-over-network experiments for ROS 1 and ROS 2.

The Python side of the package: experiment orchestration (``netloop.cli``), the testbed,
analysis (``netloop.analysis``, sources in the top-level ``analysis/`` folder) and the
real car driver (``netloop.car_driver``, in ``car_driver/``). The C++ loop and relay nodes
live in ``controllers/`` and ``src/``.

Where the package comes from (setup.py builds it, ``catkin_python_setup()`` in CMakeLists.txt):

* install space (``catkin_make install``): one folder ``lib/python3/dist-packages/netloop``
  holding everything, the two top-level folders copied in as subpackages;
* catkin devel space and the source checkout (``scripts/env.sh`` puts ``src`` on PYTHONPATH):
  this file, and the finder below resolves ``netloop.analysis`` / ``netloop.car_driver`` to the
  repository's top-level folders. The generated messages (``netloop.msg``) live in the devel
  space's ``netloop`` folder; ``extend_path`` joins it to this package.
"""
import importlib.machinery as _machinery
import pkgutil as _pkgutil
import sys as _sys
from pathlib import Path as _Path

__path__ = _pkgutil.extend_path(__path__, __name__)



def _package_version() -> str:
    """The version in package.xml, netloop's one version (catkin's setup.py reads the same file);
    package.xml is at the repository root in a checkout, in ``share/netloop`` when installed."""
    import re as _re
    from .paths import REPO
    try:
        text = (REPO / "package.xml").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    found = _re.search(r"<version>\s*([^<\s]+)\s*</version>", text)
    return found.group(1) if found else "unknown"


__version__ = _package_version()

#: Subpackages whose sources are a top-level folder of the same name (setup.py lists the same).
FOLDER_SUBPACKAGES = ("analysis", "car_driver")


class _FolderSubpackageFinder:
    """Import hook: ``netloop.<name>`` for ``name`` in FOLDER_SUBPACKAGES from ``<root>/<name>``."""

    def __init__(self, root: _Path):
        self.netloop_source_root = root

    def find_spec(self, fullname, path=None, target=None):
        package, _, name = fullname.partition(".")
        if package != __name__ or name not in FOLDER_SUBPACKAGES:
            return None
        return _machinery.PathFinder.find_spec(fullname, [str(self.netloop_source_root)])


def _source_checkout_root():
    """The repository root if this package is imported from ``<root>/src/netloop``, else None."""
    for entry in __path__:
        folder = _Path(entry).resolve()
        root = folder.parent.parent
        if (folder.parent.name == "src" and (root / "package.xml").is_file()
                and all((root / name / "__init__.py").is_file() for name in FOLDER_SUBPACKAGES)):
            return root
    return None


def _install_folder_subpackage_finder():
    """In a source checkout, let ``import netloop.analysis`` find ``<root>/analysis`` (once)."""
    root = _source_checkout_root()
    if root is None:
        return
    if any(getattr(finder, "netloop_source_root", None) == root for finder in _sys.meta_path):
        return
    _sys.meta_path.insert(0, _FolderSubpackageFinder(root))


_install_folder_subpackage_finder()
