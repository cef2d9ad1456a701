"""ROS 2's names for a ROS 1 topic and type, as the rmw implementations form them.

The Python twin of include/netloop/ros2/names.h (DDS topic and type names, rmw_zenoh's key
expressions), plus what only Python computes: the RIHS01 type hash (REP 2011) of the ROS 2 type
that netloop puts on the wire for a ROS 1 type. The runner passes the hashes to the nodes
(``~type_hashes``) because rmw_zenoh puts the hash in every key expression, so a sample published
under another hash would never reach a ROS 2 node's subscription.

The ROS 2 type of a ROS 1 type is the one include/netloop/ros2/cdr.h describes (as ros1_bridge
maps them): same package, name and fields in the same order, except that std_msgs/Header loses
``seq``, ``time`` becomes builtin_interfaces/Time and ``duration`` builtin_interfaces/Duration.
The only field renames known for ROS 2's own counterparts (sensor_msgs/CameraInfo's D, K, R, P ->
d, k, r, p) are applied so that its hash is the one a ROS 2 node has.
"""

import hashlib
import json
import re

RIHS01_PREFIX = "RIHS01_"

# type_description_interfaces/msg/FieldType: the value types, then +48 for a fixed array,
# +96 for a bounded sequence, +144 for an unbounded sequence.
_FIELD_TYPE_NESTED = 1
_FIELD_TYPE_STRING = 17
_ARRAY, _UNBOUNDED_SEQUENCE = 48, 144

# A ROS 1 primitive -> the FieldType id of the ROS 2 .msg type of the same word, as rosidl maps
# .msg to IDL (byte -> octet, char -> uint8, float32 -> float, float64 -> double, bool -> boolean).
_PRIMITIVE_IDS = {
    "int8": 2,
    "uint8": 3,
    "int16": 4,
    "uint16": 5,
    "int32": 6,
    "uint32": 7,
    "int64": 8,
    "uint64": 9,
    "float32": 10,
    "float64": 11,
    "char": 3,  # ROS 1 char is uint8; ROS 2's char is IDL uint8 too
    "bool": 15,
    "byte": 16,  # ROS 2's byte is IDL octet (FIELD_TYPE_BYTE)
    "string": _FIELD_TYPE_STRING,
}

_BUILTIN_TIME = "builtin_interfaces/msg/Time"
_BUILTIN_DURATION = "builtin_interfaces/msg/Duration"
_BUILTINS = {
    "time": _BUILTIN_TIME,
    "duration": _BUILTIN_DURATION,
}

# ROS 2 counterparts whose fields ros1_bridge maps under another name (ROS 1 name -> ROS 2 name).
_FIELD_RENAMES = {
    "sensor_msgs/CameraInfo": {"D": "d", "K": "k", "R": "r", "P": "p"},
}

_TYPE_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)/([A-Za-z][A-Za-z0-9_]*)$")
_SLOT_RE = re.compile(r"^([^\[\]]+)(?:\[(\d*)\])?$")


def _split_type(ros_type):
    m = _TYPE_RE.match(ros_type or "")
    if not m:
        raise ValueError(f"not a ROS type '<package>/<Type>': {ros_type!r}")
    return m.group(1), m.group(2)


def dds_topic_name(ros_topic):
    """DDS topic of a ROS topic: "/y" -> "rt/y" (rmw_cyclonedds_cpp, rmw_fastrtps_cpp)."""
    return "rt/" + ros_topic.lstrip("/")


def dds_type_name(ros_type):
    """DDS type of a ROS type: "netloop/LoopSample" -> "netloop::msg::dds_::LoopSample_"."""
    package, name = _split_type(ros_type)
    return f"{package}::msg::dds_::{name}_"


def zenoh_key_expr(domain_id, ros_topic, ros_type, type_hash=""):
    """rmw_zenoh's key expression of a topic: "<domain>/<topic>/<dds type>/<type hash>".

    An empty ``type_hash`` gives "TypeHashNotSupported", as rmw_zenoh writes for types without one.
    """
    topic = ros_topic.strip("/")
    if not topic:
        raise ValueError(f"not a topic name: {ros_topic!r}")
    return f"{int(domain_id)}/{topic}/{dds_type_name(ros_type)}/{type_hash or 'TypeHashNotSupported'}"


def ros2_type_name(ros_type):
    """The ROS 2 name of a ROS 1 message type: "std_msgs/String" -> "std_msgs/msg/String"."""
    package, name = _split_type(ros_type)
    return f"{package}/msg/{name}"


