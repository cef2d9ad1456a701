// ROS 2's QoS profiles and the words that name QoS values (see include/netloop/ros2/middleware.h).
#include <stdexcept>

#include "netloop/ros2/middleware.h"

namespace netloop {
namespace ros2 {

Qos qosProfile(const std::string& name) {
  Qos q;
  if (name == "default") {
    q.reliability = Reliability::Reliable;
    q.durability = Durability::Volatile;
    q.depth = 10;
  } else if (name == "sensor_data") {
    q.reliability = Reliability::BestEffort;
    q.durability = Durability::Volatile;
    q.depth = 5;
  } else if (name == "transient_local") {
    q.reliability = Reliability::Reliable;
    q.durability = Durability::TransientLocal;
    q.depth = 10;
  } else {
    throw std::invalid_argument("unknown QoS profile '" + name + "' (allowed: default, sensor_data, transient_local)");
  }
  return q;
}

Reliability parseReliability(const std::string& s) {
  if (s == "reliable") return Reliability::Reliable;
  if (s == "best_effort") return Reliability::BestEffort;
  throw std::invalid_argument("unknown QoS reliability '" + s + "' (allowed: reliable, best_effort)");
}

Durability parseDurability(const std::string& s) {
  if (s == "volatile") return Durability::Volatile;
  if (s == "transient_local") return Durability::TransientLocal;
  throw std::invalid_argument("unknown QoS durability '" + s + "' (allowed: volatile, transient_local)");
}

}  // namespace ros2
}  // namespace netloop
