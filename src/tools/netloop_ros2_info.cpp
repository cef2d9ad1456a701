// netloop_ros2_info: prints the ROS 2 middlewares this build has, one per line, in the order
// of netloop::ros2::availableMiddlewares() (what the nodes accept as ~middleware). Exit 0.
#include <cstdio>

#include "netloop/ros2/middleware.h"

int main() {
  for (const auto& name : netloop::ros2::availableMiddlewares()) std::printf("%s\n", name.c_str());
  return 0;
}
