// ros2_bridge: one per host, carries the host's crossing ROS 1 topics over a ROS 2 middleware
// (Cyclone DDS, Fast DDS or Zenoh), as a ros1_bridge + DDS (or a Zenoh ROS 1 bridge) deployment
// does: the ROS 1 nodes stay as they are, the bridges speak the middleware between the hosts.
//
//   ~out_topics  topics leaving the host: each is subscribed on ROS 1 (topic_tools::ShapeShifter
//                over TCPROS with TCP_NODELAY, queue ~queue_size) and every message is
//                converted to CDR and published on the middleware under ROS 2's names
//                (rt/<topic>, <pkg>::msg::dds_::<Type>_)
//   ~in_topics   topics arriving: each is subscribed on the middleware and every sample is
//                republished on ROS 1, advertised at start (no message lost while the ROS 1
//                subscribers connect), from the middleware's thread
// Each is a list of {topic, datatype, md5sum, definition} (md5sum needed for in_topics; the
// full definition as ROS 1's connection header carries it), with optional per-topic QoS
// overrides {reliability: reliable|best_effort, durability: volatile|transient_local, depth}.
// A message of another type than configured on an out topic is dropped (type_mismatch).
// ~queue_size [messages, default 100]: roscpp's queue of each ROS 1 subscription and publisher.
//
// The middleware: ~middleware (required here), ~middleware_config, ~domain_id, ~qos_*,
// ~type_hashes, ~status_path, ~carry_header_seq (include/netloop/ros2/endpoint.h: the status file
// says when every topic is matched, first_rx_ns per in topic and the middleware's WireStats).
//
// Statistics as the other relays (src/relays/relay_stats.h): netloop/RelayStats, role
// "ros2_bridge", every ~stats_period s (default 1) on ~stats_topic (/netloop_relay/stats) and
// as one JSON line in ~stats_path (records/relay_<process>_stats.jsonl); per topic in_msgs /
// in_bytes (taken in: ROS 1 messages of an out topic, middleware samples of an in topic, ROS 1
// serialized bytes), out_msgs / out_bytes (out topics: samples published, CDR bytes),
// published (in topics: republished on ROS 1), send_errors (a message that does not convert).
// The JSON line adds "middleware", "matched" {topic: count} and "wire" (WireStats, -1 where the
// library does not expose a figure).
// Exit status: 0 done, 2 bad parameter.
#include <fcntl.h>
#include <ros/ros.h>
#include <topic_tools/shape_shifter.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

#include "netloop/loop_node.h"
#include "netloop/ros2/endpoint.h"
#include "relay_ros.h"
#include "relay_stats.h"

