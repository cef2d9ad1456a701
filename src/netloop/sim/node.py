"""ROS node around :class:`netloop.sim.simulation.Simulation` (``nodes/sim_node.py``).

Publishes what the Gazebo plugins of the URDF would (topic names relative to the node's
namespace unless absolute):

  ``odom``                         nav_msgs/Odometry, ``odom`` -> ``base_link`` (REP-103/105; the
                                   odom frame is the world frame), twist in base_link, ~odom_rate
  ``joint_states``                 sensor_msgs/JointState, every movable joint, ~joint_state_rate
  ``/tf``                          odom -> base_link (with odom) and the movable joints' links
                                   (with joint_states), computed from the URDF like
                                   robot_state_publisher
  ``/tf_static``                   the fixed joints (camera_link, camera_optical_frame,
                                   laser_mount, laser), latched
  ``camera/image_raw``             sensor_msgs/Image rgb8, width x height, ~camera_rate, frame
                                   camera_optical_frame; rendered only while someone subscribes
  ``camera/image_raw/compressed``  sensor_msgs/CompressedImage JPEG (~jpeg_quality)
  ``camera/camera_info``           sensor_msgs/CameraInfo (ideal pinhole)
  ``scan``                         sensor_msgs/LaserScan, 360 rays from -pi, 10 Hz, frame laser
  ``/clock``                       rosgraph_msgs/Clock at ~clock_rate, only with /use_sim_time
  ``~rtf``                         std_msgs/Float64, real-time factor once per second (a warning
                                   is logged when it is below ~rtf_warn = 0.95)

Subscribes ``cmd_vel`` (geometry_msgs/Twist; mapped exactly like the car driver, watchdog
``~watchdog_timeout`` = 0.25 s) and ``pan_tilt`` (sensor_msgs/JointState, as the driver).

Stamps: with /use_sim_time they are simulated time, otherwise the wall clock when the
message is made (so delays measured against them are real). Parameters: the keys of
:data:`netloop.sim.config.SIM_SCHEMA` as private parameters (``~world``, ``~x`` ...).
A bad parameter, world or URDF ends the node before anything moves, exit status 2.
"""
from __future__ import annotations

import signal
import sys
import threading

from netloop.schema import ConfigError

from .world import WorldError, joint_transform


