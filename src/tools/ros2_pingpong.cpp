// ros2_pingpong: a middleware's own round trip through libnetloop_ros2's participant, no ROS node
// around it: what Cyclone DDS's ddsperf ping/pong measures, with each direction timed on its own
// (the hosts of a testbed share one clock). `make bench` runs it beside ddsperf
// (src/netloop/transports/ros2_bench.py) to tell the middleware's one-way time from the nodes'.
//
//   ros2_pingpong pong MIDDLEWARE CONFIG DOMAIN SECONDS
//       answers every sample of /netloop_ping on /netloop_pong from the middleware's receive
//       thread (as ddsperf's pong in listener mode), for SECONDS
//   ros2_pingpong ping MIDDLEWARE CONFIG DOMAIN COUNT PERIOD_S SIZE
//       once both topics match, publishes COUNT samples of SIZE bytes on /netloop_ping, one every
//       PERIOD_S seconds (sleeping between them, as ddsperf's ping at a rate and a flow_source),
//       then prints one JSON line of medians and 90th percentiles [us]:
//         ping_one_way   ping's write call -> the pong's callback (a write after a sleep)
//         pong_one_way   the pong's write call -> ping's callback (a write from the thread that
//                        has just received)
//         round_trip     ping's write call -> ping's callback (ddsperf's figure)
//         ping_write     the ping's write call itself
//       and "answered" (of COUNT). Exit 0; 1 when nothing matched within 20 s; 2 bad arguments.
// A sample: the CDR encapsulation header, then three int64 times [ns] (ping written, pong
// received, pong written) and zeros up to SIZE bytes. CONFIG: the middleware's file, as a node's
// ~middleware_config ("" for the library's defaults).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "netloop/ros2/middleware.h"

namespace {

using namespace netloop::ros2;
using Clock = std::chrono::steady_clock;

const char kType[] = "netloop/LoopSample";  // only its name: the bytes are never converted
const size_t kPingWritten = 4, kPongReceived = 12, kPongWritten = 20, kHeader = 28;

int64_t wallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t at(const uint8_t* p, size_t offset) {
  int64_t v;
  std::memcpy(&v, p + offset, 8);
  return v;
}

void put(std::vector<uint8_t>& b, size_t offset, int64_t v) { std::memcpy(b.data() + offset, &v, 8); }

std::unique_ptr<Participant> participant(char** argv, const char* role) {
  ParticipantConfig c;
  c.middleware = argv[0];
  c.config_file = argv[1];
  c.domain_id = std::atoi(argv[2]);
  c.node_name = role;
  return createParticipant(c);
}

bool waitMatched(const std::function<bool()>& matched) {
  const auto end = Clock::now() + std::chrono::seconds(20);
  while (!matched()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

int pong(char** argv) {
  auto p = participant(argv, "ros2_pong");
  auto out = p->createPublisher("/netloop_pong", kType, Qos{});
  Publisher* raw = out.get();
  auto in = p->createSubscription("/netloop_ping", kType, Qos{}, [raw](const uint8_t* cdr, size_t len, int64_t now) {
    if (len < kHeader) return;
    std::vector<uint8_t> answer(cdr, cdr + len);
    put(answer, kPongReceived, now);
    put(answer, kPongWritten, wallNs());
    raw->publish(answer);
  });
  std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(argv[3])));
  in.reset();  // no callback publishes after this
  return 0;
}

struct Quantiles {
  std::vector<double> us;
  void add(int64_t ns) { us.push_back(ns * 1e-3); }
  std::string json() {
    if (us.empty()) return "null";
    std::sort(us.begin(), us.end());
    char b[96];
    std::snprintf(b, sizeof b, "{\"p50\": %.1f, \"p90\": %.1f}", us[us.size() / 2], us[us.size() * 9 / 10]);
    return b;
  }
};

int ping(char** argv) {
  const int count = std::atoi(argv[3]);
  const double period = std::atof(argv[4]);
  const size_t size = std::max<size_t>(kHeader, std::strtoul(argv[5], nullptr, 10));
  auto p = participant(argv, "ros2_ping");
  std::mutex mu;
  Quantiles ping_oneway, pong_oneway, round_trip, ping_write;
  int answered = 0;
  auto in = p->createSubscription("/netloop_pong", kType, Qos{}, [&](const uint8_t* cdr, size_t len, int64_t now) {
    if (len < kHeader) return;
    std::lock_guard<std::mutex> lock(mu);
    ping_oneway.add(at(cdr, kPongReceived) - at(cdr, kPingWritten));
    pong_oneway.add(now - at(cdr, kPongWritten));
    round_trip.add(now - at(cdr, kPingWritten));
    ++answered;
  });
  auto out = p->createPublisher("/netloop_ping", kType, Qos{});
  if (!waitMatched([&] { return in->matched() > 0 && out->matched() > 0; })) {
    std::fprintf(stderr, "ros2_pingpong ping: no pong matched within 20 s\n");
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the pong's side matched too
  std::vector<uint8_t> sample(size, 0);
  sample[1] = 1;  // CDR little endian
  const auto t0 = Clock::now();
  for (int k = 0; k < count; ++k) {
    std::this_thread::sleep_until(t0 + std::chrono::duration<double>(k * period));
    const int64_t before = wallNs();
    put(sample, kPingWritten, before);
    out->publish(sample);
    const int64_t after = wallNs();
    std::lock_guard<std::mutex> lock(mu);
    ping_write.add(after - before);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  in.reset();
  std::printf("{\"sent\": %d, \"answered\": %d, \"ping_one_way_us\": %s, \"pong_one_way_us\": %s, "
              "\"round_trip_us\": %s, \"ping_write_us\": %s}\n",
              count, answered, ping_oneway.json().c_str(), pong_oneway.json().c_str(), round_trip.json().c_str(),
              ping_write.json().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "pong" && argc == 6) return pong(argv + 2);
    if (mode == "ping" && argc == 8) return ping(argv + 2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ros2_pingpong %s: %s\n", mode.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: ros2_pingpong pong MIDDLEWARE CONFIG DOMAIN SECONDS\n"
               "       ros2_pingpong ping MIDDLEWARE CONFIG DOMAIN COUNT PERIOD_S SIZE\n");
  return 2;
}
