#!/usr/bin/env python3
"""ROS node driving the SunFounder Smart Video Car: ``cmd_vel`` in, JPEG camera out.

Subscribes
  ``cmd_vel`` (geometry_msgs/Twist): linear.x (m/s) and angular.z (rad/s), see
  :mod:`netloop.car_driver.controller` for the mapping, limits and watchdog.
  ``pan_tilt`` (sensor_msgs/JointState): positions of ``camera_pan_joint`` /
  ``camera_tilt_joint`` (rad, REP-103: pan + left, tilt + down).
Publishes
  ``camera/image/compressed`` (sensor_msgs/CompressedImage, format "jpeg", frame
  ``camera_optical_frame``) at ``~camera_rate``.
  ``odom`` (nav_msgs/Odometry, ``odom`` -> ``base_link``) at ``~odom_rate`` (50 Hz; 0: off):
  dead reckoning of the applied command (:mod:`netloop.car_driver.odometry`; the kit has no
  wheel encoders), so that a teleoperation loop can be closed over the network on the car.
Parameters (defaults from the car profile where it has them)
  ``~car`` (smart_video_car), ``~profile_file`` (a YAML path, overrides ~car),
  ``~hardware`` (real | fake), ``~gpio_backend`` (auto | lgpio | gpiozero),
  ``~watchdog_timeout`` (0.25 s), ``~steering_offset``, ``~camera`` (true),
  ``~camera_device``, ``~camera_width``, ``~camera_height``, ``~camera_rate``,
  ``~jpeg_quality``, ``~odom_rate`` (50 Hz), ``~fake_state_file`` (fake hardware only: JSON dump of the fake registers
  and pins after every change, for tests and for watching the node without a car),
  ``~fake_device_dir`` (fake hardware only: the fake board's folder, its registers and pins in
  files; default a private one), ``~failsafe_record`` (where the fail-safe stop writes what it
  did, JSON; default nowhere).

The motors stop when commands stop arriving (watchdog), on any error in the command path and
on shutdown (SIGINT/SIGTERM, rosnode kill, roslaunch stop); and whatever ends the node (SIGKILL,
a crash in C code, the OOM killer), its fail-safe stop, a process of its own started before the
node drives (:mod:`netloop.car_driver.failsafe`), turns every PWM output off and sets the motor
pins to their stop levels. The node holds the board's lock (:mod:`netloop.car_driver.board`):
a second driver of the same board is refused naming the first.
"""
from __future__ import annotations

import atexit
import math
import os
import sys
import tempfile
import threading
import time

from netloop.car_driver import failsafe
from netloop.car_driver.board import BoardLock, describe, fake_device_file, fake_levels_file, lock_path
from netloop.car_driver.controller import CarController, pan_tilt_from_joint_state
from netloop.car_driver.fakes import FakeCamera, FakeGPIO, FakePCA9685Bus
from netloop.car_driver.odometry import DeadReckoning
from netloop.car_driver.hardware import (HardwareError, OpenCVCamera, SMBusI2C,
                                         encode_jpeg, open_gpio)
from netloop.car_driver.profiles import load_profile
from netloop.jsonio import write_json_atomic
from netloop.schema_nodes import ConfigError, Enum

HARDWARE_KINDS = ("real", "fake")


