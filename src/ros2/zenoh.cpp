// zenoh backend: Eclipse Zenoh 1.x through netloop's C shim (src/zenoh_shim, a Rust static library
// over the `zenoh` and `zenoh-ext` crates), behaving on the wire as a ROS 2 node on rmw_zenoh:
//
//  - one Zenoh session per participant, from the JSON5 file `config_file` (Zenoh's own format;
//    empty: the library's defaults, peer mode with multicast scouting);
//  - a topic is the key expression rmw_zenoh forms, "<domain>/<topic>/<dds type>/<RIHS01 hash>"
//    (ros2/names.h), the hash taken from ParticipantConfig::type_hashes (computed by the runner);
//  - a publisher is an AdvancedPublisher set as rmw_zenoh_cpp 0.2.4-0.2.10 (Jazzy) sets it for
//    KEEP_LAST history, the only history netloop uses: CongestionControl::Drop (rmw_zenoh blocks
//    only for reliable + KEEP_ALL) and the QoS's reliability, Reliable or BestEffort (from 0.2.3
//    on; 0.2.0-0.2.2 left best effort at the library's default, reliable). Zenoh carries a
//    best-effort sample on a best-effort link where the session has one (UDP) and otherwise on
//    the reliable one in its best-effort channel (netloop's sessions have TCP links only);
//    transient_local keeps the last `depth` samples in the publisher's cache, which late
//    subscribers fetch (their AdvancedSubscriber asks publishers it detects for their history),
//    and reliable + transient_local adds the publisher's sporadic heartbeat (500 ms) and the
//    subscriber's recovery of a sample it missed, as rmw_zenoh does (where rmw_zenoh queues a
//    subscription's samples `depth` deep, a node's inbox is its subscriber queue, ros_queue.h, as
//    for every transport);
//  - every sample carries rmw_zenoh's attachment (sequence number, source timestamp, source GID);
//  - the ROS graph as rmw_zenoh forms it (ros2/zenoh_tokens.h): the participant is one node (its
//    ROS 1 name split into namespace and name, enclave "/", id 0 in its session) with a liveliness
//    token, and each publisher and subscription has its own, so that `ros2 node list` and
//    `ros2 topic list` on rmw_zenoh show netloop's nodes and topics;
//  - matched(): the other side's tokens on the topic (same domain, topic, type and hash), netloop's
//    or a real rmw_zenoh node's; for a publisher at least 1 when Zenoh's matching status says some
//    subscriber matches (a Zenoh application without a token).
//
// WireStats: samples sent and received are counted here; Zenoh exposes no retransmission,
// heartbeat, ACKNACK, loss or rejection counters through its API, so those stay -1.
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "netloop/ros2/middleware.h"
#include "netloop/ros2/names.h"
#include "netloop/ros2/zenoh_tokens.h"
#include "netloop_zenoh_shim.h"
#include "registry.h"

namespace netloop {
namespace ros2 {
namespace {

int64_t wallClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string shimError() {
  const char* e = nlz_last_error();
  return e && *e ? std::string(e) : std::string("unknown error");
}

struct Counters {
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> received{0};
};

using SessionPtr = std::shared_ptr<NlzSession>;

class ZenohPublisher : public Publisher {
 public:
  ZenohPublisher(SessionPtr session, NlzPublisher* pub, std::shared_ptr<Counters> counters,
                 const std::array<uint8_t, 16>& gid)
      : session_(std::move(session)), pub_(pub), counters_(std::move(counters)), gid_(gid) {}
  ~ZenohPublisher() override { nlz_undeclare_publisher(pub_); }

  void publish(const std::vector<uint8_t>& cdr) override {
    if (nlz_put(pub_, cdr.data(), cdr.size(), wallClockNs(), gid_.data()) != 0)
      throw std::runtime_error("zenoh: put failed: " + shimError());
    counters_->sent.fetch_add(1, std::memory_order_relaxed);
  }
  size_t matched() const override {
    const int64_t n = nlz_publisher_matched(pub_);
    return n > 0 ? static_cast<size_t>(n) : 0;
  }

 private:
  SessionPtr session_;  // the session outlives its publishers
  NlzPublisher* pub_;
  std::shared_ptr<Counters> counters_;
  std::array<uint8_t, 16> gid_;
};

struct SubscriptionState {
  SampleCallback callback;
  std::shared_ptr<Counters> counters;
};

extern "C" void onZenohSample(const uint8_t* data, size_t len, void* user) {
  const int64_t now = wallClockNs();
  auto* state = static_cast<SubscriptionState*>(user);
  state->counters->received.fetch_add(1, std::memory_order_relaxed);
  try {
    state->callback(data, len, now);
  } catch (...) {
    // A callback's exception must not unwind into the Rust runtime.
  }
}

class ZenohSubscription : public Subscription {
 public:
  ZenohSubscription(SessionPtr session, std::unique_ptr<SubscriptionState> state)
      : session_(std::move(session)), state_(std::move(state)) {}
  ~ZenohSubscription() override {
    if (sub_) nlz_undeclare_subscriber(sub_);  // no callback runs after it returns
  }
  void declare(const std::string& key, const Qos& qos, const std::string& token, const std::string& peers) {
    sub_ = nlz_declare_subscriber(session_.get(), key.c_str(), qos.reliability == Reliability::Reliable ? 1 : 0,
                                  qos.durability == Durability::TransientLocal ? 1 : 0, qos.depth, &onZenohSample,
                                  state_.get(), token.c_str(), peers.c_str());
    if (!sub_) throw std::runtime_error("zenoh: cannot subscribe to '" + key + "': " + shimError());
  }
  size_t matched() const override {
    const int64_t n = nlz_subscriber_matched(sub_);
    return n > 0 ? static_cast<size_t>(n) : 0;
  }

