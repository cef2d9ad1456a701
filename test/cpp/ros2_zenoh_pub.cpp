// A small publisher (or subscriber) on netloop's zenoh middleware, for test/test_ros2_zenoh_peer.py:
// an independent Zenoh peer (the eclipse-zenoh Python package) must receive what it publishes, and
// it must receive what that peer publishes.
//
//   ros2_zenoh_pub CONFIG_JSON5 DOMAIN TOPIC TYPE TYPE_HASH TEXT COUNT [reliable|best_effort]
//       publishes COUNT std_msgs/String-shaped samples (CDR of TEXT) every 100 ms, with ROS 2's
//       default QoS or it made best effort, once a
//       subscriber matches (at most 10 s), printing "matched N" and "sent I" lines, and at the end
//       "matched_at_end N" (the subscriptions it counts then), then exits 0. Node "ros2_zenoh_pub".
//   ros2_zenoh_pub --sub CONFIG_JSON5 DOMAIN TOPIC TYPE TYPE_HASH COUNT
//       subscribes, prints "ready", then "received <hex of the CDR bytes>" per sample, and at the
//       end "matched_at_end N" (the publishers it counts); exits 0 after COUNT samples, 1 when they
//       do not come within 15 s. Node "ros2_zenoh_sub".
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "netloop/ros2/middleware.h"

using namespace netloop::ros2;

static int subscribe(char** argv) {
  ParticipantConfig c;
  c.middleware = "zenoh";
  c.config_file = argv[0];
  c.domain_id = std::atoi(argv[1]);
  c.node_name = "ros2_zenoh_sub";
  c.type_hashes[argv[3]] = argv[4];
  const int count = std::atoi(argv[5]);
  std::atomic<int> received{0};
  try {
    auto participant = createParticipant(c);
    auto sub = participant->createSubscription(argv[2], argv[3], Qos{}, [&](const uint8_t* cdr, size_t len, int64_t) {
      std::string hex;
      char b[3];
      for (size_t i = 0; i < len; ++i) {
        std::snprintf(b, sizeof b, "%02x", cdr[i]);
        hex += b;
      }
      std::printf("received %s\n", hex.c_str());
      std::fflush(stdout);
      ++received;
    });
    std::printf("ready\n");
    std::fflush(stdout);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (received < count && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::printf("samples_received %lld\n", static_cast<long long>(participant->stats().samples_received));
    std::printf("matched_at_end %zu\n", sub->matched());
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ros2_zenoh_pub --sub: %s\n", e.what());
    return 1;
  }
  return received >= count ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 8 && std::string(argv[1]) == "--sub") return subscribe(argv + 2);
  const std::string reliability = argc == 9 ? argv[8] : "reliable";
  if ((argc != 8 && argc != 9) || (reliability != "reliable" && reliability != "best_effort")) {
    std::fprintf(stderr,
                 "usage: ros2_zenoh_pub CONFIG_JSON5 DOMAIN TOPIC TYPE TYPE_HASH TEXT COUNT [reliable|best_effort]\n"
                 "       ros2_zenoh_pub --sub CONFIG_JSON5 DOMAIN TOPIC TYPE TYPE_HASH COUNT\n");
    return 2;
  }
  ParticipantConfig c;
  c.middleware = "zenoh";
  c.config_file = argv[1];
  c.domain_id = std::atoi(argv[2]);
  c.node_name = "ros2_zenoh_pub";
  c.type_hashes[argv[4]] = argv[5];
  const std::string text = argv[6];
  const int count = std::atoi(argv[7]);
  try {
    auto participant = createParticipant(c);
    Qos qos;
    if (reliability == "best_effort") qos.reliability = Reliability::BestEffort;
    auto pub = participant->createPublisher(argv[3], argv[4], qos);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (pub->matched() == 0 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::printf("matched %zu\n", pub->matched());
    std::fflush(stdout);
    std::vector<uint8_t> cdr = {0x00, 0x01, 0x00, 0x00};
    const uint32_t n = static_cast<uint32_t>(text.size() + 1);
    for (int i = 0; i < 4; ++i) cdr.push_back(static_cast<uint8_t>(n >> (8 * i)));
    cdr.insert(cdr.end(), text.begin(), text.end());
    cdr.push_back(0);
    for (int i = 1; i <= count; ++i) {
      pub->publish(cdr);
      std::printf("sent %d\n", i);
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const WireStats s = participant->stats();
    std::printf("samples_sent %lld\n", static_cast<long long>(s.samples_sent));
    std::printf("matched_at_end %zu\n", pub->matched());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ros2_zenoh_pub: %s\n", e.what());
    return 1;
  }
  return 0;
}
