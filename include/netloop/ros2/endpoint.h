// What a node uses instead of ros::Publisher / ros::Subscriber for a topic that crosses
// between hosts, so that the same node speaks roscpp or a ROS 2 middleware (middleware.h).
//
// Private parameters (read by Endpoints; all optional):
//   ~middleware          cyclonedds | fastdds | zenoh; empty or absent: roscpp, exactly as
//                        before (same advertise/subscribe calls, transport hints, queue sizes,
//                        roscpp's own counters): nothing else here applies then
//   ~middleware_config   path of the middleware's configuration file (Cyclone DDS XML, Fast DDS
//                        XML profiles, Zenoh JSON5); empty: the library's defaults
//   ~domain_id           int 0..232 (ROS_DOMAIN_ID), default 0
//   ~qos_reliability     reliable | best_effort          (default reliable)
//   ~qos_durability      volatile | transient_local      (default volatile)
//   ~qos_depth           int >= 1, history KEEP_LAST depth (default 10)
//   ~type_hashes         dict ROS 1 type -> RIHS01 string (Zenoh's key expressions)
//   ~status_path         JSON file written atomically (tmp + rename) once every middleware
//                        endpoint of the node is matched, and again at exit:
//                        {"format": "netloop-ros2-status/1", "node", "middleware", "domain_id",
//                        "started_ns", "matched_ns" (null until matched), "endpoints": {topic:
//                        matched count when all were matched}, "final": false}; at exit the
//                        same with "matched_at_exit": {topic: count}, "first_rx_ns":
//                        {topic: ns or null}, "received": {topic: n}, "wire": WireStats (-1:
//                        not exposed), "final": true. Times: wall clock, ns since the epoch;
//                        started_ns = before the participant is created, matched_ns = when
//                        every endpoint has a match (polled every 2 ms), first_rx_ns = when the
//                        middleware delivered the topic's first sample
//   ~carry_header_seq    bool, default true: see "Header seq" below
// A wrong value ends the node with exit status 2 and a message naming the parameter and what
// is allowed (e.g. a middleware this build lacks: the ones it has are listed).
//
// Conversions: a typed message is serialized as roscpp does, converted with ros1ToCdr using the
// type's full definition from ros::message_traits, published as CDR; a received sample goes
// back with cdrToRos1 and is deserialized. The raw forms carry ROS 1 serialized bytes of a
// type given by name and definition (flow_sink, ros2_bridge).
//
// Header seq: ROS 2's std_msgs/Header has no seq, and netloop's flows count losses by it.
// With ~carry_header_seq (default), a message whose first field is a std_msgs/Header crosses
// with its seq appended to the header's frame_id as "#<seq>" (decimal), and the receiving end
// takes it back out: the receiver sees the sender's ROS 1 message exactly, seq included, so
// records/*.csv and the analysis are unchanged. A ROS 2 node on the same network sees frame_id
// "camera_optical_frame#17"; set ~carry_header_seq false to send frame_id untouched (seq then
// arrives as 0).
//
// Stage trace: with the environment variable NETLOOP_STAGE_TRACE set to a folder, each
// netloop/LoopSample endpoint writes the time of every stage of its samples there when the node
// finishes (stage_trace.h; `make bench` reads them).
//
// Reception: middleware samples run on roscpp's global callback queue (ros_queue.h), through
// an inbox of the subscriber queue size given (the part roscpp's subscriber queue plays);
// its drops are the subscriber-queue drops of the receive summary. first_rx_ns is the time the
// middleware delivered the topic's first sample.
#pragma once

#include <ros/ros.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "netloop/receive_stats.h"
#include "netloop/ros2/middleware.h"
#include "netloop/ros2/ros_queue.h"

