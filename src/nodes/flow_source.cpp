// flow_source: a perturbing flow of messages of a given size and period (roscpp).
//
// ~message  loop_sample       netloop/LoopSample padded so its serialized size is ~size_bytes
//           image             sensor_msgs/Image, ~width x ~height rgb8 (a moving gradient)
//           compressed_image  sensor_msgs/CompressedImage, JPEG files from ~frames_dir, cycled
// ~period [s], ~count (0 = until stopped), ~size_bytes, ~width, ~height, ~frames_dir,
// ~send_jitter [s] (default 0): each message is sent at k * period + a normal sample of this
// std, clipped to +-0.45 period so the order holds (~seed, default 1, seeds it),
// ~start_delay [s] after the first subscriber connects (~wait_for_subscribers, default true),
// ~connect_timeout [s], ~record_path (netloop-events/1 CSV, one tx row per message),
// ~publisher_queue_size [messages, default 10]: per subscriber connection, roscpp discards
// the oldest message beyond it (what it discards shows as missing seqs at the sink; see
// include/netloop/receive_stats.h for why the publisher itself cannot count them).
// Publishes on `flow` (remap it). Messages with a header carry seq and stamp there.
// ROS 2: with ~middleware (cyclonedds | fastdds | zenoh) `flow` goes over that middleware
// instead of roscpp (~middleware_config, ~domain_id, ~qos_*, ~status_path: see
// include/netloop/ros2/endpoint.h); waiting for subscribers then counts matched
// subscriptions. ROS 2's Header has no seq: images cross with it appended to frame_id
// ("camera_optical_frame#17"), which the receiving end takes back out (~carry_header_seq),
// so the sink records the same seq as over roscpp; the tx rows' bytes stay ROS 1 sizes.
// SIGINT/SIGTERM stop the sending; the node then keeps its connections open while what it
// published may still be under way (drainOutgoing, process_sockets.h): at most ~drain [s]
// (default 1), and with ~drain_until_acked (default true) only until every TCP connection has
// acknowledged everything sent, plus two round trips. The runner sets it false where relays
// carry the flow (they take the messages from the node's socket and still hold them); a UDPROS
// or ROS 2 middleware flow waits ~drain.
// Exit status: 0 done, 2 bad parameter, 3 no subscriber connected in time.
#include <netloop/LoopSample.h>
#include <ros/ros.h>
#include <sensor_msgs/CompressedImage.h>
#include <sensor_msgs/Image.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

#include "netloop/event_log.h"
#include "netloop/loop_node.h"
#include "netloop/process_sockets.h"
#include "netloop/ros2/endpoint.h"

