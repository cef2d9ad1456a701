// Test helpers shared by the ROS 2 gtests: a roscpp message's ROS 1 bytes and its parsed layout.
#pragma once

#include <ros/message_traits.h>
#include <ros/serialization.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "netloop/ros2/cdr.h"

namespace netloop {
namespace testing {

/// The ROS 1 serialized bytes of `m`.
template <class M>
std::vector<uint8_t> serialize(const M& m) {
  std::vector<uint8_t> b(ros::serialization::serializationLength(m));
  ros::serialization::OStream s(b.data(), b.size());
  ros::serialization::serialize(s, m);
  return b;
}

/// The layout of `M` from its roscpp type name and full definition.
template <class M>
std::shared_ptr<const ros2::MessageLayout> layoutOf() {
  return ros2::MessageLayout::parse(ros::message_traits::DataType<M>::value(),
                                    ros::message_traits::Definition<M>::value());
}

}  // namespace testing
}  // namespace netloop