namespace netloop {
namespace ros2 {

/// The middlewares this build of the nodes has (empty when built without netloop_ros2).
std::vector<std::string> builtMiddlewares();

/// The private parameters above, read and checked.
struct MiddlewareParams {
  std::string middleware;  // empty: roscpp
  std::string config_file;
  int domain_id = 0;
  Qos qos;
  std::map<std::string, std::string> type_hashes;
  std::string status_path;
  bool carry_header_seq = true;
  bool enabled() const { return !middleware.empty(); }
};

/// Reads them from `pnh` (the node's private handle); ends the node with exit status 2 and a
/// message naming the parameter when one is wrong.
MiddlewareParams readMiddlewareParams(const ros::NodeHandle& pnh);

/// WireStats as a JSON object (every field; -1 where the library exposes nothing).
std::string wireStatsJson(const WireStats& w);

/// Header seq carried in frame_id (see the top): ROS 1 serialized bytes of a message that
/// starts with a std_msgs/Header. Throws std::invalid_argument when the bytes are too short.
std::vector<uint8_t> seqIntoFrameId(const uint8_t* ros1, size_t len);
/// The inverse: takes a trailing "#<digits>" out of frame_id into seq (nothing to take: the
/// bytes are left as they are). Returns whether a seq was found.
bool seqOutOfFrameId(std::vector<uint8_t>& ros1);

class Endpoints;

/// What the status file says of one middleware endpoint; shared by the endpoint and its
/// Endpoints, so it outlives the endpoint.
struct EndpointRecord {
  std::string topic;
  bool subscription = false;
  std::atomic<int64_t> first_rx_ns{-1};  // subscriptions: first sample's arrival [ns]
  std::atomic<uint64_t> received{0};     // subscriptions: samples the middleware delivered
  std::atomic<int64_t> matched{0};       // last count seen
  int64_t matched_then = -1;             // the count when every endpoint was matched
};

/// The middleware side of one published topic (raw: ROS 1 serialized bytes in).
class RawPublisher {
 public:
  ~RawPublisher();
  /// Converts and publishes; returns the CDR bytes published. Throws CdrError when the bytes
  /// do not fit the type.
  size_t publish(const uint8_t* ros1, size_t len);
  size_t matched() const;
  const std::string& topic() const { return topic_; }

 private:
  friend class Endpoints;
  struct Impl;
  RawPublisher() = default;
  std::string topic_;
  std::shared_ptr<EndpointRecord> record_;
  std::unique_ptr<Impl> impl_;
};

/// The middleware side of one subscribed topic.
class RawSubscription {
 public:
  /// ROS 1 serialized bytes of a sample and the reception time [ns, wall clock].
  using Handler = std::function<void(std::vector<uint8_t>& ros1, int64_t recv_ns)>;
  ~RawSubscription();
  size_t matched() const;
  const std::string& topic() const { return topic_; }
  /// Samples the middleware delivered / dropped from the node's inbox (the subscriber queue).
  WireCounts counts() const;
  /// First sample's arrival [ns], -1 before one came.
  int64_t firstRxNs() const { return record_->first_rx_ns; }
  /// Samples that did not convert (counted and skipped).
  uint64_t badSamples() const { return bad_; }

 private:
  friend class Endpoints;
  struct Impl;
  RawSubscription() = default;
  void deliver(const uint8_t* cdr, size_t len, int64_t recv_ns);
  std::string topic_;
  std::shared_ptr<EndpointRecord> record_;
  std::atomic<uint64_t> bad_{0};
  Handler handler_;
  std::shared_ptr<RosQueueInbox> inbox_;  // null: delivered on the middleware's thread
  std::unique_ptr<Impl> impl_;            // destroyed first (stops delivery)
};

/// A typed publisher: roscpp's, or the middleware's when ~middleware is set.
template <class M>
class TopicPublisher {
 public:
  TopicPublisher() = default;
  void publish(const M& m) const;
  /// Subscribers connected (roscpp) or subscriptions matched (middleware).
  uint32_t matched() const;
  /// The resolved topic.
  std::string topic() const { return mw_ ? mw_->topic() : ros_.getTopic(); }
  bool native() const { return static_cast<bool>(mw_); }
  const ros::Publisher& ros() const { return ros_; }

 private:
  friend class Endpoints;
  ros::Publisher ros_;
  std::shared_ptr<RawPublisher> mw_;
};

/// A typed subscriber: roscpp's (with its WireCounter), or the middleware's.
class TopicSubscriber {
 public:
  TopicSubscriber() = default;
  /// Publishers connected (roscpp) or matched (middleware).
  uint32_t matched() const { return mw_ ? static_cast<uint32_t>(mw_->matched()) : ros_.getNumPublishers(); }
  std::string topic() const { return mw_ ? mw_->topic() : ros_.getTopic(); }
  /// roscpp: its per-connection counters (WireCounter::poll); middleware: samples delivered
  /// and dropped from the inbox.
  WireCounts wireCounts() const { return mw_ ? mw_->counts() : (wire_ ? wire_->poll() : WireCounts{}); }
  bool native() const { return static_cast<bool>(mw_); }

 private:
  friend class Endpoints;
  ros::Subscriber ros_;
  std::shared_ptr<WireCounter> wire_;
  std::shared_ptr<RawSubscription> mw_;
};

/// A node's crossing topics. Without ~middleware every call is the roscpp call it replaces.
class Endpoints {
 public:
  /// Reads the parameters (exit 2 when wrong) and, with a middleware, creates the participant
  /// (exit 2 when the library refuses its configuration).
  Endpoints(ros::NodeHandle nh, ros::NodeHandle pnh);
  /// Writes the final status (finish()) if not written yet.
  ~Endpoints();
  Endpoints(const Endpoints&) = delete;
  Endpoints& operator=(const Endpoints&) = delete;