def _field_type(slot_type, owner):
    """(type dict, ROS 1 type to describe or None) of one genpy slot type."""
    m = _SLOT_RE.match(slot_type)
    if not m:
        raise ValueError(f"{owner}: field type {slot_type!r} does not parse")
    base, size = m.group(1), m.group(2)
    if base == "Header":
        base = "std_msgs/Header"
    nested_ros1 = None
    if base in _PRIMITIVE_IDS:
        type_id, nested_name = _PRIMITIVE_IDS[base], ""
    elif base in _BUILTINS:
        type_id, nested_name = _FIELD_TYPE_NESTED, _BUILTINS[base]
    else:
        if "/" not in base:
            raise ValueError(f"{owner}: field type {slot_type!r} has no package")
        type_id, nested_name = _FIELD_TYPE_NESTED, ros2_type_name(base)
        nested_ros1 = base
    capacity = 0
    if size is not None:
        if size == "":
            type_id += _UNBOUNDED_SEQUENCE
        else:
            type_id += _ARRAY
            capacity = int(size)
    return (
        {"type_id": type_id, "capacity": capacity, "string_capacity": 0, "nested_type_name": nested_name},
        nested_ros1,
    )


def _builtin_description(type_name):
    return {
        "type_name": type_name,
        "fields": [
            {"name": "sec", "type": {"type_id": 6, "capacity": 0, "string_capacity": 0, "nested_type_name": ""}},
            {"name": "nanosec", "type": {"type_id": 7, "capacity": 0, "string_capacity": 0, "nested_type_name": ""}},
        ],
    }


def _message_class(ros_type):
    import roslib.message  # the ROS 1 message classes (genpy), from the ROS environment

    cls = roslib.message.get_message_class(ros_type)
    if cls is None:
        raise ValueError(f"unknown ROS 1 message type {ros_type!r} (is its package built and sourced?)")
    return cls


def _individual_description(ros_type, slots):
    """The IndividualTypeDescription (as a dict) of a ROS 1 type given its (name, slot type) list,
    and the ROS 1 types its fields refer to."""
    renames = _FIELD_RENAMES.get(ros_type, {})
    fields, nested = [], []
    for name, slot_type in slots:
        if ros_type == "std_msgs/Header" and name == "seq":
            continue
        ftype, nested_ros1 = _field_type(slot_type, ros_type)
        fields.append({"name": renames.get(name, name), "type": ftype})
        if nested_ros1:
            nested.append(nested_ros1)
    if not fields:  # rosidl gives an empty message this one member
        fields.append(
            {
                "name": "structure_needs_at_least_one_member",
                "type": {"type_id": 3, "capacity": 0, "string_capacity": 0, "nested_type_name": ""},
            }
        )
    return {"type_name": ros2_type_name(ros_type), "fields": fields}, nested


def type_description(ros_type, slots_of=None):
    """The TypeDescription (type_description_interfaces/msg/TypeDescription, as a dict without the
    default values) of the ROS 2 type netloop uses for ROS 1 type ``ros_type``.

    ``slots_of(ros_type) -> [(field name, ROS 1 field type)]`` gives a type's fields; by default
    they are read from the ROS 1 message class (``__slots__`` and ``_slot_types``).
    """
    _split_type(ros_type)
    if slots_of is None:

        def slots_of(t):
            cls = _message_class(t)
            return list(zip(cls.__slots__, cls._slot_types))

    top, pending = _individual_description(ros_type, slots_of(ros_type))
    referenced = {}
    for field in top["fields"]:
        name = field["type"]["nested_type_name"]
        if name in (_BUILTIN_TIME, _BUILTIN_DURATION):
            referenced[name] = _builtin_description(name)
    pending = list(pending)
    seen = set()
    while pending:
        t = pending.pop()
        if t in seen:
            continue
        seen.add(t)
        desc, more = _individual_description(t, slots_of(t))
        referenced[desc["type_name"]] = desc
        for field in desc["fields"]:
            name = field["type"]["nested_type_name"]
            if name in (_BUILTIN_TIME, _BUILTIN_DURATION):
                referenced[name] = _builtin_description(name)
        pending.extend(more)
    referenced.pop(top["type_name"], None)
    return {
        "type_description": top,
        "referenced_type_descriptions": [referenced[k] for k in sorted(referenced)],
    }


def hash_type_description(description):
    """RIHS01 hash of a TypeDescription dict: SHA-256 of its JSON as rosidl_generator_type_description
    writes it for hashing (key order as built, ", " and ": " separators, ASCII)."""
    text = json.dumps(description, ensure_ascii=True, allow_nan=False, separators=(", ", ": "), sort_keys=False)
    return RIHS01_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()


def type_hash(ros_type, slots_of=None):
    """RIHS01 type hash ("RIHS01_<64 hex>") of the ROS 2 type of ROS 1 type ``ros_type``."""
    return hash_type_description(type_description(ros_type, slots_of))
