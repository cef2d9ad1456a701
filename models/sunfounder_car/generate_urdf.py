#!/usr/bin/env python3
"""Write ``urdf/sunfounder_car.urdf`` from the dimensions in this file.

The URDF is plain XML so that check_urdf, pybullet and Gazebo read it without xacro (Debian
12 has no xacro package). This script is its single source: every inertia tensor is computed
here from the box/cylinder formulas and the masses, so dimensions, masses and inertias cannot
drift apart. Edit the constants below, run ``python models/sunfounder_car/generate_urdf.py``,
and commit both files; ``test/test_car_model.py`` fails when the URDF is out of date.

Frames follow REP-103 (x forward, y left, z up, SI units). ``base_link`` sits at the middle
of the rear axle, at axle height (``WHEEL_RADIUS`` above the ground), which is the reference
point of the Ackermann (bicycle) model used by the driver. Where each number comes from is in
``README.md`` next to this file.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "urdf" / "sunfounder_car.urdf"

# ----------------------------------------------------------------------------------------
# Dimensions (metres) and masses (kilograms). Sources: README.md, table "Dimensions".
# ----------------------------------------------------------------------------------------
WHEEL_RADIUS = 0.033          # ~66 mm tyre
WHEEL_WIDTH = 0.025
WHEEL_MASS = 0.040            # tyre + hub
WHEELBASE = 0.140             # rear axle to front axle
TRACK = 0.134                 # wheel centre to wheel centre (front and rear)
KINGPIN_Y = 0.052             # steering pivot distance from the centre line
STEER_LIMIT = 0.6             # rad, mechanical knuckle travel each way
KNUCKLE_SIZE = (0.020, 0.010, 0.030)
KNUCKLE_MASS = 0.010

# Chassis: the stacked acrylic plates with everything fixed to them (battery holder with
# two 18650 cells, Raspberry Pi, PCA9685 and L298N boards, the two rear gear motors, the
# steering servo, standoffs) lumped into one box for the inertia.
CHASSIS_SIZE = (0.220, 0.090, 0.050)
CHASSIS_CENTER = (0.070, 0.0, 0.012)   # centred between the axles; 20 mm ground clearance
CHASSIS_MASS = 0.700
# Collision uses a narrower nose so that the steered front wheels do not intersect it.
NOSE_START_X = 0.105
NOSE_WIDTH = 0.050

# Pan/tilt camera head at the front of the top plate.
PAN_XYZ = (0.160, 0.0, 0.065)          # pan axis foot, relative to base_link
PAN_SIZE = (0.030, 0.030, 0.030)       # pan servo + bracket
PAN_MASS = 0.025
PAN_LIMITS = (-math.pi / 2, math.pi / 2)
TILT_Z = 0.030                         # tilt axis above the pan axis foot
TILT_SIZE = (0.020, 0.040, 0.020)      # tilt servo + bracket
TILT_MASS = 0.015
TILT_LIMITS = (-0.785, 1.2)            # + is nose down (rotation about +y)
CAMERA_XYZ = (0.015, 0.0, 0.012)       # camera board relative to the tilt axis
CAMERA_SIZE = (0.015, 0.035, 0.035)
CAMERA_MASS = 0.020
CAMERA_HFOV = 1.085                    # rad (~62 deg, a typical small UVC module)
CAMERA_WIDTH, CAMERA_HEIGHT = 320, 240  # pixels

# 2D LIDAR on a post behind the camera head (an add-on: the kit has no LIDAR).
LASER_XY = (0.020, 0.0)
LASER_Z = 0.162                        # scan plane above base_link (0.195 m above ground)
LASER_RADIUS = 0.035
LASER_HEIGHT = 0.040
LASER_BODY_DZ = -0.015                 # body centre relative to the scan plane
LASER_MASS = 0.170
POST_RADIUS = 0.008
POST_MASS = 0.015

TINY_MASS = 0.001                      # for pure frames (pybullet would default to 1 kg)

MOTOR_EFFORT = 0.10                    # N m at the wheel (small gear motor stall torque)
MOTOR_VELOCITY = 20.0                  # rad/s at the wheel (~190 rpm)
SERVO_EFFORT = 0.20                    # N m (small hobby servo)
SERVO_VELOCITY = 6.0                   # rad/s (~0.17 s per 60 deg)


# ----------------------------------------------------------------------------------------
# Inertia formulas
# ----------------------------------------------------------------------------------------
def box_inertia(mass: float, size: tuple[float, float, float]) -> tuple[float, float, float]:
    """Principal moments (Ixx, Iyy, Izz) of a solid box about its centre."""
    x, y, z = size
    return (mass * (y * y + z * z) / 12.0, mass * (x * x + z * z) / 12.0,
            mass * (x * x + y * y) / 12.0)


def cylinder_inertia(mass: float, radius: float, length: float, axis: str) -> tuple[float, float, float]:
    """Principal moments of a solid cylinder about its centre, its axis along ``axis``."""
    along = mass * radius * radius / 2.0
    across = mass * (3.0 * radius * radius + length * length) / 12.0
    return tuple(along if a == axis else across for a in "xyz")  # type: ignore[return-value]


# ----------------------------------------------------------------------------------------
# XML helpers
# ----------------------------------------------------------------------------------------
def f(v: float) -> str:
    """A number for the XML: short, exact enough, never in a locale-dependent form."""
    if v == 0:
        return "0"
    if abs(v) < 1e-3:
        return f"{v:.4e}"
    return f"{v:.6f}".rstrip("0").rstrip(".")


def vec(*vals: float) -> str:
    return " ".join(f(v) for v in vals)


def inertial(mass: float, moments, xyz=(0.0, 0.0, 0.0)) -> str:
    ixx, iyy, izz = moments
    return (f'    <inertial>\n      <origin xyz="{vec(*xyz)}" rpy="0 0 0"/>\n'
            f'      <mass value="{f(mass)}"/>\n'
            f'      <inertia ixx="{f(ixx)}" ixy="0" ixz="0" iyy="{f(iyy)}" iyz="0" izz="{f(izz)}"/>\n'
            f'    </inertial>\n')


def geometry_box(size) -> str:
    return f'<box size="{vec(*size)}"/>'


def geometry_cylinder(radius: float, length: float) -> str:
    return f'<cylinder radius="{f(radius)}" length="{f(length)}"/>'


def shape(kind: str, geometry: str, xyz=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0),
          material: str | None = None, name: str | None = None) -> str:
    name_attr = f' name="{name}"' if name else ""
    mat = f'      <material name="{material}"/>\n' if material else ""
    return (f'    <{kind}{name_attr}>\n      <origin xyz="{vec(*xyz)}" rpy="{vec(*rpy)}"/>\n'
            f'      <geometry>{geometry}</geometry>\n{mat}    </{kind}>\n')


def link(name: str, body: str = "") -> str:
    return f'  <link name="{name}">\n{body}  </link>\n'


def joint(name: str, kind: str, parent: str, child: str, xyz=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0),
          axis=None, limit=None, dynamics=None) -> str:
    out = [f'  <joint name="{name}" type="{kind}">',
           f'    <parent link="{parent}"/>', f'    <child link="{child}"/>',
           f'    <origin xyz="{vec(*xyz)}" rpy="{vec(*rpy)}"/>']
    if axis:
        out.append(f'    <axis xyz="{vec(*axis)}"/>')
    if limit:
        attrs = " ".join(f'{k}="{f(v)}"' for k, v in limit.items())
        out.append(f"    <limit {attrs}/>")
    if dynamics:
        attrs = " ".join(f'{k}="{f(v)}"' for k, v in dynamics.items())
        out.append(f"    <dynamics {attrs}/>")
    out.append("  </joint>")
    return "\n".join(out) + "\n"


def transmission(joint_name: str, interface: str) -> str:
    hw = f"hardware_interface/{interface}"
    return (f'  <transmission name="{joint_name}_transmission">\n'
            f'    <type>transmission_interface/SimpleTransmission</type>\n'
            f'    <joint name="{joint_name}">\n      <hardwareInterface>{hw}</hardwareInterface>\n'
            f'    </joint>\n    <actuator name="{joint_name}_actuator">\n'
            f'      <hardwareInterface>{hw}</hardwareInterface>\n'
            f'      <mechanicalReduction>1</mechanicalReduction>\n    </actuator>\n'
            f'  </transmission>\n')


# ----------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------
def build() -> str:
    parts: list[str] = []
    add = parts.append
    add('<?xml version="1.0"?>\n')
    add("<!-- GENERATED by models/sunfounder_car/generate_urdf.py: edit that script, not this"
        " file.\n     SunFounder Smart Video Car (Raspberry Pi). REP-103 frames, SI units."
        " base_link: middle of\n     the rear axle at axle height. Dimensions and their sources:"
        " models/sunfounder_car/README.md -->\n")
    add('<robot name="sunfounder_car">\n')
    for name, rgba in (("acrylic", "0.85 0.85 0.9 1"), ("rubber", "0.1 0.1 0.1 1"),
                       ("servo_blue", "0.15 0.3 0.8 1"), ("pcb_green", "0.1 0.5 0.2 1"),
                       ("lidar_grey", "0.3 0.3 0.3 1"), ("metal", "0.7 0.7 0.7 1")):
        add(f'  <material name="{name}"><color rgba="{rgba}"/></material>\n')

    # --- chassis ---------------------------------------------------------------------
    cl, cw, ch = CHASSIS_SIZE
    cx, cy, cz = CHASSIS_CENTER
    rear_x0 = cx - cl / 2
    front_x1 = cx + cl / 2
    main_len = NOSE_START_X - rear_x0
    nose_len = front_x1 - NOSE_START_X
    body = shape("visual", geometry_box(CHASSIS_SIZE), CHASSIS_CENTER, material="acrylic")
    body += shape("collision", geometry_box((main_len, cw, ch)),
                  (rear_x0 + main_len / 2, cy, cz), name="chassis_main")
    body += shape("collision", geometry_box((nose_len, NOSE_WIDTH, ch)),
                  (NOSE_START_X + nose_len / 2, cy, cz), name="chassis_nose")
    body += inertial(CHASSIS_MASS, box_inertia(CHASSIS_MASS, CHASSIS_SIZE), CHASSIS_CENTER)
    add(link("base_link", body))

    # --- wheels ----------------------------------------------------------------------
    wheel_rpy = (math.pi / 2, 0.0, 0.0)   # URDF cylinders lie along z; turn them onto y
    wheel_body = (shape("visual", geometry_cylinder(WHEEL_RADIUS, WHEEL_WIDTH), rpy=wheel_rpy,
                        material="rubber")
                  + shape("collision", geometry_cylinder(WHEEL_RADIUS, WHEEL_WIDTH), rpy=wheel_rpy)
                  + inertial(WHEEL_MASS, cylinder_inertia(WHEEL_MASS, WHEEL_RADIUS, WHEEL_WIDTH, "y")))
    wheel_limit = {"effort": MOTOR_EFFORT, "velocity": MOTOR_VELOCITY}
    for side, sign in (("left", 1.0), ("right", -1.0)):
        add(link(f"rear_{side}_wheel", wheel_body))
        add(joint(f"rear_{side}_wheel_joint", "continuous", "base_link", f"rear_{side}_wheel",
                  xyz=(0.0, sign * TRACK / 2, 0.0), axis=(0, 1, 0), limit=wheel_limit,
                  dynamics={"damping": 0.0005, "friction": 0.0}))

    knuckle_body = (shape("visual", geometry_box(KNUCKLE_SIZE), material="metal")
                    + shape("collision", geometry_box(KNUCKLE_SIZE))
                    + inertial(KNUCKLE_MASS, box_inertia(KNUCKLE_MASS, KNUCKLE_SIZE)))
    for side, sign in (("left", 1.0), ("right", -1.0)):
        knuckle = f"front_{side}_steering_link"
        add(link(knuckle, knuckle_body))
        add(joint(f"front_{side}_steering_joint", "revolute", "base_link", knuckle,
                  xyz=(WHEELBASE, sign * KINGPIN_Y, 0.0), axis=(0, 0, 1),
                  limit={"lower": -STEER_LIMIT, "upper": STEER_LIMIT, "effort": SERVO_EFFORT,
                         "velocity": SERVO_VELOCITY},
                  dynamics={"damping": 0.01, "friction": 0.0}))
        add(link(f"front_{side}_wheel", wheel_body))
        add(joint(f"front_{side}_wheel_joint", "continuous", knuckle, f"front_{side}_wheel",
                  xyz=(0.0, sign * (TRACK / 2 - KINGPIN_Y), 0.0), axis=(0, 1, 0),
                  limit=wheel_limit, dynamics={"damping": 0.0002, "friction": 0.0}))

    # --- pan/tilt camera head ----------------------------------------------------------
    pan_center = (0.0, 0.0, PAN_SIZE[2] / 2)
    add(link("camera_pan_link",
             shape("visual", geometry_box(PAN_SIZE), pan_center, material="servo_blue")
             + shape("collision", geometry_box(PAN_SIZE), pan_center)
             + inertial(PAN_MASS, box_inertia(PAN_MASS, PAN_SIZE), pan_center)))
    add(joint("camera_pan_joint", "revolute", "base_link", "camera_pan_link", xyz=PAN_XYZ,
              axis=(0, 0, 1), limit={"lower": PAN_LIMITS[0], "upper": PAN_LIMITS[1],
                                     "effort": SERVO_EFFORT, "velocity": SERVO_VELOCITY},
              dynamics={"damping": 0.005, "friction": 0.0}))
    add(link("camera_tilt_link",
             shape("visual", geometry_box(TILT_SIZE), material="servo_blue")
             + shape("collision", geometry_box(TILT_SIZE))
             + inertial(TILT_MASS, box_inertia(TILT_MASS, TILT_SIZE))))
    add(joint("camera_tilt_joint", "revolute", "camera_pan_link", "camera_tilt_link",
              xyz=(0.0, 0.0, TILT_Z), axis=(0, 1, 0),
              limit={"lower": TILT_LIMITS[0], "upper": TILT_LIMITS[1], "effort": SERVO_EFFORT,
                     "velocity": SERVO_VELOCITY},
              dynamics={"damping": 0.005, "friction": 0.0}))
    add(link("camera_link",
             shape("visual", geometry_box(CAMERA_SIZE), material="pcb_green")
             + shape("collision", geometry_box(CAMERA_SIZE))
             + inertial(CAMERA_MASS, box_inertia(CAMERA_MASS, CAMERA_SIZE))))
    add(joint("camera_joint", "fixed", "camera_tilt_link", "camera_link", xyz=CAMERA_XYZ))
    tiny_box = (0.002, 0.002, 0.002)
    add(link("camera_optical_frame", inertial(TINY_MASS, box_inertia(TINY_MASS, tiny_box))))
    # REP-103 optical frame: z forward, x right, y down.
    add(joint("camera_optical_joint", "fixed", "camera_link", "camera_optical_frame",
              xyz=(CAMERA_SIZE[0] / 2, 0.0, 0.0), rpy=(-math.pi / 2, 0.0, -math.pi / 2)))

    # --- LIDAR -------------------------------------------------------------------------
    top = cz + ch / 2
    laser_bottom = LASER_Z + LASER_BODY_DZ - LASER_HEIGHT / 2
    post_len = laser_bottom - top
    post_center = (0.0, 0.0, post_len / 2)
    add(link("laser_mount",
             shape("visual", geometry_cylinder(POST_RADIUS, post_len), post_center, material="metal")
             + shape("collision", geometry_cylinder(POST_RADIUS, post_len), post_center)
             + inertial(POST_MASS, cylinder_inertia(POST_MASS, POST_RADIUS, post_len, "z"),
                        post_center)))
    add(joint("laser_mount_joint", "fixed", "base_link", "laser_mount",
              xyz=(LASER_XY[0], LASER_XY[1], top)))
    body_center = (0.0, 0.0, LASER_BODY_DZ)
    add(link("laser",
             shape("visual", geometry_cylinder(LASER_RADIUS, LASER_HEIGHT), body_center,
                   material="lidar_grey")
             + shape("collision", geometry_cylinder(LASER_RADIUS, LASER_HEIGHT), body_center)
             + inertial(LASER_MASS, cylinder_inertia(LASER_MASS, LASER_RADIUS, LASER_HEIGHT, "z"),
                        body_center)))
    add(joint("laser_joint", "fixed", "laser_mount", "laser",
              xyz=(0.0, 0.0, LASER_Z - top)))

    # --- ros_control transmissions ---------------------------------------------------------
    for side in ("left", "right"):
        add(transmission(f"rear_{side}_wheel_joint", "VelocityJointInterface"))
    for side in ("left", "right"):
        add(transmission(f"front_{side}_steering_joint", "PositionJointInterface"))
    # The free front wheels get an effort interface that no controller commands (zero torque:
    # they roll freely) so that DefaultRobotHWSim registers them and joint_state_controller
    # publishes all eight movable joints, as the embedded simulator does.
    for side in ("left", "right"):
        add(transmission(f"front_{side}_wheel_joint", "EffortJointInterface"))
    add(transmission("camera_pan_joint", "PositionJointInterface"))
    add(transmission("camera_tilt_joint", "PositionJointInterface"))

    # --- Gazebo ------------------------------------------------------------------------------
    add(gazebo_blocks())
    add("</robot>\n")
    return "".join(parts)


def gazebo_blocks() -> str:
    scan_increment = 2 * math.pi / 360
    out = []
    out.append(
        "  <!-- Gazebo (classic, gazebo_ros). Not exercised on the development machine, which has no\n"
        "       Gazebo; sdformat's URDF conversion (ign sdf -p) is checked by the tests. -->\n"
        "  <gazebo>\n"
        '    <plugin name="gazebo_ros_control" filename="libgazebo_ros_control.so">\n'
        "      <robotNamespace>/sunfounder_car</robotNamespace>\n"
        "      <robotSimType>gazebo_ros_control/DefaultRobotHWSim</robotSimType>\n"
        "    </plugin>\n"
        "  </gazebo>\n")
    for wheel in ("rear_left_wheel", "rear_right_wheel", "front_left_wheel", "front_right_wheel"):
        out.append(f'  <gazebo reference="{wheel}">\n    <mu1>1.0</mu1>\n    <mu2>1.0</mu2>\n'
                   f"    <kp>1e6</kp>\n    <kd>10</kd>\n    <minDepth>0.001</minDepth>\n"
                   f"    <material>Gazebo/Black</material>\n  </gazebo>\n")
    out.append(
        '  <gazebo reference="base_link">\n    <material>Gazebo/White</material>\n  </gazebo>\n'
        '  <gazebo reference="camera_link">\n'
        '    <sensor type="camera" name="camera">\n'
        "      <update_rate>15</update_rate>\n"
        "      <camera>\n"
        f"        <horizontal_fov>{f(CAMERA_HFOV)}</horizontal_fov>\n"
        f"        <image><width>{CAMERA_WIDTH}</width><height>{CAMERA_HEIGHT}</height><format>R8G8B8</format></image>\n"
        "        <clip><near>0.02</near><far>30</far></clip>\n"
        "        <noise><type>gaussian</type><mean>0.0</mean><stddev>0.007</stddev></noise>\n"
        "      </camera>\n"
        '      <plugin name="camera_controller" filename="libgazebo_ros_camera.so">\n'
        "        <updateRate>0.0</updateRate>\n"
        # the principal point of the embedded simulator's ideal pinhole (pixel centres from 0);
        # the plugin's default is (size + 1) / 2
        f"        <CxPrime>{f((CAMERA_WIDTH - 1) / 2)}</CxPrime>\n"
        f"        <Cx>{f((CAMERA_WIDTH - 1) / 2)}</Cx>\n"
        f"        <Cy>{f((CAMERA_HEIGHT - 1) / 2)}</Cy>\n"
        "        <cameraName>camera</cameraName>\n"
        "        <imageTopicName>image_raw</imageTopicName>\n"
        "        <cameraInfoTopicName>camera_info</cameraInfoTopicName>\n"
        "        <frameName>camera_optical_frame</frameName>\n"
        "      </plugin>\n"
        "    </sensor>\n"
        "  </gazebo>\n"
        '  <gazebo reference="laser">\n'
        '    <sensor type="ray" name="laser">\n'
        "      <visualize>false</visualize>\n"
        "      <update_rate>10</update_rate>\n"
        "      <ray>\n"
        "        <scan>\n"
        "          <horizontal>\n"
        "            <samples>360</samples>\n"
        "            <resolution>1</resolution>\n"
        # 360 samples one degree apart: the last one stops short of +pi (no duplicate ray).
        f"            <min_angle>{f(-math.pi)}</min_angle>\n"
        f"            <max_angle>{f(math.pi - scan_increment)}</max_angle>\n"
        "          </horizontal>\n"
        "        </scan>\n"
        "        <range><min>0.15</min><max>12.0</max><resolution>0.01</resolution></range>\n"
        "        <noise><type>gaussian</type><mean>0.0</mean><stddev>0.01</stddev></noise>\n"
        "      </ray>\n"
        '      <plugin name="laser_controller" filename="libgazebo_ros_laser.so">\n'
        "        <topicName>scan</topicName>\n"
        "        <frameName>laser</frameName>\n"
        "      </plugin>\n"
        "    </sensor>\n"
        "  </gazebo>\n")
    return "".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="only check that the URDF on disk is up to date (exit 1 if not)")
    parser.add_argument("-o", "--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    text = build()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date: run {Path(__file__).name}")
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
