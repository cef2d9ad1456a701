// rmw_zenoh's liveliness tokens (include/netloop/ros2/zenoh_tokens.h).
#include "netloop/ros2/zenoh_tokens.h"

#include <stdexcept>

#include "netloop/ros2/names.h"

namespace netloop {
namespace ros2 {

namespace {

const char kAdminSpace[] = "@ros2_lv";
const int kDefaultDepth = 42;  // rmw_zenoh's default history depth (src/detail/qos.cpp)

/// rmw's enum values (rmw/types.h) for the policies netloop sets.
const char* reliabilityValue(Reliability r) { return r == Reliability::Reliable ? "1" : "2"; }
const char* durabilityValue(Durability d) { return d == Durability::TransientLocal ? "1" : "2"; }

/// "/y" -> "/y", "y" -> "/y", "/a/b/" -> "/a/b": the fully qualified ROS 2 topic name.
std::string qualifiedTopic(const std::string& ros_topic) {
  std::string t = ros_topic;
  while (t.size() > 1 && t.back() == '/') t.pop_back();
  if (t.empty() || t == "/") throw std::invalid_argument("empty ROS topic name '" + ros_topic + "'");
  return t.front() == '/' ? t : "/" + t;
}

const char* entityCode(ZenohEntity kind) { return kind == ZenohEntity::Publisher ? "MP" : "MS"; }

std::string hashOrNone(const std::string& type_hash) {
  return type_hash.empty() ? std::string("TypeHashNotSupported") : type_hash;
}

/// Everything up to the node name, with the entity's id and code.
std::string nodePart(const ZenohNode& node, uint64_t entity_id, const char* code) {
  return std::string(kAdminSpace) + "/" + std::to_string(node.domain_id) + "/" + node.zid + "/" +
         std::to_string(node.id) + "/" + std::to_string(entity_id) + "/" + code + "/" + mangleName(node.enclave) +
         "/" + mangleName(node.ns) + "/" + mangleName(node.name);
}

/// topic, type and hash, as the last chunks but the QoS.
std::string topicPart(const std::string& ros_topic, const std::string& ros_type, const std::string& type_hash) {
  return mangleName(qualifiedTopic(ros_topic)) + "/" + ddsTypeName(ros_type) + "/" + hashOrNone(type_hash);
}

}  // namespace

void splitNodeName(const std::string& full, std::string* ns, std::string* name) {
  std::string n = full;
  while (n.size() > 1 && n.back() == '/') n.pop_back();
  const size_t slash = n.rfind('/');
  if (slash == std::string::npos) {
    *ns = "/";
    *name = n;
  } else {
    *ns = slash == 0 ? "/" : n.substr(0, slash);
    *name = n.substr(slash + 1);
  }
  if (name->empty()) throw std::invalid_argument("node name '" + full + "' has no base name");
}

std::string mangleName(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (c == '/') c = '%';
  return out;
}

std::string zenohQosField(const Qos& qos) {
  std::string f;
  if (qos.reliability != Reliability::Reliable) f += reliabilityValue(qos.reliability);
  f += ":";
  if (qos.durability != Durability::Volatile) f += durabilityValue(qos.durability);
  f += ":";  // history: always KEEP_LAST, rmw_zenoh's default
  f += ",";
  if (qos.depth != kDefaultDepth) f += std::to_string(qos.depth);
  f += ":,:,:,,";  // deadline, lifespan, liveliness and its lease: the defaults
  return f;
}

std::string zenohNodeToken(const ZenohNode& node) { return nodePart(node, node.id, "NN"); }

std::string zenohEndpointToken(const ZenohNode& node, uint64_t entity_id, ZenohEntity kind,
                               const std::string& ros_topic, const std::string& ros_type,
                               const std::string& type_hash, const Qos& qos) {
  return nodePart(node, entity_id, entityCode(kind)) + "/" + topicPart(ros_topic, ros_type, type_hash) + "/" +
         zenohQosField(qos);
}

std::string zenohEndpointPattern(int domain_id, ZenohEntity kind, const std::string& ros_topic,
                                 const std::string& ros_type, const std::string& type_hash) {
  // zid, node id, entity id; the code; enclave, namespace, node name; ...; QoS
  return std::string(kAdminSpace) + "/" + std::to_string(domain_id) + "/*/*/*/" + entityCode(kind) + "/*/*/*/" +
         topicPart(ros_topic, ros_type, type_hash) + "/*";
}

}  // namespace ros2
}  // namespace netloop
