"""What netloop generates or ships for the upstream ROS tools it starts where a user has them
(none can be installed on Debian 12), held to what those tools' sources read. Each test names
the upstream file and the revision that was read:

  nimbro_network    AIS-Bonn/nimbro_network@7e1de20c8fb33fb1bf22ab9a8c4e93d098b9c4a3 (master: the
                    udp_sender/udp_receiver/tcp_sender/tcp_receiver nodes netloop starts)
  multimaster_fkie  fkie/multimaster_fkie@143f8e44055d3543d9bc1c2ebfe34487b32ebcc5 (noetic-devel)
  gazebo_ros_pkgs   ros-simulation/gazebo_ros_pkgs@f9e1a4607842afa5888ef01de31cd64a1e3e297f (noetic-devel)
  ros_controllers   ros-controls/ros_controllers@678b92adfd9242c93b78c066a8369c7665ea1421 (noetic-devel)
  ros_control       ros-controls/ros_control@633c3746a9b109056658b862ff7d765cc85ec9da (noetic-devel)
  rqt_plot          ros-visualization/rqt_plot@e5af1b8aec0a824a8d5bd22e9726f47351b0d657 (noetic-devel)
  qt_gui_core       ros-visualization/qt_gui_core@9147631f5f21f77e1f8e1f3ad884b5e96a8e22e4 (melodic-devel,
                    released for Noetic)

Parameter types are checked after a round trip through a real ROS master (XML-RPC setParam /
getParam, as the runner sets them and as roscpp/rospy read them), because the C++ tools cast
XmlRpcValues: ``(double)list[i]["rate"]`` throws unless the value is an XML-RPC double.
"""
from __future__ import annotations

import ast
import json
import math
import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from netloop import paths, rosenv
from netloop.schema import validate
from netloop.transports import multimaster, nimbro
from netloop.transports.base import CrossingTopic
from netloop.transports.relay_common import TransportError

REPO = Path(__file__).resolve().parents[1]
URDF = REPO / "models" / "sunfounder_car" / "urdf" / "sunfounder_car.urdf"
CONTROL = REPO / "controllers" / "config" / "sunfounder_car_control.yaml"
SIM_LAUNCH = REPO / "launch" / "sim.launch"
PERSPECTIVE = REPO / "config" / "netloop.perspective"

TOPICS = [CrossingTopic("/y", "netloop/LoopSample", "robot", "operator", 52, 0.02, control=True),
          CrossingTopic("/u", "netloop/LoopSample", "operator", "robot", 52, 0.02, control=True),
          CrossingTopic("/flows/image", "sensor_msgs/CompressedImage", "robot", "operator", 65536, 0.15)]
ADDRESS = {"robot": "10.77.0.1", "operator": "10.77.0.2"}
TYPES = {"netloop/LoopSample": {"type": "netloop/LoopSample", "md5": "a" * 32, "definition": "uint32 seq\n"},
         "sensor_msgs/CompressedImage": {"type": "sensor_msgs/CompressedImage", "md5": "b" * 32,
                                         "definition": "Header header\n"}}


def round_trip(master, params: dict, namespace: str) -> dict:
    """``params`` as a node reads them back from a real master (XML-RPC types preserved)."""
    master.set_params(params, namespace)
    code, msg, value = master.rpc(master.uri, "getParam", namespace)
    assert code == 1, msg
    return value


def nimbro_plan(options: dict, mixed: bool = True, type_of=TYPES.get):
    return nimbro.plan(TOPICS, ADDRESS, {"robot": 17100, "operator": 17102}, validate(nimbro.OPTIONS, options),
                       mixed=mixed, implementation="nimbro", records=Path("/r"),
                       node_binary=lambda n: Path("/devel/lib/netloop") / n,
                       nimbro_binary=lambda n: Path("/opt/ros/noetic/lib/nimbro_topic_transport") / n,
                       type_of=type_of)


