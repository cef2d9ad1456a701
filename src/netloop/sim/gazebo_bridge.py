"""``cmd_vel`` and ``odom`` for the car in Gazebo (``nodes/gazebo_bridge.py``, started by
``sim.launch simulator:=gazebo``), so that Gazebo offers the embedded simulator's interface.

* ``cmd_vel`` (geometry_msgs/Twist) -> the ros_control command topics of
  ``controllers/config/sunfounder_car_control.yaml`` (``/sunfounder_car/<controller>/command``,
  std_msgs/Float64), mapped by :class:`netloop.sim.actuation.CarActuation`, i.e. by the real
  car driver's controller with its watchdog (``~watchdog_timeout``, checked at 20 Hz).
* ``pan_tilt`` (sensor_msgs/JointState) -> the pan/tilt position controllers.
* ``/gazebo/model_states`` -> ``odom`` (nav_msgs/Odometry odom -> base_link, twist in
  base_link) and the odom -> base_link TF, at most ``~odom_rate`` per second.
* ``/sunfounder_car/joint_states`` (joint_state_controller publishes in the controller
  manager's namespace) -> ``joint_states``, and the URDF's joint transforms on ``/tf`` (movable
  joints) and ``/tf_static`` (fixed joints, latched), as robot_state_publisher would.

So Gazebo offers the embedded simulator's topics and frames: ``odom``, ``joint_states``,
``/tf``, ``/tf_static`` from here; ``camera/image_raw``, ``camera/camera_info`` and ``scan``
from the URDF's camera and laser plugins (frames ``camera_optical_frame`` and ``laser``).
Needs gazebo_ros (ROS Noetic) for Gazebo itself; this node runs on Debian 12 too (tested
with Gazebo's topics published by the test).
"""
from __future__ import annotations

import sys

import numpy as np

from netloop.car_driver.profiles import load_profile
from netloop.schema import ConfigError

from .actuation import CarActuation
from .geometry import quat_to_matrix
from .world import UrdfInfo, WorldError, joint_transform, read_urdf

NAMESPACE = "/sunfounder_car"
CONTROLLERS = {   # JointTargets field -> controller
    "wheel_speed": ("rear_left_wheel_velocity_controller", "rear_right_wheel_velocity_controller"),
    "steer_left": ("front_left_steering_position_controller",),
    "steer_right": ("front_right_steering_position_controller",),
    "pan": ("camera_pan_position_controller",),
    "tilt": ("camera_tilt_position_controller",),
}


#: where joint_state_controller publishes: its controller manager's namespace (the URDF's
#: gazebo_ros_control <robotNamespace>) + "joint_states" (ros-controls/ros_controllers@678b92a,
#: joint_state_controller/src/joint_state_controller.cpp advertises on the root node handle)
GAZEBO_JOINT_STATES = f"{NAMESPACE}/joint_states"


def controller_commands(targets) -> dict[str, float]:
    """{controller name: command} for a JointTargets."""
    return {name: float(getattr(targets, field)) for field, names in CONTROLLERS.items() for name in names}


def joint_frames(urdf: UrdfInfo, positions: dict[str, float] | None = None, fixed: bool = False):
    """[(parent, child, xyz, quaternion xyzw)] of the URDF's fixed joints (``fixed``) or of its
    movable joints at ``positions`` (joints not given: skipped), as robot_state_publisher computes them."""
    out = []
    for j in urdf.joints:
        if (j.type == "fixed") != fixed:
            continue
        if fixed:
            out.append((j.parent, j.child, *joint_transform(j, 0.0)))
        elif positions is not None and j.name in positions:
            out.append((j.parent, j.child, *joint_transform(j, positions[j.name])))
    return out


