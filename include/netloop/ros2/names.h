// ROS 2's names for a ROS 1 topic and type, as the rmw implementations form them.
#pragma once

#include <string>

namespace netloop {
namespace ros2 {

/// DDS topic of a ROS topic: "/y" -> "rt/y", "/flows/image" -> "rt/flows/image"
/// (rmw_cyclonedds_cpp and rmw_fastrtps_cpp: the "rt" prefix for topics, no leading slash).
std::string ddsTopicName(const std::string& ros_topic);

/// DDS type of a ROS type: "netloop/LoopSample" -> "netloop::msg::dds_::LoopSample_",
/// "sensor_msgs/CompressedImage" -> "sensor_msgs::msg::dds_::CompressedImage_".
/// Throws std::invalid_argument for a name that is not "<package>/<Type>".
std::string ddsTypeName(const std::string& ros_type);

/// Zenoh key expression of a topic as rmw_zenoh forms it:
/// "<domain>/<topic without leading slash>/<dds type name>/<type hash>", e.g.
/// "0/chatter/std_msgs::msg::dds_::String_/RIHS01_df66...". `type_hash` is the RIHS01 string the
/// runner computed (netloop.ros2.names.type_hash); empty gives "TypeHashNotSupported" as
/// rmw_zenoh writes for types without one.
std::string zenohKeyExpr(int domain_id, const std::string& ros_topic, const std::string& ros_type,
                         const std::string& type_hash);

}  // namespace ros2
}  // namespace netloop