class Hardware:
    """The bus, the pins and a way to open the camera, real or fake, with the board's lock
    taken first (:class:`~netloop.car_driver.board.BoardLock`). A fake board lives in
    ``fake_dir`` (its register and pin files, which the fail-safe stop opens too); without one
    the driver makes a private folder for it."""

    def __init__(self, kind: str, profile: dict, gpio_backend: str = "auto", fake_dir: str = ""):
        Enum(HARDWARE_KINDS, what="hardware").check(kind, "~hardware")
        self.kind = kind
        pwm = profile["pwm"]
        self.private_fake_dir = kind == "fake" and not fake_dir
        if kind == "fake":
            fake_dir = fake_dir or tempfile.mkdtemp(prefix="netloop-fake-car-")
            os.makedirs(fake_dir, exist_ok=True)
        self.fake_dir = fake_dir if kind == "fake" else None
        self.lock = BoardLock(lock_path(pwm, self.fake_dir), describe(pwm, self.fake_dir)).acquire()
        try:
            if kind == "fake":
                self.bus = FakePCA9685Bus(pwm["address"], device_file=fake_device_file(fake_dir))
                self.gpio = FakeGPIO(levels_file=fake_levels_file(fake_dir))
            else:
                self.bus = SMBusI2C(pwm["bus"])
                try:
                    self.gpio = open_gpio(gpio_backend)
                except Exception:
                    self.bus.close()
                    raise
        except Exception:
            self.lock.release()
            raise
        self.camera = None

    def open_camera(self, device: int, width: int, height: int, rate: float):
        if self.kind == "fake":
            self.camera = FakeCamera(width, height)
        else:
            self.camera = OpenCVCamera(device, width, height, rate)
        return self.camera

    def snapshot(self) -> dict:
        if self.kind != "fake":
            return {}
        return {"pca9685": self.bus.snapshot(), "gpio": self.gpio.snapshot(),
                "camera_frames": self.camera.frames if self.camera is not None else 0}


def publish_odometry(rospy, controller: CarController, wheelbase: float, rate: float,
                     stop_event: threading.Event) -> None:
    """A thread publishing ``odom`` at ``rate``: the applied command, dead-reckoned."""
    from nav_msgs.msg import Odometry  # noqa: PLC0415

    pub = rospy.Publisher("odom", Odometry, queue_size=10, tcp_nodelay=True)
    odom = DeadReckoning(wheelbase)
    unknown = 1e3   # variance of what the car cannot measure (it has no sensor of its own motion)

    def loop():
        last = time.monotonic()
        while not stop_event.wait(1.0 / rate) and not rospy.is_shutdown():
            now = time.monotonic()
            applied = controller.last
            speed = applied.speed if (applied is not None and controller.running) else 0.0
            odom.step(speed, applied.steer if applied is not None else 0.0, now - last)
            last = now
            msg = Odometry()
            msg.header.stamp = rospy.Time.now()
            msg.header.frame_id, msg.child_frame_id = "odom", "base_link"
            msg.pose.pose.position.x, msg.pose.pose.position.y = odom.x, odom.y
            msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = math.sin(odom.yaw / 2), math.cos(odom.yaw / 2)
            msg.twist.twist.linear.x, msg.twist.twist.angular.z = odom.v, odom.omega
            msg.pose.covariance = [unknown if i in (0, 7, 35) else 0.0 for i in range(36)]
            msg.twist.covariance = [unknown if i in (0, 35) else 0.0 for i in range(36)]
            pub.publish(msg)

    threading.Thread(target=loop, name="car_odometry", daemon=True).start()