# -- nimbro_network ---------------------------------------------------------------------------------
def test_nimbro_senders_get_the_parameters_udp_sender_and_tcp_sender_read(roscore):
    """nimbro_topic_transport/src/udp/udp_sender.cpp and src/tcp/tcp_sender.cpp @7e1de20: ~destination_addr
    (string), ~destination_port (int), ~topics: array of structs with name (string), rate (read as
    double: an int would throw), compress (read as bool), type (string)."""
    specs = {s["name"]: s for s in nimbro_plan({"topics": {"/y": {"rate": 50, "compress": True},
                                                           "/flows/image": {"compress": True}}})}
    udp = round_trip(roscore, specs["nimbro_udp_sender_robot_to_operator"]["params"], "/udp_sender")
    assert isinstance(udp["destination_addr"], str) and udp["destination_addr"] == "10.77.0.2"
    assert type(udp["destination_port"]) is int and udp["destination_port"] == 17102
    (y,) = udp["topics"]
    assert y == {"name": "/y", "rate": 50.0, "compress": True, "type": "netloop/LoopSample"}
    assert type(y["rate"]) is float and type(y["compress"]) is bool
    tcp = round_trip(roscore, specs["nimbro_tcp_sender_robot_to_operator"]["params"], "/tcp_sender")
    assert tcp == {"destination_addr": "10.77.0.2", "destination_port": 17103,
                   "topics": [{"name": "/flows/image", "compress": True, "type": "sensor_msgs/CompressedImage"}]}


def test_nimbro_receivers_get_only_their_port(roscore):
    """udp_receiver.cpp and tcp_receiver.cpp @7e1de20 read ~port (int, default 5050) and no topic list:
    the type comes in each packet's header and is looked up locally."""
    specs = nimbro_plan({})
    receivers = [s for s in specs if "_receiver_" in s["name"]]
    assert {Path(s["argv"][0]).name for s in receivers} == {"udp_receiver", "tcp_receiver"}
    for s in receivers:
        got = round_trip(roscore, s["params"], "/" + s["name"])
        assert list(got) == ["port"] and type(got["port"]) is int
    assert {Path(s["argv"][0]).name for s in specs if "_sender_" in s["name"]} == {"udp_sender", "tcp_sender"}


def test_nimbro_refuses_a_rate_on_a_tcp_topic():
    """tcp_sender.cpp @7e1de20 reads name, compress, type and enable of each topic, no rate."""
    with pytest.raises(TransportError, match=r"transport_options.nimbro.topics./flows/image.rate: .*tcp_sender"):
        nimbro_plan({"topics": {"/flows/image": {"rate": 5.0}}})
    nimbro_plan({"topics": {"/flows/image": {"rate": 5.0, "protocol": "udp"}}})   # UDP honours it



@pytest.mark.parametrize("key, value", [("message_ack", False), ("tcp_nodelay", True)])
def test_nimbro_tcp_is_stop_and_wait_with_nagle_and_other_values_are_refused(key, value):
    """tcp_sender.cpp @7e1de20 never sets TCP_NODELAY and, after writing a message, blocks on
    read(m_fd, &ack, 1); tcp_receiver.cpp writes that byte after publishing. netloop's own relay
    does the same by default and is told so at both ends; another value is refused for nimbro."""
    with pytest.raises(TransportError, match=f"transport_options.nimbro.{key}: .*always runs with {key}: "
                                             f"{str(not value).lower()}"):
        nimbro_plan({key: value})
    nimbro_plan({key: value}, mixed=False)   # no TCP topic: nothing to refuse
    own = {s["name"]: s["params"] for s in nimbro.plan(
        TOPICS, ADDRESS, {"robot": 17100, "operator": 17102}, validate(nimbro.OPTIONS, {key: value}),
        mixed=True, implementation="own", records=Path("/r"), node_binary=lambda n: Path("/x") / n,
        type_of=TYPES.get)}
    defaults = {"message_ack": True, "tcp_nodelay": False}
    sender, receiver = own["nimbro_tcp_sender_robot_to_operator"], own["nimbro_tcp_receiver_operator"]
    assert {k: sender[k] for k in defaults} == defaults | {key: value}
    assert receiver["message_ack"] == (defaults | {key: value})["message_ack"]
    assert "message_ack" not in own["nimbro_udp_sender_operator_to_robot"]