namespace netloop {
namespace {

// SIGINT/SIGTERM stop the sending, not ROS: what was published still gets out (see run()).
std::atomic<bool> g_stop{false};
void requestStop(int) { g_stop = true; }
bool sending() { return ros::ok() && !g_stop; }

std::vector<std::vector<uint8_t>> loadFrames(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const auto ext = entry.path().extension().string();
    if (ext == ".jpg" || ext == ".jpeg") files.push_back(entry.path());
  }
  if (ec) exitWithConfigError("~frames_dir '" + dir + "': " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<std::vector<uint8_t>> frames;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    frames.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (frames.empty()) exitWithConfigError("~frames_dir '" + dir + "' holds no .jpg files");
  return frames;
}

template <class M>
uint32_t sizeOf(const M& m) {
  return ros::serialization::serializationLength(m);
}

int run() {
  std::signal(SIGINT, requestStop);
  std::signal(SIGTERM, requestStop);
  ros::NodeHandle nh, pnh("~");
  const std::string kind = pnh.param<std::string>("message", "loop_sample");
  const double period = requireNumber(pnh, "period", 0.1, Bound::Positive);
  const int count = static_cast<int>(requireNumber(pnh, "count", 0, Bound::NonNegative));
  const double start_delay = requireNumber(pnh, "start_delay", 0.0, Bound::NonNegative);
  const double connect_timeout = requireNumber(pnh, "connect_timeout", 15.0, Bound::Positive);
  const bool wait_subs = pnh.param("wait_for_subscribers", true);
  // Every parameter is read here, before the first message: a read asks the master, which may be
  // across the link, and an outage that begins once the flow is connected must not hold the
  // sending (the read would wait for the link to come back).
  const double send_jitter = requireNumber(pnh, "send_jitter", 0.0, Bound::NonNegative);
  const auto seed = static_cast<uint64_t>(requireNumber(pnh, "seed", 1, Bound::NonNegative));
  const double drain = requireNumber(pnh, "drain", 1.0, Bound::NonNegative);
  const bool drain_until_acked = pnh.param("drain_until_acked", true);
  EventLog log(pnh.param<std::string>("record_path", ""));
  const std::string topic = nh.resolveName("flow");
  const uint32_t queue = requireQueueDepths(pnh, 10).publisher;
  ros2::Endpoints endpoints(nh, pnh);

  std::function<uint32_t()> subscribers;  // connected (roscpp) or matched (middleware)
  std::function<void(uint32_t, const ros::WallTime&)> publish;
  if (kind == "loop_sample") {
    const double size = requireNumber(pnh, "size_bytes", 1024, Bound::Positive);
    const auto pub = endpoints.publisher<LoopSample>("flow", queue);
    subscribers = [pub] { return pub.matched(); };
    LoopSample probe = makeSample(0, 0.0, ros::WallTime::now(), nullptr, 0);
    const uint32_t overhead = sizeOf(probe);
    const uint32_t padding = size > overhead ? static_cast<uint32_t>(size) - overhead : 0;
    publish = [&, pub, padding](uint32_t seq, const ros::WallTime& now) {
      const LoopSample m = makeSample(seq, 0.0, now, nullptr, padding);
      pub.publish(m);
      log.write(EventRow{"tx", topic.c_str(), seq, 0.0, toNs(now), -1, -1, -1, sizeOf(m)});
    };
  } else if (kind == "image") {
    const int w = static_cast<int>(requireNumber(pnh, "width", 320, Bound::Positive));
    const int h = static_cast<int>(requireNumber(pnh, "height", 240, Bound::Positive));
    const auto pub = endpoints.publisher<sensor_msgs::Image>("flow", queue);
    subscribers = [pub] { return pub.matched(); };
    auto img = boost::make_shared<sensor_msgs::Image>();
    img->width = w;
    img->height = h;
    img->encoding = "rgb8";
    img->step = 3 * w;
    img->data.resize(static_cast<size_t>(3) * w * h);
    img->header.frame_id = "camera_optical_frame";
    publish = [&, pub, img, w, h](uint32_t seq, const ros::WallTime& now) {
      for (int y = 0; y < h; ++y)  // a gradient that moves one pixel per frame
        for (int x = 0; x < w; ++x) {
          uint8_t* px = &img->data[3 * (static_cast<size_t>(y) * w + x)];
          px[0] = static_cast<uint8_t>(x + seq);
          px[1] = static_cast<uint8_t>(y);
          px[2] = static_cast<uint8_t>(x ^ y);
        }
      img->header.seq = seq;
      img->header.stamp = asTime(now);
      pub.publish(*img);
      log.write(EventRow{"tx", topic.c_str(), seq, 0.0, toNs(now), -1, -1, -1, sizeOf(*img)});
    };
  } else if (kind == "compressed_image") {
    const auto frames = loadFrames(pnh.param<std::string>("frames_dir", ""));
    const auto pub = endpoints.publisher<sensor_msgs::CompressedImage>("flow", queue);
    subscribers = [pub] { return pub.matched(); };
    publish = [&, pub, frames](uint32_t seq, const ros::WallTime& now) {
      sensor_msgs::CompressedImage m;
      m.header.seq = seq;
      m.header.stamp = asTime(now);
      m.header.frame_id = "camera_optical_frame";
      m.format = "jpeg";
      m.data = frames[seq % frames.size()];
      pub.publish(m);
      log.write(EventRow{"tx", topic.c_str(), seq, 0.0, toNs(now), -1, -1, -1, sizeOf(m)});
    };
  } else {
    exitWithConfigError("parameter " + pnh.resolveName("message") + ": unknown message kind '" + kind +
                        "'; allowed: loop_sample, image, compressed_image");
  }
  endpoints.ready();

  if (wait_subs) {
    const ros::WallTime give_up = ros::WallTime::now() + ros::WallDuration(connect_timeout);
    while (sending() && subscribers() == 0) {
      if (ros::WallTime::now() > give_up) {
        ROS_FATAL("flow_source %s: no subscriber within %.1f s", topic.c_str(), connect_timeout);
        return 3;
      }
      ros::WallDuration(0.01).sleep();
    }
  }
  for (const ros::WallTime until = ros::WallTime::now() + ros::WallDuration(start_delay);
       sending() && ros::WallTime::now() < until;)
    ros::WallDuration(0.01).sleep();
  ROS_INFO("flow_source %s: %s every %.3f s, %d messages, publisher queue %u%s", topic.c_str(), kind.c_str(), period,
           count, queue, endpoints.native() ? (", over " + endpoints.describe("")).c_str() : "");
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> offset(0.0, send_jitter > 0 ? send_jitter : 1.0);  // std must be > 0
  const double max_offset = send_jitter > 0 ? 0.45 * period : 0.0;  // keeps the messages in order
  const ros::WallTime t0 = ros::WallTime::now() + ros::WallDuration(max_offset);
  for (int k = 0; sending() && (count == 0 || k < count); ++k) {
    const double jitter = send_jitter > 0 ? std::clamp(offset(rng), -max_offset, max_offset) : 0.0;
    const ros::WallTime due = t0 + ros::WallDuration(k * period + jitter);
    // the time left is read once: a WallDuration that came out negative (due passed between two
    // reads of the clock) sleeps ~136 years, as ros_wallsleep takes unsigned seconds
    for (double left; sending() && (left = (due - ros::WallTime::now()).toSec()) > 0;)
      ros::WallDuration(std::min(0.01, left)).sleep();
    if (sending()) publish(static_cast<uint32_t>(k), ros::WallTime::now());
  }
  // Keep the connections open while the last messages drain (a 64 KB message needs ~0.1 s
  // on a 6 Mbit/s link), so the end of a run is not counted as loss.
  const Drain drained = drainOutgoing(drain, drain_until_acked && !endpoints.native());
  ROS_INFO("flow_source %s: drained for %.3f s (%s)", topic.c_str(), drained.waited_s,
           drained.acked ? "everything sent acknowledged" : "the whole ~drain");
  endpoints.finish();
  ros::shutdown();
  return 0;
}

}  // namespace
}  // namespace netloop

int main(int argc, char** argv) {
  return netloop::runNode(argc, argv, "flow_source", netloop::run, ros::init_options::NoSigintHandler);
}