def main(argv=None) -> int:
    import rospy  # noqa: PLC0415 - ROS only where the node runs
    from geometry_msgs.msg import Twist  # noqa: PLC0415
    from sensor_msgs.msg import CompressedImage, JointState  # noqa: PLC0415

    rospy.init_node("car_driver", argv=argv)
    car = rospy.get_param("~profile_file", "") or rospy.get_param("~car", "smart_video_car")
    kind = rospy.get_param("~hardware", "real")
    backend = rospy.get_param("~gpio_backend", "auto")
    try:
        profile = load_profile(car)
        hw = Hardware(kind, profile, backend, rospy.get_param("~fake_device_dir", "") if kind == "fake" else "")
        failsafe.start(car, kind, backend, hw.fake_dir, rospy.get_param("~failsafe_record", "") or None,
                       hw.lock.fd, remove_fake_dir=hw.private_fake_dir)
    except (ConfigError, HardwareError) as err:
        rospy.logfatal(f"car_driver: {err}")
        return 2
    cam_cfg = profile["camera"]
    offset = rospy.get_param("~steering_offset", None)
    state_file = rospy.get_param("~fake_state_file", "") if kind == "fake" else ""
    lock = threading.Lock()

    def dump_state():
        if state_file:
            with lock:
                write_json_atomic(state_file, {"time": time.time(), "car": profile["name"],
                                               "controller": controller.status(), **hw.snapshot()},
                                  indent=None)

    controller = CarController(profile, hw.bus, hw.gpio,
                               watchdog_timeout=float(rospy.get_param("~watchdog_timeout", 0.25)),
                               steering_offset=None if offset is None else float(offset),
                               on_change=dump_state)
    stop_event = threading.Event()

    def shutdown(reason: str):
        stop_event.set()
        for err in controller.shutdown(reason):
            rospy.logerr(f"car_driver: error while stopping: {err}")

    atexit.register(shutdown, "process exit")          # last line of defence
    try:
        controller.start()
    except Exception as err:  # noqa: BLE001
        rospy.logfatal(f"car_driver: cannot initialise the car ({profile['name']}): {err}")
        shutdown("start-up failed")
        return 1
    rospy.on_shutdown(lambda: shutdown("ROS shutdown"))
    rospy.loginfo(f"car_driver: {profile['name']} on {kind} hardware, watchdog "
                  f"{controller.watchdog_timeout} s, steering offset {controller.steering.offset:g} "
                  f"{controller.steering.unit}")

    def on_cmd(msg):
        try:
            controller.command(msg.linear.x, msg.angular.z)
        except Exception as err:  # noqa: BLE001 - the controller has stopped the motors
            rospy.logerr_throttle(1.0, f"car_driver: command failed, motors stopped: {err}")

    def on_pan_tilt(msg):
        try:
            controller.set_pan_tilt(*pan_tilt_from_joint_state(msg))
        except Exception as err:  # noqa: BLE001
            rospy.logerr_throttle(1.0, f"car_driver: pan/tilt command failed: {err}")

    def watchdog_loop():
        period = min(0.05, controller.watchdog_timeout / 4)
        while not stop_event.wait(period):
            try:
                if controller.check_watchdog():
                    if controller.running:   # the stop's writes failed: it tries again next time
                        rospy.logerr_throttle(1.0, f"car_driver: {controller.stop_reason}")
                    else:
                        rospy.logwarn(f"car_driver: {controller.stop_reason}; motors stopped")
            except Exception as err:  # noqa: BLE001
                rospy.logerr_throttle(1.0, f"car_driver: watchdog error: {err}")

    threading.Thread(target=watchdog_loop, name="car_watchdog", daemon=True).start()
    odom_rate = float(rospy.get_param("~odom_rate", 50.0))
    if odom_rate > 0:
        publish_odometry(rospy, controller, profile["kinematics"]["wheelbase"], odom_rate, stop_event)
    rospy.Subscriber("cmd_vel", Twist, on_cmd, queue_size=1, tcp_nodelay=True)
    rospy.Subscriber("pan_tilt", JointState, on_pan_tilt, queue_size=1)

    try:
        if not rospy.get_param("~camera", True):
            rospy.spin()
            return 0
        width = int(rospy.get_param("~camera_width", cam_cfg["width"]))
        height = int(rospy.get_param("~camera_height", cam_cfg["height"]))
        rate = float(rospy.get_param("~camera_rate", cam_cfg["rate"]))
        quality = int(rospy.get_param("~jpeg_quality", cam_cfg["jpeg_quality"]))
        device = rospy.get_param("~camera_device", cam_cfg["device"])
        try:
            camera = hw.open_camera(device, width, height, rate)
        except HardwareError as err:
            rospy.logerr(f"car_driver: no camera ({err}); driving without it")
            rospy.spin()
            return 0
        pub = rospy.Publisher("camera/image/compressed", CompressedImage, queue_size=1)
        period = 1.0 / rate
        next_t = time.monotonic()
        while not rospy.is_shutdown():
            frame = camera.read()
            if frame is None:
                rospy.logwarn_throttle(5.0, "car_driver: camera gave no frame")
            else:
                msg = CompressedImage()
                msg.header.stamp = rospy.Time.now()
                msg.header.frame_id = "camera_optical_frame"
                msg.format = "jpeg"
                msg.data = encode_jpeg(frame, quality, (width, height))
                pub.publish(msg)
            next_t += period
            delay = next_t - time.monotonic()
            if delay > 0:
                stop_event.wait(delay)
            else:
                next_t = time.monotonic()
        camera.close()
        return 0
    finally:
        shutdown("node exit")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