def test_nimbro_refuses_names_its_udp_header_cannot_hold():
    """src/udp/udp_packet.h @7e1de20: char topic_name[64], topic_type[64] (the sender cuts longer
    ones to 63 characters, so they would arrive under another name)."""
    long_topic = "/" + "t" * 63
    topics = [CrossingTopic(long_topic, "netloop/LoopSample", "robot", "operator", 52, 0.02)]
    opts = validate(nimbro.OPTIONS, {})
    with pytest.raises(TransportError, match=f"topic name '{long_topic}' has 64 characters"):
        nimbro.plan(topics, ADDRESS, {"robot": 1, "operator": 3}, opts, False, "nimbro", Path("/r"),
                    nimbro_binary=lambda n: Path("/x") / n, type_of=TYPES.get)
    ok = nimbro.plan([CrossingTopic(long_topic[:63], "netloop/LoopSample", "robot", "operator", 52, 0.02)],
                     ADDRESS, {"robot": 1, "operator": 3}, opts, False, "nimbro", Path("/r"),
                     node_binary=lambda n: Path("/x") / n, nimbro_binary=lambda n: Path("/x") / n, type_of=TYPES.get)
    assert any(s["name"].startswith("nimbro_udp_sender") for s in ok)
    # over TCP the name is length-prefixed (src/tcp/tcp_packet.h): no limit
    nimbro.plan(topics, ADDRESS, {"robot": 1, "operator": 3}, opts | {"topics": {long_topic: {"protocol": "tcp"}}},
                False, "nimbro", Path("/r"), node_binary=lambda n: Path("/x") / n,
                nimbro_binary=lambda n: Path("/x") / n, type_of=TYPES.get)


def test_nimbro_refuses_a_message_type_the_receiving_side_does_not_have():
    """src/topic_info.cpp @7e1de20: the receivers run `rosmsg md5` / `rosmsg show` for the type named
    in the packet and drop the message when it is not installed."""
    with pytest.raises(TransportError, match="'sensor_msgs/CompressedImage' is not installed here"):
        nimbro_plan({}, type_of=lambda t: TYPES.get(t) if t != "sensor_msgs/CompressedImage" else None)


# -- multimaster_fkie -------------------------------------------------------------------------------
def fkie_plan(options: dict):
    return {s["name"]: s for s in multimaster.plan(
        TOPICS, ADDRESS, {"robot": 11611, "operator": 11612}, validate(multimaster.OPTIONS, options), "fkie",
        Path("/r"), fkie_binary=lambda pkg, exe: Path("/opt/ros/noetic/lib") / pkg / exe)}


def test_master_discovery_parameters_have_the_names_and_types_it_reads(roscore):
    """fkie_master_discovery/src/fkie_master_discovery/__init__.py @143f8e4 (~mcast_group str,
    ~mcast_port int, ~rpc_port int) and master_discovery.py (~heartbeat_hz, ~rosmaster_hz,
    ~measurement_intervals, ~timeout_factor, ~remove_after numbers; ~robot_hosts list; ~send_mcast,
    ~listen_mcast bool)."""
    specs = fkie_plan({"heartbeat_hz": 5})
    disc = specs["master_discovery_robot"]
    assert Path(disc["argv"][0]).name == "master_discovery" and "__name:=master_discovery_robot" in disc["argv"]
    got = round_trip(roscore, disc["params"], "/master_discovery_robot")
    types = {"mcast_group": str, "mcast_port": int, "rpc_port": int, "heartbeat_hz": float, "rosmaster_hz": float,
             "measurement_intervals": float, "timeout_factor": float, "remove_after": float, "robot_hosts": list,
             "send_mcast": bool, "listen_mcast": bool}
    assert {k: type(v) for k, v in got.items()} == types
    assert got["robot_hosts"] == ["10.77.0.2"] and got["send_mcast"] and got["listen_mcast"]


@pytest.mark.parametrize("hz", [5.0, 0.5])
def test_master_discovery_drops_a_peer_after_peer_timeout(hz):
    """master_discovery.py @143f8e4, DiscoveredMaster.get_quality(interval, offline_after): offline when
    the last heartbeat is older than interval (divided by the rate below 1 Hz) x offline_after, called
    with (~measurement_intervals, ~timeout_factor)."""
    p = fkie_plan({"heartbeat_hz": hz, "peer_timeout": 3.0})["master_discovery_operator"]["params"]
    duration = p["measurement_intervals"] / (hz if hz < 1.0 else 1.0)
    assert duration * p["timeout_factor"] == pytest.approx(3.0)


