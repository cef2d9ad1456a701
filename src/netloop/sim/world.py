"""World (SDF) and robot (URDF) files for the embedded simulator, checked before anything moves.

* :func:`resolve_world` turns ``arena`` / ``tunnel`` / a path into an existing ``.world`` file.
* :func:`prepare_world` parses the SDF and makes it safe for pybullet's ``loadSDF``, which
  silently drops ``<include><uri>model://NAME</uri></include>`` and reads ``<static>true``
  as 0: every ``model://NAME`` include is resolved against the directories of
  ``GAZEBO_MODEL_PATH`` and ``worlds/models/`` (if present) and inlined; one that cannot be
  resolved is refused with an error naming it. ``<static>true/false`` become ``1/0``.
  When something had to change, a rewritten copy is written to a temporary file.
* :func:`read_urdf` parses the URDF: links, joints (for TF, the way robot_state_publisher
  computes it) and the ``<gazebo>`` camera and ray sensors, whose parameters (field of view,
  resolution, rate, ray count, angles, ranges) the simulator uses so that it publishes what
  the Gazebo plugins would.

Errors are :class:`WorldError` (a ValueError) with the file and the problem.
"""
from __future__ import annotations

import copy
import math
import os
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from netloop import paths

WORLDS_DIR = paths.REPO / "worlds"
LOCAL_MODELS_DIR = WORLDS_DIR / "models"
DEFAULT_URDF = paths.REPO / "models" / "sunfounder_car" / "urdf" / "sunfounder_car.urdf"

#: Joints the simulator drives; a URDF without them cannot be the car.
DRIVE_JOINTS = ("rear_left_wheel_joint", "rear_right_wheel_joint",
                "front_left_steering_joint", "front_right_steering_joint")
MAX_INCLUDE_DEPTH = 8


class WorldError(ValueError):
    """A world or robot file that does not exist, does not parse or cannot be simulated."""


# -- worlds ---------------------------------------------------------------------------------
def world_names() -> list[str]:
    """The worlds shipped in worlds/ (``arena``, ``tunnel``)."""
    return sorted(p.stem for p in WORLDS_DIR.glob("*.world"))


def resolve_world(spec: str | os.PathLike) -> Path:
    """``arena`` -> worlds/arena.world; anything with a slash or a suffix is a path."""
    text = str(spec).strip()
    if not text:
        raise WorldError(f"world: empty name; use one of {', '.join(world_names())} or a .world path")
    if "/" not in text and not text.endswith((".world", ".sdf")):
        path = WORLDS_DIR / f"{text}.world"
        if not path.is_file():
            raise WorldError(f"world: unknown world '{text}'; available: {', '.join(world_names())} "
                             f"(or give the path of an SDF .world file)")
        return path
    path = Path(text).expanduser()
    if not path.is_file():
        raise WorldError(f"world: file '{path}' does not exist")
    return path.resolve()


def model_path() -> list[Path]:
    """Directories searched for ``model://NAME``: GAZEBO_MODEL_PATH, then worlds/models/."""
    dirs = [Path(d) for d in os.environ.get("GAZEBO_MODEL_PATH", "").split(os.pathsep) if d.strip()]
    if LOCAL_MODELS_DIR.is_dir():
        dirs.append(LOCAL_MODELS_DIR)
    return [d for d in dirs if d.is_dir()]


def _parse_xml(path: Path, what: str) -> ET.Element:
    try:
        return ET.parse(path).getroot()
    except FileNotFoundError:
        raise WorldError(f"{what} '{path}' does not exist") from None
    except ET.ParseError as err:
        raise WorldError(f"{what} '{path}' does not parse as XML: {err}") from None
    except OSError as err:
        raise WorldError(f"{what} '{path}' cannot be read: {err}") from None


@dataclass
class PreparedWorld:
    source: Path                    # the world file asked for
    load_path: Path                 # what to give pybullet (source, or a rewritten copy)
    name: str                       # <world name=...>
    models: list[str]               # top-level model names after inlining includes
    includes: list[tuple[str, str]] = field(default_factory=list)   # (uri, resolved directory)
    rewritten: bool = False

    def cleanup(self) -> None:
        if self.rewritten:
            try:
                self.load_path.unlink()
            except OSError:
                pass


