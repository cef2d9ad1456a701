// rlc_plant: the series RLC circuit of the Pound paper as a networked plant.
//
// Sensor: time-driven. Every `rlc/period` seconds the circuit is advanced exactly to the
//   current time and y = Vc is published on `y` (netloop/LoopSample).
// Actuator: event-driven. When a u arrives on `u` the circuit is advanced to the arrival
//   time and the source voltage switches to the new u, held until the next one. A u whose
//   seq is not newer than the last applied one is dropped and counted as stale.
//
// Parameters (shared loop config, node namespace):  rlc/R, rlc/L, rlc/C [ohm, H, F],
//   rlc/period [s], rlc/initial_state [Vc, i].
// Private parameters:  ~samples (sensor samples to publish, then exit), ~transport
//   (tcp | tcp_nodelay | udp, for the u subscription), ~padding_bytes, ~record_path (CSV
//   event log, empty = none), ~connect_timeout [s], ~warmup [s], ~linger [s],
//   ~publisher_queue_size (y), ~subscriber_queue_size (u) [messages, default 10], ~dscp (none |
//   0..63 | EF, CS6, ...: marks the node's IP sockets, include/netloop/socket_marking.h).
// ROS 2: with ~middleware (cyclonedds | fastdds | zenoh) y and u go over that middleware
//   instead of roscpp, with ~middleware_config, ~domain_id, ~qos_*, ~status_path (see
//   include/netloop/ros2/endpoint.h); the waiting for the controller then counts matched
//   middleware endpoints, and ~transport does not apply.
// At exit it writes what it received and lost of u beside the record (receive_stats.h).
// Exit status: 0 done, 2 bad parameter, 3 peers never connected.
#include <netloop/LoopSample.h>
#include <ros/callback_queue.h>
#include <ros/ros.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "netloop/event_log.h"
#include "netloop/loop_node.h"
#include "netloop/receive_stats.h"
#include "netloop/rlc_model.h"
#include "netloop/socket_marking.h"
#include "netloop/ros2/endpoint.h"
#include "netloop/transport.h"

namespace netloop {
namespace {

class RlcPlant {
 public:
  RlcPlant(const RlcParams& params, double vc0, double i0, const std::string& record_path)
      : circuit_(params, vc0, i0), log_(record_path) {}

  /// Advances the circuit to `now` with the input held since the last event.
  void advanceTo(const ros::WallTime& now) {
    const double h = (now - last_event_).toSec();
    if (h > 0) circuit_.advance(h, u_);
    if (now > last_event_) last_event_ = now;
  }

  void start(const ros::WallTime& now) { last_event_ = now; }

  void onActuation(const LoopSample::ConstPtr& msg) {
    const ros::WallTime now = ros::WallTime::now();
    u_seqs_.add(msg->seq);
    if (have_applied_ && msg->seq <= last_applied_seq_) {
      ++stale_;
      logSample(log_, "stale", "u", *msg, toNs(now));
      return;
    }
    advanceTo(now);
    u_ = msg->value;
    last_applied_seq_ = msg->seq;
    have_applied_ = true;
    ++applied_;
    logSample(log_, "rx", "u", *msg, toNs(now));
  }

  /// Advances to now and returns the sensor sample y(seq), stamped now.
  LoopSample sample(uint32_t seq, uint32_t padding) {
    const ros::WallTime now = ros::WallTime::now();
    advanceTo(now);
    return makeSample(seq, circuit_.output(), now, nullptr, padding);
  }

  /// Records a sample once it is published (so the record write adds no delay to it).
  void recordSent(const LoopSample& y) { logSample(log_, "tx", "y", y, -1); }

  uint64_t applied() const { return applied_; }
  uint64_t stale() const { return stale_; }
  const SeqTracker& actuationSeqs() const { return u_seqs_; }

