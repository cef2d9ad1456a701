"""netloop.ros2.names: ROS 2's topic and type names, rmw_zenoh's key expressions, RIHS01 hashes.

The type hashes are checked against the hashes ROS 2 Jazzy's own generator
(rosidl_generator_type_description) gives the ROS 2 counterparts of the ROS 1 types, as published
in public sources: rmw_zenoh's documentation of key expressions (std_msgs/msg/String), the output
of `ros2 topic info -v` (sensor_msgs/msg/Image) and the golden hashes of public ROS 2 client
libraries' tests, which list what /opt/ros/jazzy/share holds. They cover Header (seq dropped,
time -> builtin_interfaces/Time, referenced transitively), fixed arrays, unbounded sequences of
primitives and of nested types, and nested types from other packages.
"""

import json

import pytest

from netloop.ros2 import names

# ROS 1 type -> RIHS01 of its ROS 2 counterpart in Jazzy.
JAZZY_HASHES = {
    "std_msgs/String": "df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18",
    "std_msgs/Int8": "26525065a403d972cb672f0777e333f0c799ad444ae5fcd79e43d1e73bd0f440",
    "std_msgs/Float32": "7170d3d8f841f7be3172ce5f4f59f3a4d7f63b0447e8b33327601ad64d83d6e2",
    "std_msgs/Header": "f49fb3ae2cf070f793645ff749683ac6b06203e41c891e17701b1cb597ce6a01",
    "rosgraph_msgs/Clock": "692f7a66e93a3c83e71765d033b60349ba68023a8c689a79e48078bcb5c58564",
    "geometry_msgs/Point": "6963084842a9b04494d6b2941d11444708d892da2f4b09843b9c43f42a7f6881",
    "geometry_msgs/Point32": "2fc4db7cae16a4582c79a56b66173a8d48d52c7dc520ddc55a0d4bcf2a4bfdbc",
    "geometry_msgs/Quaternion": "8a765f66778c8ff7c8ab94afcc590a2ed5325a1d9a076ffff38fbce36f458684",
    "geometry_msgs/Vector3": "cc12fe83e4c02719f1ce8070bfd14aecd40f75a96696a67a2a1f37f7dbb0765d",
    "geometry_msgs/Pose": "d501954e9476cea2996984e812054b68026ae0bfae789d9a10b23daf35cc90fa",
    "geometry_msgs/PoseWithCovariance": "9a7c0fd234b7f45c6098745ecccd773ca1085670e64107135397aee31c02e1bb",
    "geometry_msgs/Transform": "beb83fbe698636351461f6f35d1abb20010c43d55374d81bd041f1ba2581fddc",
    "geometry_msgs/TransformStamped": "0a241f87d04668d94099cbb5ba11691d5ad32c2f29682e4eb5653424bd275206",
    "geometry_msgs/Twist": "9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a",
    "geometry_msgs/TwistWithCovariance": "49f574f033f095d8b6cd1beaca5ca7925e296e84af1716d16c89d38b059c8c18",
    "nav_msgs/Odometry": "3cc97dc7fb7502f8714462c526d369e35b603cfc34d946e3f2eda2766dfec6e0",
    "tf2_msgs/TFMessage": "e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087",
    "sensor_msgs/Image": "d31d41a9a4c4bc8eae9be757b0beed306564f7526c88ea6a4588fb9582527d47",
    "sensor_msgs/Imu": "7d9a00ff131080897a5ec7e26e315954b8eae3353c3f995c55faf71574000b5b",
    "sensor_msgs/NavSatFix": "62223ab3fe210a15976021da7afddc9e200dc9ec75231c1b6a557fc598a65404",
    "sensor_msgs/NavSatStatus": "d1ed3befa628e09571bd273b888ba1c1fd187c9a5e0006b385d7e5e9095a3204",
    "sensor_msgs/PointCloud2": "9198cabf7da3796ae6fe19c4cb3bdd3525492988c70522628af5daa124bae2b5",
    "sensor_msgs/PointField": "5c6a4750728c2bcfbbf7037225b20b02d4429634732146b742dee1726637ef01",
    "sensor_msgs/RegionOfInterest": "ad16bcba5f9131dcdba6fbded19f726f5440e3c513b4fb586dd3027eeed8abb1",
    "sensor_msgs/CameraInfo": "b3dfd68ff46c9d56c80fd3bd4ed22c7a4ddce8c8348f2f59c299e73118e7e275",
}