@pytest.mark.parametrize("hz", [0.2, 30])
def test_heartbeat_rates_master_discovery_does_not_use_are_refused(hz):
    """master_discovery.py @143f8e4: heart beats above 25.5 Hz are cut to 25.5; below 0.3 Hz
    (MIN_HZ_FOR_QUALILTY) no peer is ever judged offline."""
    with pytest.raises(TransportError, match="transport_options.multimaster.heartbeat_hz"):
        fkie_plan({"heartbeat_hz": hz})


def fkie_pattern(entries: list[str]) -> re.Pattern:
    """fkie_master_discovery/src/fkie_master_discovery/common.py @143f8e4, gen_pattern(): each entry
    anchored, '*' -> '.*', joined with '|', case-insensitive."""
    return re.compile("|".join(r"\A" + e.strip().replace("*", ".*") + r"\Z" for e in entries), re.I)


def test_master_sync_filters_sync_exactly_the_crossing_topics(roscore):
    """fkie_master_sync/src/fkie_master_sync/master_sync.py and
    fkie_master_discovery/src/fkie_master_discovery/filter_interface.py @143f8e4: ~sync_topics,
    ~ignore_nodes, ~sync_hosts, ~ignore_hosts lists of patterns; ~sync_topics_on_demand,
    ~resync_on_reconnect, ~sync_remote_nodes, ~check_host bool; ~resync_on_reconnect_timeout number.
    sync_thread.py's default ignore list names '/master_discovery' and '/master_sync' exactly, so
    netloop's per-host names are added to ~ignore_nodes."""
    sync = fkie_plan({})["master_sync_operator"]
    assert Path(sync["argv"][0]).name == "master_sync"
    got = round_trip(roscore, sync["params"], "/master_sync_operator")
    for key in ("sync_topics_on_demand", "resync_on_reconnect", "sync_remote_nodes", "check_host"):
        assert type(got[key]) is bool, key
    assert type(got["resync_on_reconnect_timeout"]) is float
    topics = fkie_pattern(got["sync_topics"])
    assert all(topics.match(t.topic) for t in TOPICS)
    assert not any(topics.match(t) for t in ("/yy", "/flows/image2", "/rosout", "/u/value"))
    ignored = fkie_pattern(got["ignore_nodes"])
    assert ignored.match("/master_sync_robot") and ignored.match("/master_discovery_operator")
    assert not ignored.match("/netloop_plant")


# -- gazebo_ros_pkgs: the URDF's <gazebo> blocks -------------------------------------------------------
@pytest.fixture(scope="module")
def robot():
    return ET.parse(URDF).getroot()


def plugins(robot) -> dict[str, ET.Element]:
    return {p.get("filename"): p for g in robot.findall("gazebo") for p in g.iter("plugin")}


#: the plugin elements each plugin's Load() reads (@f9e1a46): gazebo_plugins/src/gazebo_ros_camera_utils.cpp,
#: gazebo_plugins/src/gazebo_ros_laser.cpp, gazebo_ros_control/src/gazebo_ros_control_plugin.cpp
READ_BY = {
    "libgazebo_ros_camera.so": {"robotNamespace", "imageTopicName", "triggerTopicName", "cameraInfoTopicName",
                                "cameraName", "frameName", "updateRate", "CxPrime", "Cx", "Cy", "focalLength",
                                "hackBaseline", "distortionK1", "distortionK2", "distortionK3", "distortionT1",
                                "distortionT2", "autoDistortion", "borderCrop"},
    "libgazebo_ros_laser.so": {"robotNamespace", "frameName", "topicName"},
    "libgazebo_ros_control.so": {"robotNamespace", "robotParam", "robotSimType", "controlPeriod", "eStopTopic"},
}


def test_gazebo_plugin_files_and_every_element_they_read(robot):
    """Library names from gazebo_plugins/CMakeLists.txt (add_library(gazebo_ros_camera),
    add_library(gazebo_ros_laser)) and gazebo_ros_control/CMakeLists.txt (add_library(${PROJECT_NAME}))
    @f9e1a46; every element of each plugin block is one its Load() reads (so none is silently
    ignored: Noetic's gazebo_ros_control no longer reads <legacyModeNS>, the camera never read
    <alwaysOn>); robotSimType as gazebo_ros_control/robot_hw_sim_plugins.xml names it."""
    found = plugins(robot)
    assert set(found) == set(READ_BY)
    for filename, plugin in found.items():
        unread = {c.tag for c in plugin} - READ_BY[filename]
        assert not unread, f"{filename}: {sorted(unread)} are not read by the plugin"
    control = found["libgazebo_ros_control.so"]
    assert control.findtext("robotSimType") == "gazebo_ros_control/DefaultRobotHWSim"
    camera = found["libgazebo_ros_camera.so"]
    assert float(camera.findtext("updateRate")) == 0.0      # 0: the <sensor>'s update_rate decides


