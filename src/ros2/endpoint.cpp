// Endpoints: a node's crossing topics on roscpp or on a ROS 2 middleware (endpoint.h).
//
// Built with NETLOOP_HAVE_ROS2 when the library netloop_ros2 exists (cmake/ros2_nodes.cmake);
// without it, the nodes are roscpp only and a ~middleware is refused as a configuration error.
#include "netloop/ros2/endpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "netloop/json_text.h"
#include "netloop/loop_node.h"
#include "netloop/ros2/cdr.h"
#include "netloop/ros2/stage_trace.h"

namespace netloop {
namespace ros2 {

// ---- parameters ------------------------------------------------------------------------------

std::vector<std::string> builtMiddlewares() {
#ifdef NETLOOP_HAVE_ROS2
  return availableMiddlewares();
#else
  return {};
#endif
}

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none (this build has no ROS 2 middleware library)" : out;
}

std::string stringParam(const ros::NodeHandle& pnh, const std::string& name, const std::string& fallback) {
  XmlRpc::XmlRpcValue raw;
  if (!pnh.getParam(name, raw)) return fallback;
  if (raw.getType() != XmlRpc::XmlRpcValue::TypeString)
    exitWithConfigError("parameter " + pnh.resolveName(name) + " must be a string");
  return static_cast<std::string>(raw);
}

int intParam(const ros::NodeHandle& pnh, const std::string& name, int fallback, int lo, int hi,
             const std::string& what) {
  XmlRpc::XmlRpcValue raw;
  int value = fallback;
  if (pnh.getParam(name, raw)) {
    if (raw.getType() != XmlRpc::XmlRpcValue::TypeInt)
      exitWithConfigError("parameter " + pnh.resolveName(name) + " must be an integer (" + what + ")");
    value = static_cast<int>(raw);
  }
  if (value < lo || value > hi)
    exitWithConfigError("parameter " + pnh.resolveName(name) + " = " + std::to_string(value) +
                        " is invalid: expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                        " (" + what + ")");
  return value;
}

bool boolParam(const ros::NodeHandle& pnh, const std::string& name, bool fallback) {
  XmlRpc::XmlRpcValue raw;
  if (!pnh.getParam(name, raw)) return fallback;
  if (raw.getType() != XmlRpc::XmlRpcValue::TypeBoolean)
    exitWithConfigError("parameter " + pnh.resolveName(name) + " must be true or false");
  return static_cast<bool>(raw);
}

uint32_t readU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void writeU32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }


/// Writes `text` to `path` atomically: a temporary file beside it, fsync, rename.
void writeAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    ROS_ERROR("cannot write %s: %s", tmp.c_str(), std::strerror(errno));
    return;
  }
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::fsync(fd);
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) ROS_ERROR("cannot write %s", path.c_str());
}

/// A time [ns], or null when it has not happened (-1).
std::string nsOrNull(int64_t ns) { return ns < 0 ? "null" : std::to_string(ns); }

}  // namespace

std::string wireStatsJson(const WireStats& w) {
  std::ostringstream o;
  o << "{\"samples_sent\": " << w.samples_sent << ", \"samples_received\": " << w.samples_received
    << ", \"retransmits\": " << w.retransmits << ", \"retransmit_bytes\": " << w.retransmit_bytes
    << ", \"heartbeats\": " << w.heartbeats << ", \"acknacks\": " << w.acknacks
    << ", \"throttles\": " << w.throttles << ", \"samples_lost\": " << w.samples_lost
    << ", \"samples_rejected\": " << w.samples_rejected << "}";
  return o.str();
}

