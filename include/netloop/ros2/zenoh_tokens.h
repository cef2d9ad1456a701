// rmw_zenoh's ROS graph on Zenoh: the liveliness tokens by which ROS 2 nodes on rmw_zenoh_cpp
// find each other's nodes, publishers and subscriptions (what `ros2 node list` and `ros2 topic
// list -t` show), formed as rmw_zenoh_cpp 0.2.10 (Jazzy) forms them in
// src/detail/liveliness_utils.cpp (Entity's constructor, qos_to_keyexpr, mangle_name) with the
// defaults of src/detail/qos.cpp:
//
//   node:      @ros2_lv/<domain>/<zid>/<node id>/<node id>/NN/<enclave>/<namespace>/<node name>
//   endpoint:  @ros2_lv/<domain>/<zid>/<node id>/<entity id>/<MP|MS>/<enclave>/<namespace>/
//              <node name>/<topic>/<type>/<type hash>/<qos>
//
//  - <zid>: the Zenoh session's id as Zenoh prints it; ids count from 0 per session (a node takes
//    the next id, each of its publishers and subscriptions the following ones), as rmw_zenoh's
//    context counts them;
//  - enclave, namespace, node name and topic with every '/' written '%' ("/" -> "%",
//    "/flows/image" -> "%flows%image");
//  - <type>: the DDS type name ("std_msgs::msg::dds_::String_"), <type hash>: "RIHS01_<hex>",
//    the same two as in the topic's key expression (names.h);
//  - <qos>: "<reliability>:<durability>:<history>,<depth>:<deadline s>,<ns>:<lifespan s>,<ns>:
//    <liveliness>,<lease s>,<ns>", each field empty when it equals rmw_zenoh's default (reliable,
//    volatile, keep last, depth 42, infinite durations, automatic liveliness), else the value of
//    rmw's enum (reliable 1, best effort 2; transient local 1, volatile 2; keep last 1). Those
//    netloop sets: ROS 2's default profile is "::,10:,:,:,,", sensor_data "2::,5:,:,:,,",
//    transient_local ":1:,10:,:,:,,".
#pragma once

#include <cstdint>
#include <string>

#include "netloop/ros2/middleware.h"

namespace netloop {
namespace ros2 {

/// The node a participant stands for on rmw_zenoh's graph.
struct ZenohNode {
  int domain_id = 0;
  std::string zid;              // the session's id, as Zenoh prints it
  uint64_t id = 0;              // the node's id in its session
  std::string enclave = "/";    // rcl's default enclave
  std::string ns = "/";         // ROS namespace, "/" or "/a/b"
  std::string name;             // node name without namespace
};

enum class ZenohEntity { Publisher, Subscription };

/// A ROS 1 node name ("/robot/flow_sink", "plant") as a ROS 2 namespace and name
/// ("/robot", "flow_sink"; "/", "plant").
void splitNodeName(const std::string& full, std::string* ns, std::string* name);

/// '/' written '%' (rmw_zenoh's mangle_name).
std::string mangleName(const std::string& name);

/// The QoS field of an endpoint's token (see the top).
std::string zenohQosField(const Qos& qos);

/// The node's own token.
std::string zenohNodeToken(const ZenohNode& node);

/// A publisher's or a subscription's token. `type_hash` empty: "TypeHashNotSupported", as in the
/// topic's key expression.
std::string zenohEndpointToken(const ZenohNode& node, uint64_t entity_id, ZenohEntity kind,
                               const std::string& ros_topic, const std::string& ros_type,
                               const std::string& type_hash, const Qos& qos);

/// The key expression matching the tokens of every `kind` endpoint of the topic (same domain,
/// topic, type and hash), whichever node, session and QoS: what a publisher counts as its
/// matched subscriptions and a subscription as its matched publishers.
std::string zenohEndpointPattern(int domain_id, ZenohEntity kind, const std::string& ros_topic,
                                 const std::string& ros_type, const std::string& type_hash);

}  // namespace ros2
}  // namespace netloop
