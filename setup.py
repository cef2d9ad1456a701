"""The Python package ``netloop``, built by catkin (``catkin_python_setup()`` in CMakeLists.txt).

Sources: ``netloop`` and its subpackages in ``src/netloop/``; ``netloop.analysis`` and
``netloop.car_driver`` in the top-level folders ``analysis/`` and ``car_driver/``.
``catkin_make install`` copies all of them into ``<prefix>/lib/python3/dist-packages/netloop``.
In the devel space and in a source checkout ``src/netloop/__init__.py`` finds the two folders.

Python: the operator's side (``netloop`` the command, the testbed, the analysis) needs
Python >= 3.10 on Linux (``python_requires`` below; ``dataclass(kw_only=True)``,
``os.pidfd_open``). What runs on a robot — the modules :mod:`netloop.robot_side` declares, and
this file, which catkin runs there at build time — needs only Python 3.8 (Ubuntu 20.04 with ROS
Noetic), the standard library, PyYAML, rospy and the car's libraries. catkin does not enforce
``python_requires`` (only pip does), so the robot's catkin build of the same package works.
"""
from __future__ import annotations

from catkin_pkg.python_setup import generate_distutils_setup
from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

#: Subpackages whose sources are a top-level folder of the same name (keep in step with
#: ``FOLDER_SUBPACKAGES`` in src/netloop/__init__.py).
FOLDER_SUBPACKAGES = ("analysis", "car_driver")


def packages_in(folder: str, package: str) -> list[str]:
    """``package`` (whose sources are ``folder``) and every subpackage below it."""
    return [package] + [f"{package}.{sub}" for sub in find_packages(where=folder)]


class BuildWithFolderSubpackages(build_py):
    """``build_py`` that also builds ``netloop.<name>`` from the folder ``<name>/``.

    They are added here rather than in ``setup(packages=...)`` because catkin's devel space
    cannot relay a subpackage whose folder is not inside its parent's folder: catkin's
    interrogate_setup_dot_py.py rejects such a setup.py ("does not support setup.py files that
    combine across multiple directories"). catkin reads only ``setup()``'s arguments, so the
    devel space sees ``netloop`` in ``src/`` alone.
    """

    def finalize_options(self):
        super().finalize_options()
        self.packages = list(self.packages or [])
        for name in FOLDER_SUBPACKAGES:
            self.package_dir[f"netloop.{name}"] = name
            self.packages += packages_in(name, f"netloop.{name}")


setup(**generate_distutils_setup(
    packages=packages_in("src/netloop", "netloop"),
    package_dir={"": "src"},
    cmdclass={"build_py": BuildWithFolderSubpackages},
    python_requires=">=3.10",
    classifiers=[
        "Operating System :: POSIX :: Linux",
        "Programming Language :: Python :: 3 :: Only",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Topic :: Scientific/Engineering",
    ],
))