MiddlewareParams readMiddlewareParams(const ros::NodeHandle& pnh) {
  MiddlewareParams p;
  p.middleware = stringParam(pnh, "middleware", "");
  if (p.middleware.empty()) return p;  // roscpp: nothing else applies
  const std::vector<std::string> built = builtMiddlewares();
  if (std::find(built.begin(), built.end(), p.middleware) == built.end())
    exitWithConfigError("parameter " + pnh.resolveName("middleware") + ": '" + p.middleware +
                        "' is not a middleware of this build; allowed: " + joined(built) +
                        " (or empty for roscpp)");
  p.config_file = stringParam(pnh, "middleware_config", "");
  if (!p.config_file.empty() && ::access(p.config_file.c_str(), R_OK) != 0)
    exitWithConfigError("parameter " + pnh.resolveName("middleware_config") + ": cannot read '" + p.config_file +
                        "': " + std::strerror(errno));
  p.domain_id = intParam(pnh, "domain_id", 0, 0, 232, "ROS_DOMAIN_ID");
#ifdef NETLOOP_HAVE_ROS2
  try {
    p.qos.reliability = parseReliability(stringParam(pnh, "qos_reliability", "reliable"));
  } catch (const std::invalid_argument& e) {
    exitWithConfigError("parameter " + pnh.resolveName("qos_reliability") + ": " + e.what());
  }
  try {
    p.qos.durability = parseDurability(stringParam(pnh, "qos_durability", "volatile"));
  } catch (const std::invalid_argument& e) {
    exitWithConfigError("parameter " + pnh.resolveName("qos_durability") + ": " + e.what());
  }
#endif
  p.qos.depth = intParam(pnh, "qos_depth", 10, 1, kMaxQueueDepth, "history depth, samples");
  XmlRpc::XmlRpcValue hashes;
  if (pnh.getParam("type_hashes", hashes)) {
    const std::string where = pnh.resolveName("type_hashes");
    if (hashes.getType() != XmlRpc::XmlRpcValue::TypeStruct)
      exitWithConfigError("parameter " + where + " must be a mapping of ROS types to RIHS01 strings");
    for (auto& kv : hashes) {
      if (kv.second.getType() != XmlRpc::XmlRpcValue::TypeString ||
          static_cast<std::string>(kv.second).rfind("RIHS01_", 0) != 0)
        exitWithConfigError("parameter " + where + "/" + kv.first + " must be a string \"RIHS01_<64 hex digits>\"");
      p.type_hashes[kv.first] = static_cast<std::string>(kv.second);
    }
  }
  p.status_path = stringParam(pnh, "status_path", "");
  p.carry_header_seq = boolParam(pnh, "carry_header_seq", true);
  return p;
}

// ---- header seq in frame_id ------------------------------------------------------------------

// A std_msgs/Header in ROS 1's serialized form: uint32 seq, uint32 secs, uint32 nsecs,
// uint32 frame_id length, frame_id bytes.
std::vector<uint8_t> seqIntoFrameId(const uint8_t* ros1, size_t len) {
  if (len < 16) throw std::invalid_argument("message too short for a std_msgs/Header");
  const uint32_t n = readU32(ros1 + 12);
  if (len < 16 + static_cast<size_t>(n)) throw std::invalid_argument("frame_id runs past the message");
  const std::string suffix = "#" + std::to_string(readU32(ros1));
  std::vector<uint8_t> out;
  out.reserve(len + suffix.size());
  out.insert(out.end(), ros1, ros1 + 16 + n);
  out.insert(out.end(), suffix.begin(), suffix.end());
  out.insert(out.end(), ros1 + 16 + n, ros1 + len);
  writeU32(out.data() + 12, n + static_cast<uint32_t>(suffix.size()));
  return out;
}

bool seqOutOfFrameId(std::vector<uint8_t>& ros1) {
  if (ros1.size() < 16) return false;
  const uint32_t n = readU32(ros1.data() + 12);
  if (ros1.size() < 16 + static_cast<size_t>(n)) return false;
  const char* frame = reinterpret_cast<const char*>(ros1.data() + 16);
  size_t hash = n;
  while (hash > 0 && frame[hash - 1] != '#') --hash;
  if (hash == 0 || hash == n || n - hash > 10) return false;  // no '#', or nothing after it
  uint64_t seq = 0;
  for (size_t i = hash; i < n; ++i) {
    if (frame[i] < '0' || frame[i] > '9') return false;
    seq = seq * 10 + static_cast<uint64_t>(frame[i] - '0');
  }
  if (seq > 0xffffffffULL) return false;
  const size_t cut = n - (hash - 1);  // '#' and the digits
  ros1.erase(ros1.begin() + 16 + (hash - 1), ros1.begin() + 16 + n);
  writeU32(ros1.data() + 12, n - static_cast<uint32_t>(cut));
  writeU32(ros1.data(), static_cast<uint32_t>(seq));
  return true;
}

// ---- endpoints -------------------------------------------------------------------------------