def _find_model_dir(name: str, search: list[Path]) -> Path | None:
    for d in search:
        cand = d / name
        if (cand / "model.config").is_file() or (cand / "model.sdf").is_file():
            return cand
    return None


def _model_sdf_file(model_dir: Path) -> Path:
    config = model_dir / "model.config"
    if config.is_file():
        root = _parse_xml(config, "model config")
        for sdf in root.findall("sdf"):
            if sdf.text and (model_dir / sdf.text.strip()).is_file():
                return model_dir / sdf.text.strip()
    return model_dir / "model.sdf"


def _unresolved(uri: str, where: str, search: list[Path]) -> WorldError:
    looked = ", ".join(str(d) for d in search) or "none (GAZEBO_MODEL_PATH is empty and worlds/models/ does not exist)"
    return WorldError(f"{where}: cannot resolve '{uri}': no model directory "
                      f"'{uri[len('model://'):].split('/')[0]}' in the model path (searched: {looked}). "
                      "pybullet would drop it silently, so the world is refused; set GAZEBO_MODEL_PATH "
                      "or put the model into worlds/models/")


def _rewrite_uris(elem: ET.Element, base_dir: Path, search: list[Path], where: str) -> None:
    """model://NAME/file and relative file URIs inside ``elem`` -> absolute paths."""
    for uri_el in elem.iter("uri"):
        uri = (uri_el.text or "").strip()
        if uri.startswith("model://"):
            rest = uri[len("model://"):]
            name, _, sub = rest.partition("/")
            model_dir = _find_model_dir(name, search)
            if model_dir is None or not (model_dir / sub).exists():
                raise _unresolved(uri, where, search)
            uri_el.text = str(model_dir / sub)
        elif uri.startswith("file://"):
            uri_el.text = uri[len("file://"):]
        elif uri and "://" not in uri and not os.path.isabs(uri):
            uri_el.text = str(base_dir / uri)


def _normalise_static(elem: ET.Element) -> bool:
    changed = False
    for st in elem.iter("static"):
        text = (st.text or "").strip().lower()
        if text in ("true", "false"):
            st.text = "1" if text == "true" else "0"
            changed = True
    return changed


def _inline_include(inc: ET.Element, search: list[Path], where: str, depth: int,
                    found: list[tuple[str, str]]) -> ET.Element:
    uri = (inc.findtext("uri") or "").strip()
    if not uri:
        raise WorldError(f"{where}: <include> without a <uri>")
    if not uri.startswith("model://"):
        raise WorldError(f"{where}: <include> of '{uri}': only model://NAME includes are supported")
    name = uri[len("model://"):].strip("/").split("/")[0]
    model_dir = _find_model_dir(name, search)
    if model_dir is None:
        raise _unresolved(uri, where, search)
    sdf_file = _model_sdf_file(model_dir)
    root = _parse_xml(sdf_file, f"model '{name}' (from {uri}) file")
    model = root if root.tag == "model" else root.find("model")
    if model is None:
        raise WorldError(f"{where}: '{uri}' ({sdf_file}) has no <model> element")
    model = copy.deepcopy(model)
    found.append((uri, str(model_dir)))
    _expand_includes(model, search, f"{where} -> {uri}", depth + 1, found)
    _rewrite_uris(model, sdf_file.parent, search, f"{where} -> {uri}")
    if inc.findtext("name"):
        model.set("name", inc.findtext("name").strip())
    for tag in ("pose", "static"):
        override = inc.find(tag)
        if override is not None:
            old = model.find(tag)
            if old is not None:
                model.remove(old)
            model.insert(0, copy.deepcopy(override))
    return model


def _expand_includes(elem: ET.Element, search: list[Path], where: str, depth: int,
                     found: list[tuple[str, str]]) -> bool:
    if depth > MAX_INCLUDE_DEPTH:
        raise WorldError(f"{where}: includes nested deeper than {MAX_INCLUDE_DEPTH} (a cycle?)")
    changed = False
    for index, child in enumerate(list(elem)):
        if child.tag == "include":
            elem.remove(child)
            elem.insert(index, _inline_include(child, search, where, depth, found))
            changed = True
        else:
            changed |= _expand_includes(child, search, where, depth, found)
    return changed