def main(argv=None) -> int:
    import rospy  # noqa: PLC0415
    from geometry_msgs.msg import TransformStamped, Twist  # noqa: PLC0415
    from nav_msgs.msg import Odometry  # noqa: PLC0415
    from sensor_msgs.msg import JointState  # noqa: PLC0415
    from std_msgs.msg import Float64  # noqa: PLC0415
    from tf2_msgs.msg import TFMessage  # noqa: PLC0415

    rospy.init_node("gazebo_bridge", argv=argv)
    try:
        urdf = read_urdf(rospy.get_param("~urdf", "") or None)
        profile = load_profile(rospy.get_param("~car", "smart_video_car"))
        act = CarActuation(profile, urdf.wheel_radius, urdf.wheelbase, urdf.kingpin_track,
                           float(rospy.get_param("~watchdog_timeout", 0.25)), clock=rospy.get_time)
    except (ConfigError, WorldError, ValueError) as err:
        rospy.logfatal(f"gazebo_bridge: {err}")
        print(f"gazebo_bridge: {err}", file=sys.stderr, flush=True)
        return 2
    model = rospy.get_param("~model", "sunfounder_car")
    odom_period = 1.0 / float(rospy.get_param("~odom_rate", 50.0))
    pubs = {name: rospy.Publisher(f"{NAMESPACE}/{name}/command", Float64, queue_size=1)
            for names in CONTROLLERS.values() for name in names}

    def send():
        for name, value in controller_commands(act.targets()).items():
            pubs[name].publish(Float64(value))

    def on_cmd(msg):
        try:
            act.command(msg.linear.x, msg.angular.z)
        except Exception as err:  # noqa: BLE001 - the controller has stopped the motors
            rospy.logerr_throttle(1.0, f"gazebo_bridge: command refused, motors stopped: {err}")
        send()

    def on_pan_tilt(msg):
        pos = dict(zip(msg.name, msg.position))
        act.set_pan_tilt(pos.get("camera_pan_joint"), pos.get("camera_tilt_joint"))
        send()

    def on_timer(_event):
        reason = act.check_watchdog()
        if reason:
            rospy.logwarn(f"gazebo_bridge: {reason}; motors stopped")
            send()

    pub_odom = rospy.Publisher("odom", Odometry, queue_size=10)
    pub_tf = rospy.Publisher("/tf", TFMessage, queue_size=50)
    pub_tf_static = rospy.Publisher("/tf_static", TFMessage, queue_size=1, latch=True)
    pub_js = rospy.Publisher("joint_states", JointState, queue_size=10)
    last = [None]

    def transform(stamp, parent, child, xyz, rot):
        t = TransformStamped()
        t.header.stamp, t.header.frame_id, t.child_frame_id = stamp, parent, child
        t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = xyz
        t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z, t.transform.rotation.w = rot
        return t

    pub_tf_static.publish(TFMessage([transform(rospy.Time.now(), *f) for f in joint_frames(urdf, fixed=True)]))

    def on_joint_states(msg):
        pub_js.publish(msg)
        frames = joint_frames(urdf, dict(zip(msg.name, msg.position)))
        if frames:
            pub_tf.publish(TFMessage([transform(msg.header.stamp, *f) for f in frames]))

    def on_states(msg):
        try:
            i = msg.name.index(model)
        except ValueError:
            return
        now = rospy.Time.now()
        if last[0] is not None and (now - last[0]).to_sec() < odom_period:
            return
        last[0] = now
        pose, twist = msg.pose[i], msg.twist[i]
        q = pose.orientation
        rot = quat_to_matrix((q.x, q.y, q.z, q.w))
        lin = rot.T @ np.array([twist.linear.x, twist.linear.y, twist.linear.z])
        ang = rot.T @ np.array([twist.angular.x, twist.angular.y, twist.angular.z])
        o = Odometry()
        o.header.stamp, o.header.frame_id, o.child_frame_id = now, "odom", urdf.root_link
        o.pose.pose = pose
        o.twist.twist.linear.x, o.twist.twist.linear.y, o.twist.twist.linear.z = (float(v) for v in lin)
        o.twist.twist.angular.x, o.twist.twist.angular.y, o.twist.twist.angular.z = (float(v) for v in ang)
        pub_odom.publish(o)
        pub_tf.publish(TFMessage([transform(now, "odom", urdf.root_link, (pose.position.x, pose.position.y,
                                                                          pose.position.z), (q.x, q.y, q.z, q.w))]))

    rospy.Subscriber("cmd_vel", Twist, on_cmd, queue_size=1, tcp_nodelay=True)
    rospy.Subscriber("pan_tilt", JointState, on_pan_tilt, queue_size=1)
    rospy.Subscriber(GAZEBO_JOINT_STATES, JointState, on_joint_states, queue_size=10)
    try:
        from gazebo_msgs.msg import ModelStates  # noqa: PLC0415
        rospy.Subscriber("/gazebo/model_states", ModelStates, on_states, queue_size=1)
    except ImportError:
        rospy.logerr("gazebo_bridge: gazebo_msgs is not installed: no odom")
    rospy.Timer(rospy.Duration(0.05), on_timer)
    rospy.spin()
    act.shutdown()
    return 0