  const MiddlewareParams& params() const { return params_; }
  /// A middleware is in use.
  bool native() const { return params_.enabled(); }
  /// The middleware's name, or `ros_transport` without one (for logs).
  std::string describe(const std::string& ros_transport) const;

  template <class M>
  TopicPublisher<M> publisher(const std::string& topic, uint32_t queue_size);

  template <class M, class T>
  TopicSubscriber subscriber(const std::string& topic, uint32_t queue_size,
                             void (T::*fp)(const boost::shared_ptr<M const>&), T* obj,
                             const ros::TransportHints& hints);

  /// Raw forms (middleware only): a topic of `datatype` given its full definition.
  std::shared_ptr<RawPublisher> rawPublisher(const std::string& topic, const std::string& datatype,
                                             const std::string& definition, const Qos* qos = nullptr);
  /// `inbox_depth` > 0: the handler runs on roscpp's global callback queue through an inbox of
  /// that depth; 0: on the middleware's thread.
  std::shared_ptr<RawSubscription> rawSubscription(const std::string& topic, const std::string& datatype,
                                                   const std::string& definition, size_t inbox_depth,
                                                   RawSubscription::Handler handler, const Qos* qos = nullptr);

  /// Every middleware endpoint has at least one match (true when there is none).
  bool allMatched() const;
  /// Call once every endpoint is created: from then on a thread watches the matches and writes
  /// the status file the moment all are matched (nothing to do without a middleware).
  void ready();
  /// Writes the status file's final version (first_rx_ns, received, wire); once.
  void finish();
  /// The participant's statistics (all -1 but the counts without a middleware).
  WireStats wireStats() const;

 private:
  void watch();
  void writeStatus(bool final_version);
  void writeStageTraces();
  std::string resolve(const std::string& topic) const { return nh_.resolveName(topic); }

  ros::NodeHandle nh_;
  MiddlewareParams params_;
  int64_t started_ns_ = -1;
  std::atomic<int64_t> matched_ns_{-1};
  std::unique_ptr<Participant> participant_;
  mutable std::mutex mu_;  // the endpoint lists and the status file
  std::vector<std::weak_ptr<RawPublisher>> pubs_;
  std::vector<std::weak_ptr<RawSubscription>> subs_;
  std::vector<std::shared_ptr<EndpointRecord>> records_;
  bool finished_ = false, watching_ = false;
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

// ---- templates -------------------------------------------------------------------------------

namespace detail {
template <class M>
std::vector<uint8_t> serializeRos1(const M& m) {
  std::vector<uint8_t> buf(ros::serialization::serializationLength(m));
  ros::serialization::OStream stream(buf.data(), static_cast<uint32_t>(buf.size()));
  ros::serialization::serialize(stream, m);
  return buf;
}
}  // namespace detail

template <class M>
void TopicPublisher<M>::publish(const M& m) const {
  if (!mw_) {
    ros_.publish(m);
    return;
  }
  const std::vector<uint8_t> bytes = detail::serializeRos1(m);
  mw_->publish(bytes.data(), bytes.size());
}

template <class M>
uint32_t TopicPublisher<M>::matched() const {
  return mw_ ? static_cast<uint32_t>(mw_->matched()) : ros_.getNumSubscribers();
}

template <class M>
TopicPublisher<M> Endpoints::publisher(const std::string& topic, uint32_t queue_size) {
  TopicPublisher<M> p;
  if (!native()) {
    p.ros_ = nh_.advertise<M>(topic, queue_size);
    return p;
  }
  p.mw_ = rawPublisher(topic, ros::message_traits::datatype<M>(), ros::message_traits::definition<M>());
  return p;
}

template <class M, class T>
TopicSubscriber Endpoints::subscriber(const std::string& topic, uint32_t queue_size,
                                 void (T::*fp)(const boost::shared_ptr<M const>&), T* obj,
                                 const ros::TransportHints& hints) {
  TopicSubscriber s;
  if (!native()) {
    s.ros_ = nh_.subscribe(topic, queue_size, fp, obj, hints);
    s.wire_ = std::make_shared<WireCounter>(s.ros_.getTopic());
    return s;
  }
  s.mw_ = rawSubscription(topic, ros::message_traits::datatype<M>(), ros::message_traits::definition<M>(), queue_size,
                          [fp, obj](std::vector<uint8_t>& ros1, int64_t) {
                            auto msg = boost::make_shared<M>();
                            ros::serialization::IStream stream(ros1.data(), static_cast<uint32_t>(ros1.size()));
                            ros::serialization::deserialize(stream, *msg);
                            (obj->*fp)(boost::shared_ptr<M const>(msg));
                          });
  return s;
}

}  // namespace ros2
}  // namespace netloop