def prepare_world(spec: str | os.PathLike, work_dir: str | os.PathLike | None = None) -> PreparedWorld:
    """Check a world and make it loadable by pybullet (see the module docstring)."""
    path = resolve_world(spec)
    root = _parse_xml(path, "world file")
    if root.tag != "sdf":
        raise WorldError(f"world file '{path}': root element is <{root.tag}>, expected <sdf>")
    world = root.find("world")
    if world is None:
        raise WorldError(f"world file '{path}': no <world> element")
    search = model_path()
    found: list[tuple[str, str]] = []
    changed = _expand_includes(world, search, f"world file '{path}'", 0, found)
    before = ET.tostring(world)
    _rewrite_uris(world, path.parent, search, f"world file '{path}'")
    changed |= ET.tostring(world) != before
    changed |= _normalise_static(world)
    models = [m.get("name", "?") for m in world.findall("model")]
    if not models:
        raise WorldError(f"world file '{path}': no <model> in the world (nothing to drive on)")
    load_path = path
    if changed:
        fd, tmp = tempfile.mkstemp(prefix=f"netloop-{path.stem}-", suffix=".world",
                                   dir=str(work_dir) if work_dir else None)
        with os.fdopen(fd, "wb") as f:
            f.write(ET.tostring(root, encoding="utf-8", xml_declaration=True))
        load_path = Path(tmp)
    return PreparedWorld(path, load_path, world.get("name", path.stem), models, found, changed)


# -- URDF -----------------------------------------------------------------------------------
@dataclass
class Joint:
    name: str
    type: str
    parent: str
    child: str
    xyz: tuple[float, float, float]
    rpy: tuple[float, float, float]
    axis: tuple[float, float, float]


def joint_transform(joint: Joint, q: float = 0.0):
    """(translation, rotation x y z w) of a joint's child link in its parent link at position
    ``q`` - what robot_state_publisher computes from the URDF."""
    # numpy only here, so that validating a world (netloop validate) needs no numpy
    from .geometry import quat_from_axis_angle, quat_from_rpy, quat_mul, quat_to_matrix  # noqa: PLC0415
    xyz = list(joint.xyz)
    rot = quat_from_rpy(*joint.rpy)
    if joint.type in ("revolute", "continuous"):
        rot = quat_mul(rot, quat_from_axis_angle(joint.axis, q))
    elif joint.type == "prismatic":
        d = quat_to_matrix(rot) @ [a * q for a in joint.axis]
        xyz = [xyz[i] + float(d[i]) for i in range(3)]
    return xyz, rot


@dataclass
class CameraSensor:
    link: str = "camera_link"
    frame: str = "camera_optical_frame"
    hfov: float = 1.085
    width: int = 320
    height: int = 240
    rate: float = 15.0
    near: float = 0.02
    far: float = 30.0


@dataclass
class LaserSensor:
    link: str = "laser"
    frame: str = "laser"
    samples: int = 360
    min_angle: float = -math.pi
    max_angle: float = math.pi - 2 * math.pi / 360
    range_min: float = 0.15
    range_max: float = 12.0
    rate: float = 10.0


@dataclass
class UrdfInfo:
    path: Path
    name: str
    links: list[str]
    joints: list[Joint]
    camera: CameraSensor
    laser: LaserSensor
    wheel_radius: float = 0.033

    def joint(self, name: str) -> Joint:
        return next(j for j in self.joints if j.name == name)

    @property
    def wheelbase(self) -> float:
        """Rear axle (base_link) to the steering pivots, along x."""
        return self.joint("front_left_steering_joint").xyz[0]

    @property
    def kingpin_track(self) -> float:
        """Distance between the two steering pivots."""
        return abs(self.joint("front_left_steering_joint").xyz[1] - self.joint("front_right_steering_joint").xyz[1])

    @property
    def root_link(self) -> str:
        children = {j.child for j in self.joints}
        return next(link for link in self.links if link not in children)


def _floats(text: str | None, n: int, default: tuple, where: str) -> tuple:
    if text is None:
        return default
    try:
        vals = tuple(float(v) for v in text.split())
    except ValueError:
        raise WorldError(f"{where}: '{text}' is not {n} numbers") from None
    if len(vals) != n:
        raise WorldError(f"{where}: '{text}' is not {n} numbers")
    return vals


def _sensor_number(elem: ET.Element, path: str, default, cast=float):
    text = elem.findtext(path)
    if text is None:
        return default
    try:
        return cast(float(text.strip()))
    except ValueError:
        return default


