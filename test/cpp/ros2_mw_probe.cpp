// ros2_mw_probe MIDDLEWARE DOMAIN [HOLD_S]: one participant of MIDDLEWARE publishes
// std_msgs/String samples on /netloop_probe and takes them back (at most 10 s), stays HOLD_S
// seconds more (default 0: a ROS 2 node may look at it meanwhile), then prints one
// JSON line: {"middleware", "received", "matched", "libraries": [the DDS and rcl libraries this
// process has mapped]}. test/test_ros2_rmw_isolation.py reads it to prove that a process using
// the rmw_fastrtps_cpp plug-in (Fast DDS 2.14) never has the fastdds plug-in's Fast DDS 2.9, nor
// the other way round. Exit 0 when a sample came back, 1 when none did, 2 on a refusal.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "netloop/ros2/middleware.h"

using namespace netloop::ros2;

static std::set<std::string> mappedLibraries() {
  std::set<std::string> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    size_t slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    std::string file = line.substr(slash + 1);
    if (file.find("libfastrtps") == 0 || file.find("libfastcdr") == 0 || file.find("librcl.") == 0 ||
        file.find("librmw") == 0 || file.find("libddsc") == 0 || file.find("libnetloop_ros2") == 0)
      out.insert(file);
  }
  return out;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ros2_mw_probe MIDDLEWARE DOMAIN [HOLD_S]\n");
    return 2;
  }
  ParticipantConfig c;
  c.middleware = argv[1];
  c.domain_id = std::atoi(argv[2]);
  const double hold_s = argc > 3 ? std::atof(argv[3]) : 0.0;
  c.node_name = "ros2_mw_probe";
  std::atomic<int> received{0};
  size_t matched = 0;
  try {
    auto participant = createParticipant(c);
    Qos qos;
    auto sub = participant->createSubscription("/netloop_probe", "std_msgs/String", qos,
                                               [&](const uint8_t*, size_t, int64_t) { received++; });
    auto pub = participant->createPublisher("/netloop_probe", "std_msgs/String", qos);
    // CDR of std_msgs/String "probe": encapsulation (CDR little endian), length with the NUL, text
    const std::vector<uint8_t> cdr = {0, 1, 0, 0, 6, 0, 0, 0, 'p', 'r', 'o', 'b', 'e', 0};
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (received < 3 && std::chrono::steady_clock::now() < deadline) {
      if (pub->matched() > 0) pub->publish(cdr);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    matched = pub->matched();
    std::this_thread::sleep_for(std::chrono::duration<double>(hold_s));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ros2_mw_probe: %s\n", e.what());
    return 2;
  }
  std::string libs;
  for (const auto& l : mappedLibraries()) libs += (libs.empty() ? "\"" : ", \"") + l + "\"";
  std::printf("{\"middleware\": \"%s\", \"received\": %d, \"matched\": %zu, \"libraries\": [%s]}\n", argv[1],
              received.load(), matched, libs.c_str());
  return received > 0 ? 0 : 1;
}