 private:
  RlcCircuit circuit_;
  EventLog log_;
  ros::WallTime last_event_;
  double u_ = 0.0;
  uint32_t last_applied_seq_ = 0;
  bool have_applied_ = false;
  uint64_t applied_ = 0, stale_ = 0;
  SeqTracker u_seqs_{0};  // the controller numbers its u from 0
};

/// Runs callbacks until `deadline`, waking for each arriving message.
void serviceUntil(const ros::WallTime& deadline) {
  ros::CallbackQueue* queue = ros::getGlobalCallbackQueue();
  for (ros::WallTime now = ros::WallTime::now(); ros::ok() && now < deadline; now = ros::WallTime::now()) {
    queue->callAvailable(ros::WallDuration(std::min((deadline - now).toSec(), 0.05)));
  }
}

int run() {
  ros::NodeHandle nh;
  ros::NodeHandle pnh("~");

  RlcParams params;
  params.R = requireNumber(nh, "rlc/R", 1.0, Bound::Positive);
  params.L = requireNumber(nh, "rlc/L", 0.1, Bound::Positive);
  params.C = requireNumber(nh, "rlc/C", 0.1, Bound::Positive);
  const double period = requireNumber(nh, "rlc/period", 0.02, Bound::Positive);
  std::vector<double> x0{0.0, 0.0};
  if (nh.hasParam("rlc/initial_state") && (!nh.getParam("rlc/initial_state", x0) || x0.size() != 2 ||
                                           !std::isfinite(x0[0]) || !std::isfinite(x0[1]))) {
    exitWithConfigError("parameter " + nh.resolveName("rlc/initial_state") +
                        " must be a list of two finite numbers [Vc, i]");
  }
  const int samples = static_cast<int>(requireNumber(pnh, "samples", 150, Bound::Positive));
  const uint32_t padding = static_cast<uint32_t>(requireNumber(pnh, "padding_bytes", 0, Bound::NonNegative));
  const double connect_timeout = requireNumber(pnh, "connect_timeout", 15.0, Bound::Positive);
  const double warmup = requireNumber(pnh, "warmup", 0.5, Bound::NonNegative);
  const double linger = requireNumber(pnh, "linger", 0.5, Bound::NonNegative);
  const Transport transport = requireTransport(pnh, "tcp_nodelay");
  const std::string record_path = pnh.param<std::string>("record_path", "");
  const QueueDepths queues = requireQueueDepths(pnh, 10);
  SocketMarking marking(nh, requireDscp(pnh));

  ros2::Endpoints endpoints(nh, pnh);
  RlcPlant plant(params, x0[0], x0[1], record_path);
  const ros2::TopicPublisher<LoopSample> pub_y = endpoints.publisher<LoopSample>("y", queues.publisher);
  const ros2::TopicSubscriber sub_u =
      endpoints.subscriber("u", queues.subscriber, &RlcPlant::onActuation, &plant, transportHints(transport));
  endpoints.ready();

  ROS_INFO("rlc_plant: R=%g L=%g C=%g T=%g s, %d samples, u over %s, queues %u (y) / %u (u); waiting for the "
           "controller", params.R, params.L, params.C, period, samples,
           endpoints.describe(transportName(transport)).c_str(), queues.publisher, queues.subscriber);
  const ros::WallTime give_up = ros::WallTime::now() + ros::WallDuration(connect_timeout);
  while (ros::ok() && (pub_y.matched() == 0 || sub_u.matched() == 0)) {
    if (ros::WallTime::now() > give_up) {
      ROS_FATAL("rlc_plant: no controller connected within %.1f s (y subscribers: %u, u publishers: %u)",
                connect_timeout, pub_y.matched(), sub_u.matched());
      return 3;
    }
    serviceUntil(ros::WallTime::now() + ros::WallDuration(0.01));
  }
  marking.markNow();  // the connections just made, before the first sample
  serviceUntil(ros::WallTime::now() + ros::WallDuration(warmup));

  const ros::WallTime t0 = ros::WallTime::now();
  plant.start(t0);
  for (int k = 0; k < samples && ros::ok(); ++k) {
    serviceUntil(t0 + ros::WallDuration(k * period));
    const LoopSample y = plant.sample(static_cast<uint32_t>(k), padding);
    pub_y.publish(y);
    plant.recordSent(y);
  }
  serviceUntil(ros::WallTime::now() + ros::WallDuration(linger));
  const WireCounts wire = sub_u.wireCounts();
  endpoints.finish();
  writeReceiveSummary(receiveSummaryPath(record_path), sub_u.topic(), plant.actuationSeqs(), wire,
                      queues.subscriber);
  ROS_INFO("rlc_plant: done: %d samples sent, %llu actuations applied, %llu stale dropped, %lld u missing "
           "(%lld dropped by the u queue)", samples, static_cast<unsigned long long>(plant.applied()),
           static_cast<unsigned long long>(plant.stale()),
           static_cast<long long>(plant.actuationSeqs().missing()), static_cast<long long>(wire.drops));
  return 0;
}

}  // namespace
}  // namespace netloop

int main(int argc, char** argv) { return netloop::runNode(argc, argv, "rlc_plant", netloop::run); }