def gazebo_topics(robot, spawn_namespace: str = "/") -> dict[str, str]:
    """The topics the URDF's sensor plugins publish, computed as the plugins do (@f9e1a46).
    spawn_model passes its node's namespace as -robot_namespace (gazebo_ros/scripts/spawn_model),
    and gazebo_ros_api_plugin.cpp (walkChildAddRobotNamespace) adds it as <robotNamespace> to
    every plugin that has none; the camera's node handle is robotNamespace + '/' + cameraName
    (gazebo_ros_camera_utils.cpp), the laser's is robotNamespace (gazebo_ros_laser.cpp)."""
    def clean(name: str) -> str:
        return "/" + "/".join(part for part in name.split("/") if part)
    found = plugins(robot)
    cam, laser = found["libgazebo_ros_camera.so"], found["libgazebo_ros_laser.so"]
    cam_ns = (cam.findtext("robotNamespace") or spawn_namespace) + "/" + (cam.findtext("cameraName") or "")
    laser_ns = laser.findtext("robotNamespace") or spawn_namespace
    return {clean(f"{cam_ns}/{cam.findtext('imageTopicName') or 'image_raw'}"): cam.findtext("frameName"),
            clean(f"{cam_ns}/{cam.findtext('cameraInfoTopicName') or 'camera_info'}"): cam.findtext("frameName"),
            clean(f"{laser_ns}/{laser.findtext('topicName')}"): laser.findtext("frameName")}


def test_gazebo_topics_and_frames_are_those_of_the_embedded_simulator(robot):
    """What the URDF's plugins publish (see gazebo_topics) against the embedded simulator's
    topics and frames (src/netloop/sim/node.py; frames read from the same plugin blocks)."""
    from netloop.sim.world import read_urdf
    info = read_urdf(URDF)
    assert gazebo_topics(robot) == {"/camera/image_raw": info.camera.frame, "/camera/camera_info": info.camera.frame,
                                    "/scan": info.laser.frame}
    assert (info.camera.frame, info.laser.frame) == ("camera_optical_frame", "laser")


def test_camera_info_principal_point_matches_the_embedded_camera(robot):
    """gazebo_ros_camera_utils.cpp @f9e1a46: Cx/Cy default to (size + 1) / 2 when 0 or absent,
    focal length = width / (2 tan(hfov / 2)); the URDF sets Cx, Cy, CxPrime to the embedded
    simulator's ideal pinhole ((size - 1) / 2, netloop.sim.simulation.Simulation.camera_info_matrix)."""
    from netloop.sim.world import read_urdf
    info = read_urdf(URDF)
    cam = plugins(robot)["libgazebo_ros_camera.so"]
    assert float(cam.findtext("Cx")) == float(cam.findtext("CxPrime")) == (info.camera.width - 1) / 2
    assert float(cam.findtext("Cy")) == (info.camera.height - 1) / 2
    assert cam.find("focalLength") is None     # computed from hfov, as the embedded camera does