struct RawPublisher::Impl {
  std::unique_ptr<StageTrace> trace;  // null unless NETLOOP_STAGE_TRACE (stage_trace.h)
#ifdef NETLOOP_HAVE_ROS2
  std::shared_ptr<const MessageLayout> layout;
  std::unique_ptr<Publisher> pub;
#endif
  bool header_seq = false;
};

RawPublisher::~RawPublisher() {
  if (impl_ && impl_->trace) impl_->trace->write();
}

size_t RawPublisher::publish(const uint8_t* ros1, size_t len) {
#ifdef NETLOOP_HAVE_ROS2
  StageTrace* trace = impl_->trace.get();
  const uint32_t seq = trace ? StageTrace::seqOfRos1(ros1, len) : 0;
  if (trace) trace->mark(seq, 0);
  std::vector<uint8_t> cdr;
  if (impl_->header_seq) {
    const std::vector<uint8_t> marked = seqIntoFrameId(ros1, len);
    cdr = ros1ToCdr(*impl_->layout, marked.data(), marked.size());
  } else {
    cdr = ros1ToCdr(*impl_->layout, ros1, len);
  }
  if (trace) trace->mark(seq, 1);
  impl_->pub->publish(cdr);
  if (trace) trace->mark(seq, 2);
  return cdr.size();
#else
  (void)ros1;
  (void)len;
  return 0;
#endif
}

size_t RawPublisher::matched() const {
#ifdef NETLOOP_HAVE_ROS2
  const size_t n = impl_->pub->matched();
  record_->matched = static_cast<int64_t>(n);
  return n;
#else
  return 0;
#endif
}

struct RawSubscription::Impl {
  std::unique_ptr<StageTrace> trace;  // null unless NETLOOP_STAGE_TRACE; outlives `sub`'s callbacks
#ifdef NETLOOP_HAVE_ROS2
  std::shared_ptr<const MessageLayout> layout;
  std::unique_ptr<Subscription> sub;
#endif
  bool header_seq = false;
};

RawSubscription::~RawSubscription() {
  if (impl_ && impl_->trace) impl_->trace->write();
  impl_.reset();  // no more samples from the middleware
  inbox_.reset();
}

size_t RawSubscription::matched() const {
#ifdef NETLOOP_HAVE_ROS2
  const size_t n = impl_->sub->matched();
  record_->matched = static_cast<int64_t>(n);
  return n;
#else
  return 0;
#endif
}

WireCounts RawSubscription::counts() const {
  if (inbox_) return WireCounts{static_cast<int64_t>(inbox_->pushed()), static_cast<int64_t>(inbox_->drops())};
  return WireCounts{static_cast<int64_t>(record_->received.load()), 0};
}

void RawSubscription::deliver(const uint8_t* cdr, size_t len, int64_t recv_ns) {
#ifdef NETLOOP_HAVE_ROS2
  StageTrace* trace = impl_->trace.get();
  const uint32_t seq = trace ? StageTrace::seqOfCdr(cdr, len) : 0;
  if (trace) trace->mark(seq, 1, recv_ns);
  try {
    std::vector<uint8_t> ros1 = cdrToRos1(*impl_->layout, cdr, len);
    if (trace) trace->mark(seq, 2);
    if (impl_->header_seq) seqOutOfFrameId(ros1);
    handler_(ros1, recv_ns);
  } catch (const std::exception& e) {
    ++bad_;
    ROS_WARN_THROTTLE(1.0, "%s: a sample that does not fit the type was dropped: %s", topic_.c_str(), e.what());
  }
#else
  (void)cdr;
  (void)len;
  (void)recv_ns;
#endif
}

Endpoints::Endpoints(ros::NodeHandle nh, ros::NodeHandle pnh) : nh_(nh), params_(readMiddlewareParams(pnh)) {
  if (!native()) return;
  started_ns_ = wallClockNs();
#ifdef NETLOOP_HAVE_ROS2
  ParticipantConfig config;
  config.middleware = params_.middleware;
  config.domain_id = params_.domain_id;
  config.config_file = params_.config_file;
  config.node_name = ros::this_node::getName();
  config.type_hashes = params_.type_hashes;
  try {
    participant_ = createParticipant(config);
  } catch (const std::exception& e) {
    exitWithConfigError("parameters " + pnh.resolveName("middleware") + " = '" + params_.middleware + "', " +
                        pnh.resolveName("middleware_config") + " = '" + params_.config_file +
                        "': the middleware refused them: " + e.what());
  }
#endif
}

