"""The simulator core: pybullet physics, the car's actuation and its sensors. No ROS here.

Car
  The URDF (``models/sunfounder_car/urdf/sunfounder_car.urdf``) in an SDF world, headless
  (pybullet DIRECT). Commands go through the real driver's :class:`CarController` on its
  register-level fake hardware, so ``cmd_vel`` maps to speed and steering *exactly* as on the
  car (clamping, ``atan(L w / v)`` with ``v_min_steer``, the 0.25 s watchdog that stops the
  motors and leaves the steering): the simulated rear wheels turn at
  ``duty * speed_at_full_duty / wheel_radius`` (velocity motors limited to the URDF's effort),
  the two steering knuckles take ``ackermann_wheel_angles(delta, wheelbase, kingpin track)``
  and the pan/tilt joints the driver's servo angles. The watchdog runs on simulated time.

Frames
  ``base_pose()`` is base_link in the world frame, which the simulator also uses as ``odom``
  (like Gazebo's ground-truth odometry): REP-103, x forward, z up. pybullet's base pose is
  the centre of mass; it is converted here.

Sensors (parameters from the URDF's ``<gazebo>`` sensors unless overridden)
  camera: rendered from ``camera_link`` (x forward) with the CPU TinyRenderer (EGL
  crashes on SDF planes), RGB uint8 (height, width, 3); ``hfov`` horizontal field of view.
  LIDAR: ``samples`` horizontal rays in the ``laser`` frame from ``min_angle`` in steps of
  ``(max_angle - min_angle) / (samples - 1)``; each ray is cast from ``range_min`` to
  ``range_max`` (``rayTestBatch``), so the range is exact geometry; no return = +inf
  (REP-117). The car's own links are excluded from the rays.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from netloop.car_driver.profiles import load_profile
from netloop.schema import ConfigError

from .actuation import CarActuation, JointTargets
from .geometry import quat_from_rpy, quat_to_matrix
from .config import load_sim_config
from .world import WorldError, prepare_world, read_urdf

CAR_GROUP = 0x4
RAY_MASK = 0x7FFFFFFF & ~CAR_GROUP


class SimError(RuntimeError):
    pass


class Simulation:
    """One simulated car in one world. Not thread-safe except :meth:`command` and
    :meth:`set_pan_tilt`, which may be called from other threads (they only change the
    controller's state; the physics thread applies it at the next step)."""

    def __init__(self, config: dict | None = None, on_watchdog: Callable[[str], None] | None = None):
        import pybullet as p  # noqa: PLC0415
        self.p = p
        cfg = load_sim_config(config)
        self.config = cfg
        # -- everything is checked before pybullet starts ------------------------------------
        self.urdf = read_urdf(cfg["urdf"])
        try:
            self.profile = load_profile(cfg["car"])
        except ConfigError as err:
            raise ConfigError("car", str(err)) from None
        self.camera_cfg = self.urdf.camera
        self.width = cfg["width"] or self.camera_cfg.width
        self.height = cfg["height"] or self.camera_cfg.height
        self.camera_rate = cfg["camera_rate"] or self.camera_cfg.rate
        self.laser_cfg = self.urdf.laser
        self.scan_rate = cfg["scan_rate"] or self.laser_cfg.rate
        self.world = prepare_world(cfg["world"])
        self.dt = 1.0 / cfg["physics_rate"]
        self.time = 0.0
        self.steps = 0
        self.on_watchdog = on_watchdog
        self.watchdog_events: list[tuple[float, str]] = []
        self._watchdog_every = max(1, int(round(0.01 / self.dt)))   # check every 10 ms
        self.cid = -1
        try:
            self._load()
        except BaseException:
            self.close()
            raise
        finally:
            self.world.cleanup()
        # -- the car driver's controller on fake hardware, on simulated time -----------------
        self.actuation = CarActuation(self.profile, self.urdf.wheel_radius, self.urdf.wheelbase,
                                      self.urdf.kingpin_track, cfg["watchdog_timeout"], clock=lambda: self.time)
        self.controller = self.actuation.controller
        self._applied: JointTargets | None = None
        self._apply_actuators()

    # -- set-up ---------------------------------------------------------------------------
    def _load(self) -> None:
        p = self.p
        self.cid = p.connect(p.DIRECT)
        if self.cid < 0:
            raise SimError("pybullet: cannot start a physics server (DIRECT)")
        c = self.cid
        p.resetSimulation(physicsClientId=c)
        p.setGravity(0, 0, -9.81, physicsClientId=c)
        p.setTimeStep(self.dt, physicsClientId=c)
        try:
            self.world_bodies = list(p.loadSDF(str(self.world.load_path), physicsClientId=c))
        except p.error as err:
            raise WorldError(f"world file '{self.world.source}': pybullet cannot load it ({err})") from None
        if not self.world_bodies:
            raise WorldError(f"world file '{self.world.source}': pybullet loaded no bodies from it")
        self.world_warnings = []
        if len(self.world_bodies) != len(self.world.models):
            self.world_warnings.append(f"world '{self.world.name}': {len(self.world.models)} models in the "
                                       f"file but pybullet loaded {len(self.world_bodies)} bodies")
        cfg = self.config
        start_z = self.urdf.wheel_radius + 0.001
        try:
            self.car = p.loadURDF(str(self.urdf.path), [cfg["x"], cfg["y"], start_z],
                                  quat_from_rpy(0, 0, cfg["yaw"]), flags=p.URDF_USE_INERTIA_FROM_FILE,
                                  physicsClientId=c)
        except p.error as err:
            raise WorldError(f"URDF '{self.urdf.path}': pybullet cannot load it ({err})") from None
        self.joint_index: dict[str, int] = {}
        self.link_index: dict[str, int] = {self.urdf.root_link: -1}
        self.movable: list[int] = []
        self.joint_limits: dict[int, tuple[float, float]] = {}
        for j in range(p.getNumJoints(self.car, physicsClientId=c)):
            info = p.getJointInfo(self.car, j, physicsClientId=c)
            self.joint_index[info[1].decode()] = j
            self.link_index[info[12].decode()] = j
            if info[2] != p.JOINT_FIXED:
                self.movable.append(j)
                self.joint_limits[j] = (info[10], info[11])          # max force, max velocity
        self.movable_names = [n for n, j in sorted(self.joint_index.items(), key=lambda kv: kv[1])
                              if j in self.movable]
        ji = self.joint_index
        self.rear = [ji["rear_left_wheel_joint"], ji["rear_right_wheel_joint"]]
        self.steer_joints = [ji["front_left_steering_joint"], ji["front_right_steering_joint"]]
        self.pan_tilt_joints = [ji.get("camera_pan_joint"), ji.get("camera_tilt_joint")]
        driven = set(self.rear + self.steer_joints + [j for j in self.pan_tilt_joints if j is not None])
        for j in self.movable:   # free joints (front wheels): no default velocity motor
            if j not in driven:
                p.setJointMotorControl2(self.car, j, p.VELOCITY_CONTROL, force=0, physicsClientId=c)
        for j in self.rear + [ji[n] for n in ("front_left_wheel_joint", "front_right_wheel_joint") if n in ji]:
            p.changeDynamics(self.car, j, lateralFriction=1.0, physicsClientId=c)   # Gazebo mu1 = mu2 = 1
        # The car gets a collision group of its own (bit 2; Bullet puts static bodies in bit 1,
        # other dynamic ones in bit 0) and the rays test every group but it, so the LIDAR never
        # sees the car itself.
        for link in [-1] + list(range(p.getNumJoints(self.car, physicsClientId=c))):
            p.setCollisionFilterGroupMask(self.car, link, CAR_GROUP, 0x7FFFFFFF, physicsClientId=c)
        dyn = p.getDynamicsInfo(self.car, -1, physicsClientId=c)
        self._com_to_base = p.invertTransform(dyn[3], dyn[4])
        # sensors
        self.camera_link = self.link_index[self.camera_cfg.link]
        self.laser_link = self.link_index[self.laser_cfg.link]
        vfov = 2 * math.degrees(math.atan(math.tan(self.camera_cfg.hfov / 2) * self.height / self.width))
        self._projection = p.computeProjectionMatrixFOV(vfov, self.width / self.height, self.camera_cfg.near,
                                                        self.camera_cfg.far, physicsClientId=c)
        n = self.laser_cfg.samples
        self.scan_increment = (self.laser_cfg.max_angle - self.laser_cfg.min_angle) / max(1, n - 1)
        angles = self.laser_cfg.min_angle + self.scan_increment * np.arange(n)
        self._ray_dirs = np.stack([np.cos(angles), np.sin(angles), np.zeros(n)])   # laser frame, 3 x n
        p.performCollisionDetection(physicsClientId=c)   # the broadphase learns the static poses

    def close(self) -> None:
        if self.cid >= 0:
            try:
                self.p.disconnect(physicsClientId=self.cid)
            except self.p.error:
                pass
            self.cid = -1

    def __enter__(self) -> "Simulation":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- commands (any thread) ------------------------------------------------------------
    def command(self, v: float, omega: float):
        """A ``cmd_vel`` (linear.x m/s, angular.z rad/s), mapped by the car driver's controller.
        Returns its Actuation; a non-finite command stops the motors and raises ValueError."""
        return self.actuation.command(v, omega, now=self.time)

    def set_pan_tilt(self, pan: float | None = None, tilt: float | None = None) -> None:
        self.actuation.set_pan_tilt(pan, tilt)

    # -- physics --------------------------------------------------------------------------
    def _apply_actuators(self) -> None:
        want = self.actuation.targets()
        if want == self._applied:
            return
        p, c, car = self.p, self.cid, self.car
        for j in self.rear:
            force, vmax = self.joint_limits[j]
            target = max(-vmax, min(vmax, want.wheel_speed)) if vmax > 0 else want.wheel_speed
            p.setJointMotorControl2(car, j, p.VELOCITY_CONTROL, targetVelocity=target, force=force,
                                    physicsClientId=c)
        angles = (want.steer_left, want.steer_right, want.pan, want.tilt)
        for j, angle in zip(self.steer_joints + self.pan_tilt_joints, angles):
            if j is None:
                continue
            force, vmax = self.joint_limits[j]
            p.setJointMotorControl2(car, j, p.POSITION_CONTROL, targetPosition=angle, force=force,
                                    maxVelocity=vmax, physicsClientId=c)
        self._applied = want

    def step(self, n: int = 1) -> None:
        """Advance the physics by ``n`` steps of ``dt``, applying commands and the watchdog."""
        p, c = self.p, self.cid
        for _ in range(n):
            if self.steps % self._watchdog_every == 0:
                reason = self.actuation.check_watchdog(now=self.time)
                if reason is not None:
                    self.watchdog_events.append((self.time, reason))
                    if self.on_watchdog is not None:
                        self.on_watchdog(reason)
            self._apply_actuators()
            p.stepSimulation(physicsClientId=c)
            self.steps += 1
            self.time = self.steps * self.dt

    def reset_pose(self, x: float, y: float, yaw: float) -> None:
        """Put base_link at (x, y) on the ground with heading ``yaw``, at rest."""
        p, c = self.p, self.cid
        z = self.urdf.wheel_radius + 0.001
        pos, orn = p.multiplyTransforms([x, y, z], quat_from_rpy(0, 0, yaw), *p.invertTransform(*self._com_to_base))
        p.resetBasePositionAndOrientation(self.car, pos, orn, physicsClientId=c)
        p.resetBaseVelocity(self.car, [0, 0, 0], [0, 0, 0], physicsClientId=c)
        for j in self.movable:
            p.resetJointState(self.car, j, 0.0, 0.0, physicsClientId=c)
        p.performCollisionDetection(physicsClientId=c)

    # -- state ----------------------------------------------------------------------------
    def base_pose(self) -> tuple[tuple[float, float, float], tuple[float, float, float, float]]:
        """base_link's position and orientation (x, y, z, w) in the world/odom frame."""
        p, c = self.p, self.cid
        pos, orn = p.getBasePositionAndOrientation(self.car, physicsClientId=c)
        return p.multiplyTransforms(pos, orn, *self._com_to_base)

    def base_twist(self) -> tuple[np.ndarray, np.ndarray]:
        """base_link's linear and angular velocity expressed in base_link (nav_msgs/Odometry's
        child frame convention)."""
        p, c = self.p, self.cid
        com, _ = p.getBasePositionAndOrientation(self.car, physicsClientId=c)
        lin, ang = p.getBaseVelocity(self.car, physicsClientId=c)
        pos, orn = self.base_pose()
        ang = np.asarray(ang)
        v = np.asarray(lin) + np.cross(ang, np.asarray(pos) - np.asarray(com))
        rot = quat_to_matrix(orn)
        return rot.T @ v, rot.T @ ang

    def joint_states(self) -> tuple[list[str], list[float], list[float], list[float]]:
        """(names, positions, velocities, efforts) of every movable joint."""
        states = self.p.getJointStates(self.car, self.movable, physicsClientId=self.cid)
        return (self.movable_names, [s[0] for s in states], [s[1] for s in states], [s[3] for s in states])

    def link_pose(self, link: int):
        st = self.p.getLinkState(self.car, link, computeForwardKinematics=True, physicsClientId=self.cid)
        return st[4], st[5]

    # -- sensors --------------------------------------------------------------------------
    def render_camera(self) -> np.ndarray:
        """The camera image now: uint8 RGB array (height, width, 3)."""
        p = self.p
        pos, orn = self.link_pose(self.camera_link)
        rot = quat_to_matrix(orn)
        eye = np.asarray(pos)
        view = p.computeViewMatrix(eye.tolist(), (eye + rot[:, 0]).tolist(), rot[:, 2].tolist(),
                                   physicsClientId=self.cid)
        out = p.getCameraImage(self.width, self.height, view, self._projection, shadow=0,
                               renderer=p.ER_TINY_RENDERER, flags=p.ER_NO_SEGMENTATION_MASK,
                               physicsClientId=self.cid)
        rgba = np.asarray(out[2], dtype=np.uint8).reshape(self.height, self.width, 4)
        return np.ascontiguousarray(rgba[:, :, :3])

    def scan(self) -> np.ndarray:
        """LIDAR ranges now (float32, ``samples`` values, +inf = no return)."""
        pos, orn = self.link_pose(self.laser_link)
        dirs = quat_to_matrix(orn) @ self._ray_dirs
        origin = np.asarray(pos)[:, None]
        lo, hi = self.laser_cfg.range_min, self.laser_cfg.range_max
        starts = (origin + dirs * lo).T.tolist()
        ends = (origin + dirs * hi).T.tolist()
        hits = self.p.rayTestBatch(starts, ends, collisionFilterMask=RAY_MASK, physicsClientId=self.cid)
        ranges = np.full(len(hits), np.inf, dtype=np.float32)
        for i, h in enumerate(hits):
            if h[0] >= 0:
                ranges[i] = lo + h[2] * (hi - lo)
        return ranges

    def camera_info_matrix(self) -> tuple[float, float, float, float]:
        """(fx, fy, cx, cy) of the ideal pinhole camera the renderer implements."""
        fx = self.width / 2 / math.tan(self.camera_cfg.hfov / 2)
        return fx, fx, (self.width - 1) / 2, (self.height - 1) / 2


# -- real-time pacing ---------------------------------------------------------------------------
@dataclass
class Task:
    """A periodic job on simulated time (sensor, odometry, /clock ...)."""
    name: str
    rate: float
    fn: Callable[[], None]
    next_due: float = 0.0
    costs: list = field(default_factory=list)      # seconds of wall time per call (last 200)
    runs: int = 0

    def median_ms(self) -> float | None:
        return 1e3 * statistics.median(self.costs) if self.costs else None


class RealTimeLoop:
    """Steps a Simulation so that simulated time follows the wall clock (real-time factor 1)
    and runs tasks when their simulated time is due.

    A task that takes longer than a physics step (a camera frame: ~10-25 ms) puts the loop
    behind; it then steps without sleeping until it has caught up. If it falls more than
    ``max_lag`` behind, the missing time is given up (the real-time factor drops below 1)
    instead of running ever faster. ``on_rtf(rtf)`` is called once per ``rtf_window`` wall
    seconds with simulated seconds / wall seconds over that window."""

    def __init__(self, sim: Simulation, tasks: list[Task] | None = None, *, realtime: bool = True,
                 max_lag: float = 0.1, rtf_window: float = 1.0, on_rtf: Callable[[float], None] | None = None,
                 should_stop: Callable[[], bool] | None = None):
        self.sim, self.tasks = sim, list(tasks or [])
        self.realtime, self.max_lag, self.rtf_window = realtime, max_lag, rtf_window
        self.on_rtf, self.should_stop = on_rtf, should_stop or (lambda: False)
        self.rtf: float | None = None
        self.rtf_history: list[float] = []
        self.dropped = 0.0          # simulated seconds given up because the loop fell behind
        self.step_cost = 0.0        # wall seconds spent in physics steps
        for t in self.tasks:
            t.next_due = sim.time

    def add(self, name: str, rate: float, fn: Callable[[], None]) -> Task:
        task = Task(name, rate, fn, self.sim.time)
        self.tasks.append(task)
        return task

    def _run_due(self) -> None:
        now = self.sim.time + 1e-9
        for t in self.tasks:
            if now >= t.next_due:
                t0 = time.perf_counter()
                t.fn()
                t.costs.append(time.perf_counter() - t0)
                if len(t.costs) > 200:
                    del t.costs[:100]
                t.runs += 1
                period = 1.0 / t.rate
                t.next_due += period
                if t.next_due <= now:                 # missed whole periods: skip them
                    t.next_due = now + period - ((now - t.next_due) % period)

    def run(self, duration: float | None = None) -> None:
        """Run until ``should_stop()`` or ``duration`` simulated seconds have passed."""
        sim = self.sim
        end = None if duration is None else sim.time + duration
        wall0, sim0 = time.monotonic(), sim.time
        mark_wall, mark_sim = wall0, sim0
        while not self.should_stop() and (end is None or sim.time < end - 1e-9):
            now = time.monotonic()
            if now - mark_wall >= self.rtf_window:
                self.rtf = (sim.time - mark_sim) / (now - mark_wall)
                self.rtf_history.append(self.rtf)
                mark_wall, mark_sim = now, sim.time
                if self.on_rtf is not None:
                    self.on_rtf(self.rtf)
            if self.realtime:
                target = sim0 + (now - wall0)
                behind = target - sim.time
                if behind > self.max_lag:               # give up the excess
                    self.dropped += behind - self.max_lag
                    sim0 -= behind - self.max_lag
                    behind = self.max_lag
                if behind < sim.dt:
                    time.sleep(max(0.0, sim.dt - behind))
                    continue
            t0 = time.perf_counter()
            sim.step()
            self.step_cost += time.perf_counter() - t0
            self._run_due()
