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