Endpoints::~Endpoints() {
  stop_ = true;
  if (watcher_.joinable()) watcher_.join();
  finish();
}

std::string Endpoints::describe(const std::string& ros_transport) const {
  if (!native()) return ros_transport;
  std::ostringstream s;
  s << params_.middleware << " (domain " << params_.domain_id << ", "
    << (params_.qos.reliability == Reliability::Reliable ? "reliable" : "best_effort") << ", "
    << (params_.qos.durability == Durability::Volatile ? "volatile" : "transient_local") << ", depth "
    << params_.qos.depth << ")";
  return s.str();
}

std::shared_ptr<RawPublisher> Endpoints::rawPublisher(const std::string& topic, const std::string& datatype,
                                                      const std::string& definition, const Qos* qos) {
  if (!participant_) throw std::logic_error("rawPublisher(" + topic + ") without a middleware");
  std::shared_ptr<RawPublisher> p(new RawPublisher());
  p->topic_ = resolve(topic);
  p->record_ = std::make_shared<EndpointRecord>();
  p->record_->topic = p->topic_;
  p->impl_ = std::make_unique<RawPublisher::Impl>();
  p->impl_->trace = StageTrace::open(ros::this_node::getName(), p->topic_, datatype, true);
#ifdef NETLOOP_HAVE_ROS2
  p->impl_->layout = MessageLayout::parse(datatype, definition);
  p->impl_->header_seq = params_.carry_header_seq && p->impl_->layout->startsWithHeader();
  p->impl_->pub = participant_->createPublisher(p->topic_, datatype, qos ? *qos : params_.qos);
#else
  (void)datatype;
  (void)definition;
  (void)qos;
#endif
  std::lock_guard<std::mutex> lock(mu_);
  pubs_.push_back(p);
  records_.push_back(p->record_);
  return p;
}

std::shared_ptr<RawSubscription> Endpoints::rawSubscription(const std::string& topic, const std::string& datatype,
                                                            const std::string& definition, size_t inbox_depth,
                                                            RawSubscription::Handler handler, const Qos* qos) {
  if (!participant_) throw std::logic_error("rawSubscription(" + topic + ") without a middleware");
  std::shared_ptr<RawSubscription> s(new RawSubscription());
  s->topic_ = resolve(topic);
  s->record_ = std::make_shared<EndpointRecord>();
  s->record_->topic = s->topic_;
  s->record_->subscription = true;
  s->handler_ = std::move(handler);
  s->impl_ = std::make_unique<RawSubscription::Impl>();
  s->impl_->trace = StageTrace::open(ros::this_node::getName(), s->topic_, datatype, false);
#ifdef NETLOOP_HAVE_ROS2
  s->impl_->layout = MessageLayout::parse(datatype, definition);
  s->impl_->header_seq = params_.carry_header_seq && s->impl_->layout->startsWithHeader();
  RawSubscription* raw = s.get();  // outlived by its impl_ (destroyed first), which calls back
  std::shared_ptr<EndpointRecord> record = s->record_;
  StageTrace* trace = s->impl_->trace.get();
  if (inbox_depth > 0) {
    s->inbox_ = RosQueueInbox::create(
        [raw](const uint8_t* cdr, size_t len, int64_t recv_ns) { raw->deliver(cdr, len, recv_ns); }, inbox_depth);
    std::weak_ptr<RosQueueInbox> inbox = s->inbox_;
    s->impl_->sub = participant_->createSubscription(
        s->topic_, datatype, qos ? *qos : params_.qos,
        [record, inbox, trace](const uint8_t* cdr, size_t len, int64_t recv_ns) {
          int64_t none = -1;
          record->first_rx_ns.compare_exchange_strong(none, recv_ns);
          ++record->received;
          if (trace) trace->mark(StageTrace::seqOfCdr(cdr, len), 0, recv_ns);
          if (auto in = inbox.lock()) in->push(cdr, len);
        });
  } else {
    s->impl_->sub = participant_->createSubscription(
        s->topic_, datatype, qos ? *qos : params_.qos,
        [record, raw, trace](const uint8_t* cdr, size_t len, int64_t recv_ns) {
          int64_t none = -1;
          record->first_rx_ns.compare_exchange_strong(none, recv_ns);
          ++record->received;
          if (trace) trace->mark(StageTrace::seqOfCdr(cdr, len), 0, recv_ns);
          raw->deliver(cdr, len, recv_ns);
        });
  }
#else
  (void)datatype;
  (void)definition;
  (void)inbox_depth;
  (void)qos;
#endif
  std::lock_guard<std::mutex> lock(mu_);
  subs_.push_back(s);
  records_.push_back(s->record_);
  return s;
}