 private:
  SessionPtr session_;
  std::unique_ptr<SubscriptionState> state_;  // freed after the undeclaration
  NlzSubscriber* sub_ = nullptr;
};

using TokenPtr = std::unique_ptr<NlzToken, decltype(&nlz_undeclare_token)>;

/// The node a participant stands for on rmw_zenoh's graph: id 0 of its session.
ZenohNode graphNode(const NlzSession* session, const ParticipantConfig& config) {
  ZenohNode node;
  node.domain_id = config.domain_id;
  char zid[64];
  if (nlz_session_zid_string(session, zid, sizeof zid) < 0) throw std::runtime_error("zenoh: " + shimError());
  node.zid = zid;
  splitNodeName(config.node_name.empty() ? std::string("netloop") : config.node_name, &node.ns, &node.name);
  return node;
}

class ZenohParticipant : public Participant {
 public:
  ZenohParticipant(SessionPtr session, ParticipantConfig config)
      : session_(std::move(session)),
        config_(std::move(config)),
        counters_(std::make_shared<Counters>()),
        node_(graphNode(session_.get(), config_)),
        node_token_(nlz_declare_token(session_.get(), zenohNodeToken(node_).c_str()), &nlz_undeclare_token) {
    if (!node_token_) throw std::runtime_error("zenoh: cannot declare the node's token: " + shimError());
    nlz_session_zid(session_.get(), zid_.data());
  }

  std::unique_ptr<Publisher> createPublisher(const std::string& ros_topic, const std::string& ros_type,
                                             const Qos& qos) override {
    const std::string key = keyExpr(ros_topic, ros_type);
    const std::string token =
        zenohEndpointToken(node_, ++entities_, ZenohEntity::Publisher, ros_topic, ros_type, typeHash(ros_type), qos);
    const std::string peers =
        zenohEndpointPattern(config_.domain_id, ZenohEntity::Subscription, ros_topic, ros_type, typeHash(ros_type));
    // rmw_zenoh's choice for KEEP_LAST (see the top of this file): the QoS's reliability, Drop.
    NlzPublisher* pub = nlz_declare_publisher(session_.get(), key.c_str(),
                                              qos.reliability == Reliability::Reliable ? 1 : 0, /*block=*/0,
                                              qos.durability == Durability::TransientLocal ? 1 : 0, qos.depth,
                                              token.c_str(), peers.c_str());
    if (!pub) throw std::runtime_error("zenoh: cannot publish on '" + key + "': " + shimError());
    // The GID in the attachment: the session's id with the last 4 bytes replaced by this
    // participant's publisher count (rmw_zenoh hashes its entity's liveliness key instead).
    std::array<uint8_t, 16> gid = zid_;
    const uint32_t n = ++publishers_;
    std::memcpy(gid.data() + 12, &n, sizeof n);
    return std::make_unique<ZenohPublisher>(session_, pub, counters_, gid);
  }

  std::unique_ptr<Subscription> createSubscription(const std::string& ros_topic, const std::string& ros_type,
                                                   const Qos& qos, SampleCallback callback) override {
    const std::string key = keyExpr(ros_topic, ros_type);
    auto state = std::make_unique<SubscriptionState>();
    state->callback = std::move(callback);
    state->counters = counters_;
    auto sub = std::make_unique<ZenohSubscription>(session_, std::move(state));
    sub->declare(key, qos,
                 zenohEndpointToken(node_, ++entities_, ZenohEntity::Subscription, ros_topic, ros_type,
                                    typeHash(ros_type), qos),
                 zenohEndpointPattern(config_.domain_id, ZenohEntity::Publisher, ros_topic, ros_type,
                                      typeHash(ros_type)));
    return sub;
  }

  WireStats stats() const override {
    WireStats s;
    s.samples_sent = counters_->sent.load();
    s.samples_received = counters_->received.load();
    return s;  // the rest stays -1: Zenoh does not expose it
  }

  std::string middleware() const override { return "zenoh"; }

 private:
  std::string typeHash(const std::string& ros_type) const {
    auto it = config_.type_hashes.find(ros_type);
    return it == config_.type_hashes.end() ? std::string() : it->second;
  }
  std::string keyExpr(const std::string& ros_topic, const std::string& ros_type) const {
    return zenohKeyExpr(config_.domain_id, ros_topic, ros_type, typeHash(ros_type));
  }

  SessionPtr session_;
  ParticipantConfig config_;
  std::shared_ptr<Counters> counters_;
  ZenohNode node_;
  TokenPtr node_token_;  // undeclared before the session closes
  std::array<uint8_t, 16> zid_{};
  std::atomic<uint32_t> publishers_{0};
  std::atomic<uint64_t> entities_{0};  // the node took id 0
};

std::unique_ptr<Participant> makeZenohParticipant(const ParticipantConfig& config) {
  NlzSession* s = nlz_open(config.config_file.c_str(), nullptr);
  if (!s)
    throw std::runtime_error("zenoh: cannot open a session" +
                             (config.config_file.empty() ? std::string() : " from '" + config.config_file + "'") +
                             ": " + shimError());
  return std::make_unique<ZenohParticipant>(SessionPtr(s, &nlz_close), config);
}

const bool registered = registerMiddleware("zenoh", makeZenohParticipant);

}  // namespace
}  // namespace ros2
}  // namespace netloop