def read_urdf(spec: str | os.PathLike | None = None) -> UrdfInfo:
    """Parse and check the robot description (default: the Sunfounder car)."""
    path = Path(spec).expanduser() if spec else DEFAULT_URDF
    if not path.is_file():
        raise WorldError(f"URDF '{path}' does not exist")
    root = _parse_xml(path, "URDF")
    if root.tag != "robot":
        raise WorldError(f"URDF '{path}': root element is <{root.tag}>, expected <robot>")
    links = [l.get("name") for l in root.findall("link")]
    if not links:
        raise WorldError(f"URDF '{path}': no <link>")
    joints = []
    for j in root.findall("joint"):
        where = f"URDF '{path}', joint '{j.get('name')}'"
        parent, child = j.find("parent"), j.find("child")
        if parent is None or child is None:
            raise WorldError(f"{where}: needs <parent link=...> and <child link=...>")
        origin = j.find("origin")
        axis = j.find("axis")
        jt = Joint(j.get("name"), j.get("type", ""), parent.get("link"), child.get("link"),
                   _floats(origin.get("xyz") if origin is not None else None, 3, (0.0, 0.0, 0.0), where),
                   _floats(origin.get("rpy") if origin is not None else None, 3, (0.0, 0.0, 0.0), where),
                   _floats(axis.get("xyz") if axis is not None else None, 3, (1.0, 0.0, 0.0), where))
        for link in (jt.parent, jt.child):
            if link not in links:
                raise WorldError(f"{where}: link '{link}' is not defined")
        joints.append(jt)
    names = {j.name for j in joints}
    missing = [n for n in DRIVE_JOINTS if n not in names]
    if missing:
        raise WorldError(f"URDF '{path}': lacks the joint(s) {', '.join(missing)} the simulator "
                         "drives (rear wheels, front steering): not the Sunfounder car model")
    camera, laser = CameraSensor(), LaserSensor()
    for gz in root.findall("gazebo"):
        ref = gz.get("reference")
        for sensor in gz.findall("sensor"):
            if sensor.get("type") == "camera":
                frame = sensor.findtext("plugin/frameName") or camera.frame
                camera = CameraSensor(
                    link=ref or camera.link, frame=frame.strip(),
                    hfov=_sensor_number(sensor, "camera/horizontal_fov", camera.hfov),
                    width=_sensor_number(sensor, "camera/image/width", camera.width, int),
                    height=_sensor_number(sensor, "camera/image/height", camera.height, int),
                    rate=_sensor_number(sensor, "update_rate", camera.rate),
                    near=_sensor_number(sensor, "camera/clip/near", camera.near),
                    far=_sensor_number(sensor, "camera/clip/far", camera.far))
            elif sensor.get("type") in ("ray", "gpu_ray"):
                frame = sensor.findtext("plugin/frameName") or ref or laser.frame
                h = "ray/scan/horizontal/"
                laser = LaserSensor(
                    link=ref or laser.link, frame=frame.strip(),
                    samples=_sensor_number(sensor, h + "samples", laser.samples, int),
                    min_angle=_sensor_number(sensor, h + "min_angle", laser.min_angle),
                    max_angle=_sensor_number(sensor, h + "max_angle", laser.max_angle),
                    range_min=_sensor_number(sensor, "ray/range/min", laser.range_min),
                    range_max=_sensor_number(sensor, "ray/range/max", laser.range_max),
                    rate=_sensor_number(sensor, "update_rate", laser.rate))
    for what, link in (("camera", camera.link), ("laser", laser.link)):
        if link not in links:
            raise WorldError(f"URDF '{path}': the {what} sensor's link '{link}' is not defined")
    wheel = root.find("link[@name='%s']/collision/geometry/cylinder" % next(
        j.child for j in joints if j.name == "rear_left_wheel_joint"))
    if wheel is None or wheel.get("radius") is None:
        raise WorldError(f"URDF '{path}': the rear left wheel has no collision cylinder (its radius "
                         "converts speed to wheel rotation)")
    radius = _floats(wheel.get("radius"), 1, (0.033,), f"URDF '{path}', wheel radius")[0]
    return UrdfInfo(path.resolve(), root.get("name", ""), links, joints, camera, laser, radius)
