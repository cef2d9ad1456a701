// ROS 2's names for ROS 1 topics and types (see include/netloop/ros2/names.h).
#include "netloop/ros2/names.h"

#include <stdexcept>

namespace netloop {
namespace ros2 {

namespace {
std::string withoutLeadingSlash(const std::string& topic) {
  if (topic.empty() || topic == "/") throw std::invalid_argument("empty ROS topic name '" + topic + "'");
  size_t b = topic.find_first_not_of('/');
  std::string t = topic.substr(b);
  while (!t.empty() && t.back() == '/') t.pop_back();
  return t;
}
}  // namespace

std::string ddsTopicName(const std::string& ros_topic) { return "rt/" + withoutLeadingSlash(ros_topic); }

std::string ddsTypeName(const std::string& ros_type) {
  // "pkg/Type" (ROS 1) or "pkg/msg/Type" (ROS 2).
  size_t s1 = ros_type.find('/');
  std::string pkg, name;
  if (s1 != std::string::npos) {
    pkg = ros_type.substr(0, s1);
    std::string rest = ros_type.substr(s1 + 1);
    if (rest.compare(0, 4, "msg/") == 0) rest = rest.substr(4);
    name = rest;
  }
  if (pkg.empty() || name.empty() || name.find('/') != std::string::npos)
    throw std::invalid_argument("ROS type '" + ros_type + "' is not <package>/<Type>");
  return pkg + "::msg::dds_::" + name + "_";
}

std::string zenohKeyExpr(int domain_id, const std::string& ros_topic, const std::string& ros_type,
                         const std::string& type_hash) {
  return std::to_string(domain_id) + "/" + withoutLeadingSlash(ros_topic) + "/" + ddsTypeName(ros_type) + "/" +
         (type_hash.empty() ? std::string("TypeHashNotSupported") : type_hash);
}

}  // namespace ros2
}  // namespace netloop