@pytest.mark.parametrize("ros_type", sorted(JAZZY_HASHES))
def test_type_hash_matches_jazzy(ros_type):
    assert names.type_hash(ros_type) == "RIHS01_" + JAZZY_HASHES[ros_type]


def test_header_description_drops_seq_and_references_time():
    d = names.type_description("std_msgs/Header")
    assert d["type_description"]["type_name"] == "std_msgs/msg/Header"
    assert [f["name"] for f in d["type_description"]["fields"]] == ["stamp", "frame_id"]
    assert d["type_description"]["fields"][0]["type"] == {
        "type_id": 1, "capacity": 0, "string_capacity": 0, "nested_type_name": "builtin_interfaces/msg/Time"}
    assert [r["type_name"] for r in d["referenced_type_descriptions"]] == ["builtin_interfaces/msg/Time"]


def test_hash_is_sha256_of_rosidl_json():
    d = names.type_description("std_msgs/String")
    text = json.dumps(d, separators=(", ", ": "))
    assert text == ('{"type_description": {"type_name": "std_msgs/msg/String", "fields": [{"name": "data", '
                    '"type": {"type_id": 17, "capacity": 0, "string_capacity": 0, "nested_type_name": ""}}]}, '
                    '"referenced_type_descriptions": []}')


def test_netloop_types_hash_and_keep_their_fields():
    d = names.type_description("netloop/LoopSample")
    fields = [(f["name"], f["type"]["type_id"], f["type"]["nested_type_name"]) for f in d["type_description"]["fields"]]
    assert fields == [("seq", 7, ""), ("value", 11, ""), ("stamp", 1, "builtin_interfaces/msg/Time"),
                      ("answer_seq", 8, ""), ("answer_stamp", 1, "builtin_interfaces/msg/Time"),
                      ("padding", 147, "")]
    assert names.type_hash("netloop/LoopSample").startswith("RIHS01_")
    assert len(names.type_hash("netloop/LoopSample")) == len("RIHS01_") + 64


def test_primitive_words_map_as_rosidl_maps_msg_to_idl():
    slots = {"pkg/All": [("a", "byte"), ("b", "char"), ("c", "bool"), ("d", "duration"), ("e", "int16[4]"),
                         ("f", "pkg/Empty[]"), ("g", "string[]")],
             "pkg/Empty": []}
    d = names.type_description("pkg/All", slots.__getitem__)
    ids = [(f["name"], f["type"]["type_id"], f["type"]["capacity"]) for f in d["type_description"]["fields"]]
    assert ids == [("a", 16, 0), ("b", 3, 0), ("c", 15, 0), ("d", 1, 0), ("e", 52, 4), ("f", 145, 0), ("g", 161, 0)]
    refs = {r["type_name"]: r for r in d["referenced_type_descriptions"]}
    assert sorted(refs) == ["builtin_interfaces/msg/Duration", "pkg/msg/Empty"]
    assert refs["pkg/msg/Empty"]["fields"][0]["name"] == "structure_needs_at_least_one_member"


def test_unknown_type_is_refused():
    with pytest.raises(ValueError, match="unknown ROS 1 message type"):
        names.type_hash("no_such_pkg/Nothing")
    with pytest.raises(ValueError, match="<package>/<Type>"):
        names.type_hash("String")


def test_dds_names():
    assert names.dds_topic_name("/y") == "rt/y"
    assert names.dds_topic_name("/flows/image") == "rt/flows/image"
    assert names.dds_type_name("netloop/LoopSample") == "netloop::msg::dds_::LoopSample_"
    assert names.dds_type_name("sensor_msgs/CompressedImage") == "sensor_msgs::msg::dds_::CompressedImage_"
    with pytest.raises(ValueError):
        names.dds_type_name("LoopSample")


def test_zenoh_key_expr_as_rmw_zenoh_documents_it():
    assert names.zenoh_key_expr(0, "/chatter", "std_msgs/String", names.type_hash("std_msgs/String")) == (
        "0/chatter/std_msgs::msg::dds_::String_/"
        "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18")
    assert names.zenoh_key_expr(3, "/flows/image", "sensor_msgs/Image") == (
        "3/flows/image/sensor_msgs::msg::dds_::Image_/TypeHashNotSupported")
