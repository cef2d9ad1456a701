"""netloop: control-over-network experiments for ROS1.

The Python side of the package: experiment orchestration (``netloop.cli``), the testbed,
analysis (``netloop.analysis``, sources in the top-level ``analysis/`` folder) and the
real car driver (``netloop.car_driver``, in ``car_driver/``). The C++ loop and relay nodes
live in ``controllers/`` and ``src/``.
"""
import pkgutil as _pkgutil

# The generated message module (netloop.msg) lives in the catkin devel space, in another
# directory called "netloop" on sys.path: join them into one package.
__path__ = _pkgutil.extend_path(__path__, __name__)

__version__ = "0.1.0"
