// Private to libnetloop_ros2: each middleware's .cpp registers its factory with a static object.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "netloop/ros2/middleware.h"

namespace netloop {
namespace ros2 {

using MiddlewareFactory = std::function<std::unique_ptr<Participant>(const ParticipantConfig&)>;

/// Registers `factory` under `name` ("cyclonedds", "fastdds", "zenoh", "rmw_fastrtps_cpp");
/// returns true so that it can initialise a static: `static const bool registered =
/// registerMiddleware("x", make);` (in a plug-in, libnetloop_ros2_mw_<name>.so, too: factory.cpp).
bool registerMiddleware(const std::string& name, MiddlewareFactory factory);

}  // namespace ros2
}  // namespace netloop