def main(argv=None) -> int:
    import rospy  # noqa: PLC0415
    from geometry_msgs.msg import TransformStamped, Twist  # noqa: PLC0415
    from nav_msgs.msg import Odometry  # noqa: PLC0415
    from rosgraph_msgs.msg import Clock  # noqa: PLC0415
    from sensor_msgs.msg import CameraInfo, CompressedImage, Image, JointState, LaserScan  # noqa: PLC0415
    from std_msgs.msg import Float64  # noqa: PLC0415
    from tf2_msgs.msg import TFMessage  # noqa: PLC0415

    from netloop.car_driver.controller import pan_tilt_from_joint_state  # noqa: PLC0415
    from netloop.car_driver.hardware import encode_jpeg  # noqa: PLC0415

    from .simulation import RealTimeLoop, Simulation  # noqa: PLC0415

    rospy.init_node("sim", argv=argv, disable_signals=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    params = rospy.get_param("~", {})
    use_sim_time = bool(rospy.get_param("/use_sim_time", False))
    try:
        sim = Simulation(params, on_watchdog=lambda why: rospy.logwarn(f"sim: {why}; motors stopped"))
    except (ConfigError, WorldError) as err:
        key = f"~{err.key}: " if isinstance(err, ConfigError) and err.key else ""
        msg = f"sim: refused, nothing started: {key}{err.message if isinstance(err, ConfigError) else err}"
        rospy.logfatal(msg)
        print(msg, file=sys.stderr, flush=True)
        rospy.signal_shutdown("bad configuration")
        return 2
    cfg = sim.config
    for w in sim.world_warnings:
        rospy.logwarn(f"sim: {w}")
    odom_frame = "odom"
    base_frame = sim.urdf.root_link

    def stamp():
        return rospy.Time.from_sec(sim.time) if use_sim_time else rospy.Time.now()

    # -- publishers -----------------------------------------------------------------------
    pub_odom = rospy.Publisher("odom", Odometry, queue_size=10)
    pub_js = rospy.Publisher("joint_states", JointState, queue_size=10)
    pub_tf = rospy.Publisher("/tf", TFMessage, queue_size=50)
    pub_tf_static = rospy.Publisher("/tf_static", TFMessage, queue_size=1, latch=True)
    pub_rtf = rospy.Publisher("~rtf", Float64, queue_size=1)
    pub_clock = rospy.Publisher("/clock", Clock, queue_size=10) if use_sim_time else None
    cam = sim.camera_cfg
    pub_img = pub_jpeg = pub_info = pub_scan = None
    if cfg["camera"]:
        pub_img = rospy.Publisher("camera/image_raw", Image, queue_size=2)
        pub_jpeg = rospy.Publisher("camera/image_raw/compressed", CompressedImage, queue_size=2)
        pub_info = rospy.Publisher("camera/camera_info", CameraInfo, queue_size=2)
    if cfg["scan"]:
        pub_scan = rospy.Publisher("scan", LaserScan, queue_size=5)

    joints = {j.name: j for j in sim.urdf.joints}
    fixed = [j for j in sim.urdf.joints if j.type == "fixed"]
    moving = [joints[n] for n in sim.movable_names if n in joints]

    def transform(parent, child, xyz, rot, t):
        m = TransformStamped()
        m.header.stamp = t
        m.header.frame_id = parent
        m.child_frame_id = child
        m.transform.translation.x, m.transform.translation.y, m.transform.translation.z = xyz
        (m.transform.rotation.x, m.transform.rotation.y, m.transform.rotation.z,
         m.transform.rotation.w) = rot
        return m

    t0 = stamp()
    pub_tf_static.publish(TFMessage([transform(j.parent, j.child, *joint_transform(j, 0.0), t0) for j in fixed]))

    # -- tasks ----------------------------------------------------------------------------
    def publish_odom():
        t = stamp()
        pos, orn = sim.base_pose()
        lin, ang = sim.base_twist()
        m = Odometry()
        m.header.stamp = t
        m.header.frame_id = odom_frame
        m.child_frame_id = base_frame
        pp, po = m.pose.pose.position, m.pose.pose.orientation
        pp.x, pp.y, pp.z = pos
        po.x, po.y, po.z, po.w = orn
        tl, ta = m.twist.twist.linear, m.twist.twist.angular
        tl.x, tl.y, tl.z = (float(v) for v in lin)
        ta.x, ta.y, ta.z = (float(v) for v in ang)
        pub_odom.publish(m)
        pub_tf.publish(TFMessage([transform(odom_frame, base_frame, pos, orn, t)]))

    def publish_joints():
        t = stamp()
        names, pos, vel, eff = sim.joint_states()
        m = JointState()
        m.header.stamp = t
        m.name, m.position, m.velocity, m.effort = list(names), pos, vel, eff
        pub_js.publish(m)
        q = dict(zip(names, pos))
        pub_tf.publish(TFMessage([transform(j.parent, j.child, *joint_transform(j, q[j.name]), t) for j in moving]))

    fx, fy, cx, cy = sim.camera_info_matrix()

    def publish_camera():
        want_raw = pub_img.get_num_connections() > 0
        want_jpeg = pub_jpeg.get_num_connections() > 0
        if not (want_raw or want_jpeg or pub_info.get_num_connections() > 0):
            return
        rgb = sim.render_camera()
        t = stamp()
        if want_raw:
            m = Image()
            m.header.stamp, m.header.frame_id = t, cam.frame
            m.height, m.width, m.encoding, m.is_bigendian = sim.height, sim.width, "rgb8", 0
            m.step = sim.width * 3
            m.data = rgb.tobytes()
            pub_img.publish(m)
        if want_jpeg:
            c = CompressedImage()
            c.header.stamp, c.header.frame_id = t, cam.frame
            c.format = "jpeg"
            c.data = encode_jpeg(rgb[:, :, ::-1], cfg["jpeg_quality"])
            pub_jpeg.publish(c)
        info = CameraInfo()
        info.header.stamp, info.header.frame_id = t, cam.frame
        info.height, info.width = sim.height, sim.width
        info.distortion_model = "plumb_bob"
        info.D = [0.0] * 5
        info.K = [fx, 0, cx, 0, fy, cy, 0, 0, 1]
        info.R = [1, 0, 0, 0, 1, 0, 0, 0, 1]
        info.P = [fx, 0, cx, 0, 0, fy, cy, 0, 0, 0, 1, 0]
        pub_info.publish(info)

    laser = sim.laser_cfg
    scan_time = 1.0 / sim.scan_rate

    def publish_scan():
        ranges = sim.scan()
        m = LaserScan()
        m.header.stamp, m.header.frame_id = stamp(), laser.frame
        m.angle_min, m.angle_max = laser.min_angle, laser.max_angle
        m.angle_increment = sim.scan_increment
        m.time_increment = 0.0
        m.scan_time = scan_time
        m.range_min, m.range_max = laser.range_min, laser.range_max
        m.ranges = ranges.tolist()
        if cfg["scan_intensities"]:
            m.intensities = [0.0] * len(ranges)
        pub_scan.publish(m)

    def publish_clock():
        pub_clock.publish(Clock(rospy.Time.from_sec(sim.time)))

    # warm up what the first frame and scan would otherwise pay for inside the real-time loop
    # (OpenCV's import for JPEG, the renderer's first frame): ~0.2 s
    if cfg["camera"]:
        encode_jpeg(sim.render_camera()[:, :, ::-1], cfg["jpeg_quality"])
    if cfg["scan"]:
        sim.scan()

    loop = RealTimeLoop(sim, max_lag=cfg["max_lag"], should_stop=lambda: stop.is_set() or rospy.is_shutdown())
    if pub_clock is not None:
        loop.add("clock", cfg["clock_rate"], publish_clock)
    loop.add("odom", cfg["odom_rate"], publish_odom)
    loop.add("joint_states", cfg["joint_state_rate"], publish_joints)
    if pub_scan is not None:
        loop.add("scan", sim.scan_rate, publish_scan)
    if pub_img is not None:
        loop.add("camera", sim.camera_rate, publish_camera)

    def on_rtf(rtf: float):
        pub_rtf.publish(Float64(rtf))
        if rtf < cfg["rtf_warn"]:
            costs = ", ".join(f"{t.name} {t.median_ms():.1f} ms" for t in loop.tasks if t.costs)
            rospy.logwarn(f"sim: real-time factor {rtf:.3f} < {cfg['rtf_warn']} (median cost per call: {costs})")

    loop.on_rtf = on_rtf

    # -- commands -------------------------------------------------------------------------
    def on_cmd(msg):
        try:
            sim.command(msg.linear.x, msg.angular.z)
        except Exception as err:  # noqa: BLE001 - the controller has stopped the motors
            rospy.logerr_throttle(1.0, f"sim: command refused, motors stopped: {err}")

    def on_pan_tilt(msg):
        try:
            sim.set_pan_tilt(*pan_tilt_from_joint_state(msg))
        except Exception as err:  # noqa: BLE001
            rospy.logerr_throttle(1.0, f"sim: pan/tilt command refused: {err}")

    rospy.Subscriber("cmd_vel", Twist, on_cmd, queue_size=1, tcp_nodelay=True)
    rospy.Subscriber("pan_tilt", JointState, on_pan_tilt, queue_size=1)
    rospy.loginfo(f"sim: world '{sim.world.name}' ({sim.world.source}), car at ({cfg['x']:g}, {cfg['y']:g}, "
                  f"yaw {cfg['yaw']:g}), physics {cfg['physics_rate']:g} Hz, camera "
                  f"{f'{sim.width}x{sim.height} at {sim.camera_rate:g} fps' if cfg['camera'] else 'off'}, scan "
                  f"{f'{laser.samples} rays at {sim.scan_rate:g} Hz' if cfg['scan'] else 'off'}, watchdog "
                  f"{cfg['watchdog_timeout']} s, {'sim' if use_sim_time else 'wall'}-clock stamps")
    try:
        loop.run()
    finally:
        rtfs = loop.rtf_history
        summary = (f"sim: stopped after {sim.time:.1f} s simulated; real-time factor "
                   + (f"min {min(rtfs):.3f} mean {sum(rtfs) / len(rtfs):.3f}" if rtfs else "n/a")
                   + f"; {loop.dropped:.2f} s given up")
        rospy.loginfo(summary)
        print(summary, flush=True)
        sim.close()
        rospy.signal_shutdown("done")
    return 0