namespace netloop {
namespace relay {
namespace {

struct BridgeTopic {
  std::string topic, datatype, md5sum, definition;
  bool has_qos = false;
  ros2::Qos qos;
  bool outbound = false;
  std::atomic<uint64_t> in_msgs{0}, in_bytes{0}, out_msgs{0}, out_bytes{0}, published{0}, send_errors{0},
      type_mismatch{0};
  ros::Subscriber ros_sub;                       // out: ROS 1 side
  std::shared_ptr<ros2::RawPublisher> mw_pub;    // out: middleware side
  ros::Publisher ros_pub;                        // in: ROS 1 side
  std::shared_ptr<ros2::RawSubscription> mw_sub; // in: middleware side
};

std::string member(XmlRpc::XmlRpcValue& v, const char* key, const std::string& where, bool required) {
  if (!v.hasMember(key)) {
    if (required) exitWithConfigError(where + "." + key + " is required");
    return "";
  }
  if (v[key].getType() != XmlRpc::XmlRpcValue::TypeString) exitWithConfigError(where + "." + key + " must be a string");
  return static_cast<std::string>(v[key]);
}

/// Reads ~<param>: a list of {topic, datatype, md5sum, definition[, reliability, durability, depth]}.
std::vector<std::unique_ptr<BridgeTopic>> readBridgeTopics(const ros::NodeHandle& pnh, const std::string& param,
                                                           bool outbound, const ros2::Qos& base) {
  std::vector<std::unique_ptr<BridgeTopic>> out;
  XmlRpc::XmlRpcValue list;
  if (!pnh.getParam(param, list)) return out;
  const std::string where = pnh.resolveName(param);
  if (list.getType() != XmlRpc::XmlRpcValue::TypeArray)
    exitWithConfigError(where + " must be a list of {topic, datatype, md5sum, definition}");
  for (int i = 0; i < list.size(); ++i) {
    XmlRpc::XmlRpcValue& e = list[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (e.getType() != XmlRpc::XmlRpcValue::TypeStruct) exitWithConfigError(at + " must be a mapping");
    auto t = std::make_unique<BridgeTopic>();
    t->outbound = outbound;
    t->topic = member(e, "topic", at, true);
    if (t->topic.empty() || t->topic[0] != '/') exitWithConfigError(at + ".topic must be a global topic name");
    t->datatype = member(e, "datatype", at, true);
    t->md5sum = member(e, "md5sum", at, !outbound);
    t->definition = member(e, "definition", at, true);
    t->qos = base;
    try {
      if (e.hasMember("reliability")) t->qos.reliability = ros2::parseReliability(member(e, "reliability", at, true));
      if (e.hasMember("durability")) t->qos.durability = ros2::parseDurability(member(e, "durability", at, true));
    } catch (const std::invalid_argument& err) {
      exitWithConfigError(at + ": " + err.what());
    }
    if (e.hasMember("depth")) {
      if (e["depth"].getType() != XmlRpc::XmlRpcValue::TypeInt || static_cast<int>(e["depth"]) < 1)
        exitWithConfigError(at + ".depth must be an integer >= 1");
      t->qos.depth = static_cast<int>(e["depth"]);
    }
    t->has_qos = e.hasMember("reliability") || e.hasMember("durability") || e.hasMember("depth");
    for (const auto& other : out)
      if (other->topic == t->topic) exitWithConfigError(at + ": topic listed twice: " + t->topic);
    out.push_back(std::move(t));
  }
  return out;
}

std::string qstr(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}

class Bridge {
 public:
  Bridge(ros::NodeHandle& nh, ros::NodeHandle& pnh, ros2::Endpoints& endpoints) : nh_(nh), endpoints_(endpoints) {
    const int queue = static_cast<int>(requireNumber(pnh, "queue_size", 100, Bound::Positive));
    topics_ = readBridgeTopics(pnh, "out_topics", true, endpoints.params().qos);
    for (auto& t : readBridgeTopics(pnh, "in_topics", false, endpoints.params().qos)) {
      for (const auto& other : topics_)
        if (other->topic == t->topic)
          exitWithConfigError("topic " + t->topic + " is in both ~out_topics and ~in_topics");
      topics_.push_back(std::move(t));
    }
    if (topics_.empty()) exitWithConfigError("parameters ~out_topics / ~in_topics: at least one topic is needed");
    for (auto& tp : topics_) {
      BridgeTopic* t = tp.get();
      const ros2::Qos* qos = t->has_qos ? &t->qos : nullptr;
      try {
        if (t->outbound) {
          t->mw_pub = endpoints.rawPublisher(t->topic, t->datatype, t->definition, qos);
          t->ros_sub = nh.subscribe<topic_tools::ShapeShifter>(
              t->topic, queue, [this, t](const topic_tools::ShapeShifter::ConstPtr& m) { onRos1(*t, *m); },
              ros::VoidConstPtr(), ros::TransportHints().tcp().tcpNoDelay());
        } else {
          topic_tools::ShapeShifter shape;
          shape.morph(t->md5sum, t->datatype, t->definition, "false");
          t->ros_pub = shape.advertise(nh, t->topic, queue);
          t->mw_sub = endpoints.rawSubscription(
              t->topic, t->datatype, t->definition, 0,
              [this, t](std::vector<uint8_t>& ros1, int64_t) { onSample(*t, ros1); }, qos);
        }
      } catch (const std::exception& e) {  // a definition that does not parse, a type name refused
        exitWithConfigError("topic " + t->topic + " (" + t->datatype + "): " + e.what());
      }
    }
    endpoints.ready();
  }

  netloop::RelayStats report() const {
    netloop::RelayStats r;
    stampReport(r, "ros2_bridge");
    for (const auto& t : topics_) {
      netloop::RelayTopicStats s;
      s.topic = t->topic;
      s.in_msgs = t->in_msgs;
      s.in_bytes = t->in_bytes;
      s.out_msgs = t->out_msgs;
      s.out_bytes = t->out_bytes;
      s.published = t->published;
      s.send_errors = t->send_errors;
      s.outbound = t->outbound;
      r.type_mismatch += t->type_mismatch;
      r.bad_payload += t->mw_sub ? t->mw_sub->badSamples() : 0;
      r.topics.push_back(s);
    }
    return r;
  }

  /// The report's JSON line: the relays' fields plus the middleware's.
  std::string json(const netloop::RelayStats& r) const {
    std::string line = reportJson(r);
    line.pop_back();  // the closing brace
    std::ostringstream o;
    o << ",\"middleware\":" << qstr(endpoints_.params().middleware) << ",\"type_mismatch\":" << r.type_mismatch
      << ",\"bad_payload\":" << r.bad_payload << ",\"matched\":{";
    bool first = true;
    for (const auto& t : topics_) {
      const size_t n = t->mw_pub ? t->mw_pub->matched() : t->mw_sub->matched();
      o << (first ? "" : ",") << qstr(t->topic) << ":" << n;
      first = false;
    }
    o << "},\"wire\":" << ros2::wireStatsJson(endpoints_.wireStats()) << "}";
    return line + o.str();
  }

  size_t size() const { return topics_.size(); }

 private:
  void onRos1(BridgeTopic& t, const topic_tools::ShapeShifter& m) {
    ++t.in_msgs;
    if (m.getDataType() != t.datatype) {
      ++t.type_mismatch;
      ROS_WARN_THROTTLE(5.0, "ros2_bridge %s: a %s message where %s is configured: dropped", t.topic.c_str(),
                        m.getDataType().c_str(), t.datatype.c_str());
      return;
    }
    const std::vector<uint8_t> bytes = serialize(m);
    t.in_bytes += bytes.size();
    try {
      t.out_bytes += t.mw_pub->publish(bytes.data(), bytes.size());
      ++t.out_msgs;
    } catch (const std::exception& e) {
      ++t.send_errors;
      ROS_WARN_THROTTLE(5.0, "ros2_bridge %s: not sent: %s", t.topic.c_str(), e.what());
    }
  }

  void onSample(BridgeTopic& t, std::vector<uint8_t>& ros1) {
    ++t.in_msgs;
    t.in_bytes += ros1.size();
    topic_tools::ShapeShifter shape;
    shape.morph(t.md5sum, t.datatype, t.definition, "false");
    ros::serialization::IStream in(ros1.data(), static_cast<uint32_t>(ros1.size()));
    shape.read(in);
    t.ros_pub.publish(shape);
    ++t.published;
  }

  ros::NodeHandle& nh_;
  ros2::Endpoints& endpoints_;
  std::vector<std::unique_ptr<BridgeTopic>> topics_;
};

int run() {
  ros::NodeHandle nh, pnh("~");
  ros2::Endpoints endpoints(nh, pnh);
  if (!endpoints.native())
    exitWithConfigError("parameter " + pnh.resolveName("middleware") + " is required; allowed: " + [] {
      std::string s;
      for (const auto& n : ros2::builtMiddlewares()) s += (s.empty() ? "" : ", ") + n;
      return s.empty() ? std::string("none (this build has no ROS 2 middleware library)") : s;
    }());
  const double stats_period = requireNumber(pnh, "stats_period", 1.0, Bound::Positive);
  StatsWriter stats(nh, pnh.param<std::string>("stats_topic", kStatsTopic), "");  // the topic; the file below
  const std::string stats_path = pnh.param<std::string>("stats_path", "");
  int fd = -1;
  if (!stats_path.empty()) {
    fd = ::open(stats_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) ROS_WARN("ros2_bridge: cannot open %s: %s", stats_path.c_str(), std::strerror(errno));
  }
  {
    Bridge bridge(nh, pnh, endpoints);
    auto report = [&] {
      const netloop::RelayStats r = bridge.report();
      stats.write(r);
      if (fd >= 0) {
        const std::string line = bridge.json(r) + "\n";
        if (::write(fd, line.data(), line.size()) < 0) ROS_WARN_ONCE("ros2_bridge: stats write failed");
      }
    };
    ros::WallTimer timer =
        nh.createWallTimer(ros::WallDuration(stats_period), [&](const ros::WallTimerEvent&) { report(); });
    ROS_INFO("ros2_bridge: %zu topics over %s", bridge.size(), endpoints.describe("").c_str());
    ros::spin();
    report();  // the final counts
    endpoints.finish();
  }
  if (fd >= 0) ::close(fd);
  return 0;
}

}  // namespace
}  // namespace relay
}  // namespace netloop

int main(int argc, char** argv) { return netloop::runNode(argc, argv, "ros2_bridge", netloop::relay::run); }