def test_sdformat_keeps_the_sensors_and_plugins():
    """Gazebo converts the URDF with sdformat; the fixed-joint links (camera_link, laser) are merged
    into their parents, and their sensors and plugins must come through (run with Debian's sdformat 12;
    Noetic's Gazebo 11 uses sdformat 9, same URDF conversion)."""
    ign = shutil.which("ign")
    if ign is None:
        pytest.skip("ign (Debian ignition-tools + libsdformat-dev) not installed")
    out = subprocess.run([ign, "sdf", "-p", str(URDF)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    sdf = ET.fromstring(out.stdout)
    sensors = {s.get("name"): s for s in sdf.iter("sensor")}
    assert set(sensors) == {"camera", "laser"}
    assert sensors["camera"].find("plugin").findtext("frameName") == "camera_optical_frame"
    assert sensors["laser"].find("plugin").findtext("topicName") == "scan"
    model_plugins = [p.get("filename") for p in sdf.find("model").findall("plugin")]
    assert model_plugins == ["libgazebo_ros_control.so"]


# -- ros_control / ros_controllers ----------------------------------------------------------------------
CONTROLLER_TYPES = {   # <class name> of each package's plugin description XML @678b92a
    "joint_state_controller/JointStateController", "velocity_controllers/JointVelocityController",
    "position_controllers/JointPositionController", "effort_controllers/JointEffortController"}
INTERFACE_OF = {"velocity_controllers": "VelocityJointInterface", "position_controllers": "PositionJointInterface",
                "effort_controllers": "EffortJointInterface"}


def transmissions(robot) -> dict[str, str]:
    return {t.find("joint").get("name"): t.find("joint").findtext("hardwareInterface") for t in robot.iter("transmission")}


def test_controller_parameters_are_what_the_controllers_read(robot, roscore):
    """forward_command_controller/include/forward_command_controller/forward_command_controller.h @678b92a:
    ~joint (string), subscribes ~command (std_msgs/Float64); joint_state_controller.cpp: ~publish_rate
    (double; roscpp also accepts an int); gazebo_ros_control/src/default_robot_hw_sim.cpp @f9e1a46:
    PID gains at <robotNamespace>/gazebo_ros_control/pid_gains/<joint> (control_toolbox p, i, d);
    hardware interfaces with the 'hardware_interface/' prefix, nested in <joint>."""
    ns = plugins(robot)["libgazebo_ros_control.so"].findtext("robotNamespace")
    config = yaml.safe_load(CONTROL.read_text())
    assert list(config) == [ns.strip("/")]
    got = round_trip(roscore, config[ns.strip("/")], ns)
    interfaces = transmissions(robot)
    assert all(i.startswith("hardware_interface/") for i in interfaces.values())
    for name, c in got.items():
        if name == "gazebo_ros_control":
            continue
        assert c["type"] in CONTROLLER_TYPES, name
        if "joint" in c:
            assert type(c["joint"]) is str and interfaces[c["joint"]].endswith(INTERFACE_OF[c["type"].split("/")[0]])
    assert type(got["joint_state_controller"]["publish_rate"]) is float
    for joint, gains in got["gazebo_ros_control"]["pid_gains"].items():
        assert interfaces[joint] == "hardware_interface/PositionJointInterface"
        assert {k: type(v) for k, v in gains.items()} == {"p": float, "i": float, "d": float}
    from netloop.sim.gazebo_bridge import CONTROLLERS, NAMESPACE
    assert NAMESPACE == ns and {n for names in CONTROLLERS.values() for n in names} <= set(got)


def test_every_movable_joint_reaches_joint_states(robot):
    """default_robot_hw_sim.cpp @f9e1a46 registers a joint only through a transmission with a
    hardware interface, and joint_state_controller publishes the registered joints; the embedded
    simulator publishes every movable joint, so every movable joint has a transmission."""
    movable = {j.get("name") for j in robot.findall("joint") if j.get("type") != "fixed"}
    assert set(transmissions(robot)) == movable and len(movable) == 8


# -- launch: empty_world.launch, spawn_model, spawner -------------------------------------------------
#: <arg>s of gazebo_ros/launch/empty_world.launch @f9e1a46
EMPTY_WORLD_ARGS = {"paused", "use_sim_time", "extra_gazebo_args", "gui", "recording", "headless", "debug", "physics",
                    "verbose", "output", "world_name", "respawn_gazebo", "use_clock_frequency",
                    "pub_clock_frequency", "enable_ros_network", "server_required", "gui_required"}
#: flags of gazebo_ros/scripts/spawn_model @f9e1a46 (argparse)
SPAWN_MODEL_FLAGS = {"-urdf", "-sdf", "-file", "-param", "-database", "-stdin", "-model", "-reference_frame",
                     "-gazebo_namespace", "-robot_namespace", "-unpause", "-wait", "-x", "-y", "-z", "-R", "-P", "-Y",
                     "-J", "-package_to_model", "-b"}


def test_sim_launch_passes_only_arguments_gazebo_ros_declares():
    """roslaunch refuses an <include> argument the included file does not declare; spawn_model's
    argparse refuses an unknown flag; the controller spawner (controller_manager/scripts/spawner,
    ros_control@633c374) finds controller_manager/* relative to its node namespace."""
    root = ET.parse(SIM_LAUNCH).getroot()
    group = next(g for g in root.iter("group") if "gazebo" in g.get("if", ""))
    include = group.find("include")
    assert include.get("file") == "$(find gazebo_ros)/launch/empty_world.launch"
    assert {a.get("name") for a in include.findall("arg")} <= EMPTY_WORLD_ARGS
    nodes = {n.get("name"): n for n in group.findall("node")}
    spawn = nodes["spawn_sunfounder_car"]
    assert (spawn.get("pkg"), spawn.get("type")) == ("gazebo_ros", "spawn_model")
    flags = {a for a in spawn.get("args").split() if a.startswith("-") and not re.fullmatch(r"-?[\d.]+", a)}
    assert flags <= SPAWN_MODEL_FLAGS and {"-urdf", "-param", "-model"} <= flags
    spawner = nodes["controller_spawner"]
    assert spawner.get("ns") == plugins(ET.parse(URDF).getroot())["libgazebo_ros_control.so"].findtext("robotNamespace")
    assert "--namespace" not in spawner.get("args")


def test_gazebo_runs_on_simulated_time(monkeypatch, tmp_path):
    """Gazebo's plugins stamp with Gazebo's clock (gazebo_ros_laser.cpp: the scan's own time), so
    sim.launch sets /use_sim_time for simulator:=gazebo whatever use_sim_time says; the embedded
    simulator keeps the wall clock by default."""
    config = pytest.importorskip("roslaunch.config")
    stub = tmp_path / "gazebo_ros"
    (stub / "launch").mkdir(parents=True)
    (stub / "package.xml").write_text('<package format="2"><name>gazebo_ros</name><version>0.0.0</version>'
                                      '<description>stub</description><maintainer email="x@example.org">x'
                                      '</maintainer><license>BSD</license></package>')
    (stub / "launch" / "empty_world.launch").write_text(
        "<launch>" + "".join(f'<arg name="{a}" default=""/>' for a in sorted(EMPTY_WORLD_ARGS)) + "</launch>")
    monkeypatch.setenv("ROS_PACKAGE_PATH", f"{tmp_path}:{rosenv.base_env().get('ROS_PACKAGE_PATH', '')}")
    monkeypatch.setenv("ROS_HOME", str(tmp_path / "ros"))

    def sim_time(*args):
        cfg = config.load_config_default([(str(SIM_LAUNCH), list(args))], None, verbose=False)
        return cfg.params["/use_sim_time"].value
    assert sim_time("simulator:=gazebo") is True and sim_time("simulator:=gazebo", "use_sim_time:=false") is True
    assert sim_time() is False and sim_time("use_sim_time:=true") is True


# -- the embedded simulator and the Gazebo bridge, running ------------------------------------------------
def echo(env, topic: str, timeout: float = 60) -> str:
    out = subprocess.run(["rostopic", "echo", "-n", "1", topic], env=env, capture_output=True, text=True,
                         timeout=timeout)
    return out.stdout


def test_embedded_simulator_publishes_what_gazebo_would(roscore, tmp_path, robot):
    """The embedded simulator, running: the camera and scan topics and frames the Gazebo plugins
    would publish (gazebo_topics), camera_info with the URDF plugin's principal point, and
    joint_states naming every joint joint_state_controller would (every transmission)."""
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    roscore.group.start("sim", [str(paths.node_binary("sim_node.py")), "__name:=sim", "_world:=arena"], env=env)
    for topic, frame in gazebo_topics(robot).items():
        header = echo(env, f"{topic}/header/frame_id")
        assert header.split("\n")[0].strip("'\" ") == frame, (topic, header)
    k = yaml.safe_load(echo(env, "/camera/camera_info/K").split("---")[0])
    cam = plugins(robot)["libgazebo_ros_camera.so"]
    assert (k[2], k[5]) == (float(cam.findtext("Cx")), float(cam.findtext("Cy")))
    names = yaml.safe_load(echo(env, "/joint_states/name").split("---")[0])
    assert set(names) == set(transmissions(robot))


def test_gazebo_bridge_offers_the_embedded_interface(roscore, tmp_path, robot):
    """gazebo_bridge.py, running, with Gazebo's side played by the test: what joint_state_controller
    publishes (/sunfounder_car/joint_states) comes out as joint_states and the URDF's transforms on
    /tf and /tf_static (as the embedded simulator publishes them), and cmd_vel becomes the
    controllers' std_msgs/Float64 commands (forward_command_controller.h: <controller>/command)."""
    env = rosenv.node_env(roscore.uri, "127.0.0.1", tmp_path / "ros")
    roscore.group.start("bridge", [str(paths.node_binary("gazebo_bridge.py")), "__name:=gazebo_bridge",
                                   f"_urdf:={URDF}"], env=env)
    movable = sorted(transmissions(robot))
    state = json.dumps({"name": movable, "position": [0.1] * len(movable), "velocity": [], "effort": []})
    pub = roscore.group.start("joint_states_pub", ["rostopic", "pub", "-r", "20", "/sunfounder_car/joint_states",
                                                   "sensor_msgs/JointState", state], env=env)
    cmd = roscore.group.start("cmd_pub", ["rostopic", "pub", "-r", "20", "/cmd_vel", "geometry_msgs/Twist",
                                          "{linear: {x: 0.3}, angular: {z: 0.0}}"], env=env)
    try:
        assert set(yaml.safe_load(echo(env, "/joint_states/name").split("---")[0])) == set(movable)
        static = echo(env, "/tf_static")
        fixed = {j.find("child").get("link") for j in robot.findall("joint") if j.get("type") == "fixed"}
        assert all(f"child_frame_id: \"{c}\"" in static for c in fixed), static[:2000]
        children = set()
        deadline = time.monotonic() + 30
        wanted = {j.find("child").get("link") for j in robot.findall("joint") if j.get("type") != "fixed"}
        while not wanted <= children and time.monotonic() < deadline:
            children |= set(re.findall(r'child_frame_id: "([^"]+)"', echo(env, "/tf")))
        assert wanted <= children
        speed = float(echo(env, "/sunfounder_car/rear_left_wheel_velocity_controller/command/data").split()[0])
        assert speed > 0
    finally:
        for proc in (pub, cmd):
            roscore.group.stop(proc)


# -- rqt_plot perspective --------------------------------------------------------------------------------
def test_rqt_perspective_is_what_qt_gui_and_rqt_plot_read():
    """qt_gui/src/qt_gui/plugin_manager.py and plugin_instance_id.py (qt_gui_core@9147631): the
    perspective's 'pluginmanager' group lists 'running-plugins' {plugin id: [serials]}, each
    instance's settings in group 'plugin__' + id with '/' -> '__' + '__' + serial, the plugin's own
    in its 'plugin' subgroup (plugin_handler_direct.py), values stored as 'repr' (perspective_manager.py).
    rqt_plot/plugin.xml @e5af1b8: class 'Plot' of package rqt_plot; src/rqt_plot/plot.py and
    data_plot/__init__.py read 'autoscroll', 'topics' (topic/field paths), 'plot_type' (index into
    PyQtGraph, MatPlot, QwtPlot), 'x_limits' and 'y_limits' (two floats each)."""
    data = json.loads(PERSPECTIVE.read_text())
    manager = data["groups"]["pluginmanager"]
    running = ast.literal_eval(manager["keys"]["running-plugins"]["repr"])
    assert running == {"rqt_plot/Plot": [1]}
    instance = manager["groups"]["plugin__rqt_plot__Plot__1"]["groups"]["plugin"]["keys"]
    assert all(v["type"] == "repr" for v in instance.values())
    values = {k: ast.literal_eval(v["repr"]) for k, v in instance.items()}
    assert set(values) == {"autoscroll", "topics", "plot_type", "x_limits", "y_limits"}
    assert values["autoscroll"] in (True, "true") and int(values["plot_type"]) in (0, 1, 2)
    for key in ("x_limits", "y_limits"):
        lo, hi = (float(v) for v in values[key])
        assert lo < hi
    from netloop.msg import LoopSample
    for path in values["topics"]:
        topic, field = path.rsplit("/", 1)
        assert topic in ("/y", "/u")
        assert dict(zip(LoopSample.__slots__, LoopSample._slot_types))[field] == "float64"
    assert math.isfinite(values["y_limits"][0])