bool Endpoints::allMatched() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& w : pubs_)
    if (auto p = w.lock())
      if (p->matched() == 0) return false;
  for (const auto& w : subs_)
    if (auto s = w.lock())
      if (s->matched() == 0) return false;
  return true;
}

void Endpoints::ready() {
  if (!native()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (watching_) return;
  watching_ = true;
  watcher_ = std::thread([this] { watch(); });
}

void Endpoints::watch() {
  while (!stop_) {
    if (allMatched()) {
      matched_ns_ = wallClockNs();
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto& r : records_) r->matched_then = r->matched.load();
      }
      writeStatus(false);
      ROS_INFO("%s: every %s endpoint matched after %.3f s", ros::this_node::getName().c_str(),
               params_.middleware.c_str(), (matched_ns_ - started_ns_) * 1e-9);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

void Endpoints::writeStageTraces() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& w : pubs_)
    if (auto p = w.lock())
      if (p->impl_->trace) p->impl_->trace->write();
  for (const auto& w : subs_)
    if (auto s = w.lock())
      if (s->impl_->trace) s->impl_->trace->write();
}

WireStats Endpoints::wireStats() const {
#ifdef NETLOOP_HAVE_ROS2
  if (participant_) return participant_->stats();
#endif
  return WireStats{};
}

void Endpoints::finish() {
  if (!native()) return;
  stop_ = true;
  if (watcher_.joinable() && watcher_.get_id() != std::this_thread::get_id()) watcher_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
  }
  // Last look at the matches of the endpoints still alive (the others keep their last count).
  allMatched();
  writeStatus(true);
  writeStageTraces();
}

void Endpoints::writeStatus(bool final_version) {
  std::lock_guard<std::mutex> lock(mu_);
  if (params_.status_path.empty()) return;
  std::ostringstream o;
  o << "{\"format\": \"netloop-ros2-status/1\", \"node\": " << jsonString(ros::this_node::getName())
    << ", \"middleware\": " << jsonString(params_.middleware) << ", \"domain_id\": " << params_.domain_id
    << ", \"started_ns\": " << started_ns_ << ", \"matched_ns\": " << nsOrNull(matched_ns_.load())
    << ", \"endpoints\": {";
  bool first = true;
  for (const auto& r : records_) {  // as when every endpoint was matched (at exit: never matched)
    o << (first ? "" : ", ") << jsonString(r->topic) << ": "
      << (r->matched_then >= 0 ? r->matched_then : r->matched.load());
    first = false;
  }
  o << "}";
  if (final_version) {
    o << ", \"matched_at_exit\": {";
    first = true;
    for (const auto& r : records_) {
      o << (first ? "" : ", ") << jsonString(r->topic) << ": " << r->matched.load();
      first = false;
    }
    o << "}";
    o << ", \"first_rx_ns\": {";
    first = true;
    for (const auto& r : records_) {
      if (!r->subscription) continue;
      o << (first ? "" : ", ") << jsonString(r->topic) << ": " << nsOrNull(r->first_rx_ns.load());
      first = false;
    }
    o << "}, \"received\": {";
    first = true;
    for (const auto& r : records_) {
      if (!r->subscription) continue;
      o << (first ? "" : ", ") << jsonString(r->topic) << ": " << r->received.load();
      first = false;
    }
    WireStats w;
#ifdef NETLOOP_HAVE_ROS2
    if (participant_) w = participant_->stats();
#endif
    o << "}, \"wire\": " << wireStatsJson(w) << ", \"final\": true";
  } else {
    o << ", \"final\": false";
  }
  o << "}\n";
  writeAtomically(params_.status_path, o.str());
}

}  // namespace ros2
}  // namespace netloop
