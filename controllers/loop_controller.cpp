// loop_controller: event-driven P/PI/PID controller of the networked loop.
//
// On every sample y (topic `y`) it computes u = K e + Ki T sum(e) + Kd (e - e_prev) / T with
// e = r - y, and publishes u (topic `u`) at once, echoing the sample's seq and stamp so the
// plant can measure the round trip on its own clock. The integral uses the backward
// rectangle rule over the nominal period T, the same law as analysis/baseline.py.
//
// Parameters (shared loop config): rlc/K, rlc/Ki, rlc/Kd, rlc/reference [V], rlc/period [s].
// Private: ~transport (tcp | tcp_nodelay | udp, for the y subscription), ~padding_bytes,
//   ~record_path (CSV event log, empty = none), ~publisher_queue_size (u),
//   ~subscriber_queue_size (y) [messages, default 10], ~dscp (none | 0..63 | EF, CS6, ...: marks the
//   node's IP sockets, include/netloop/socket_marking.h).
// ROS 2: with ~middleware (cyclonedds | fastdds | zenoh) y and u go over that middleware
//   instead of roscpp, with ~middleware_config, ~domain_id, ~qos_*, ~status_path (see
//   include/netloop/ros2/endpoint.h); ~transport does not apply then.
// When it stops it writes what it received and lost of y beside the record (receive_stats.h).
#include <netloop/LoopSample.h>
#include <ros/ros.h>

#include <stdexcept>

#include "netloop/event_log.h"
#include "netloop/reference_schedule.h"
#include "netloop/loop_node.h"
#include "netloop/receive_stats.h"
#include "netloop/socket_marking.h"
#include "netloop/ros2/endpoint.h"
#include "netloop/transport.h"

namespace netloop {
namespace {

struct PidGains {
  double K, Ki, Kd, T;
};

class LoopController {
 public:
  LoopController(const PidGains& g, ReferenceSchedule reference, uint32_t padding,
                 ros2::TopicPublisher<LoopSample> pub, const std::string& path)
      : g_(g), r_(std::move(reference)), padding_(padding), pub_(std::move(pub)), log_(path) {}

  const SeqTracker& sampleSeqs() const { return y_seqs_; }

  void onSample(const LoopSample::ConstPtr& y) {
    const ros::WallTime received = ros::WallTime::now();
    y_seqs_.add(y->seq);
    logSample(log_, "rx", "y", *y, toNs(received));
    const double e = r_.at(y->seq) - y->value;  // the reference of the sample's own index
    integral_ += e * g_.T;
    const double derivative = have_prev_ ? (e - e_prev_) / g_.T : 0.0;
    e_prev_ = e;
    have_prev_ = true;
    const double u = g_.K * e + g_.Ki * integral_ + g_.Kd * derivative;
    LoopSample msg = makeSample(seq_++, u, ros::WallTime::now(), y.get(), padding_);
    pub_.publish(msg);
    logSample(log_, "tx", "u", msg, -1);
  }

 private:
  PidGains g_;
  ReferenceSchedule r_;  // r per sensor sample (rlc/reference_steps: a square wave)
  uint32_t padding_;
  ros2::TopicPublisher<LoopSample> pub_;
  EventLog log_;
  uint32_t seq_ = 0;
  double integral_ = 0.0, e_prev_ = 0.0;
  bool have_prev_ = false;
  SeqTracker y_seqs_{0};  // the plant numbers its y from 0
};

int run() {
  ros::NodeHandle nh;
  ros::NodeHandle pnh("~");
  PidGains gains{requireNumber(nh, "rlc/K", 1.0, Bound::Any), requireNumber(nh, "rlc/Ki", 0.0, Bound::Any),
                 requireNumber(nh, "rlc/Kd", 0.0, Bound::Any), requireNumber(nh, "rlc/period", 0.02, Bound::Positive)};
  const ReferenceSchedule reference = readReferenceSchedule(nh);
  const uint32_t padding = static_cast<uint32_t>(requireNumber(pnh, "padding_bytes", 0, Bound::NonNegative));
  const Transport transport = requireTransport(pnh, "tcp_nodelay");
  const QueueDepths queues = requireQueueDepths(pnh, 10);
  const std::string record_path = pnh.param<std::string>("record_path", "");
  SocketMarking marking(nh, requireDscp(pnh));
  ros2::Endpoints endpoints(nh, pnh);
  LoopController controller(gains, reference, padding, endpoints.publisher<LoopSample>("u", queues.publisher),
                            record_path);
  const ros2::TopicSubscriber sub =
      endpoints.subscriber("y", queues.subscriber, &LoopController::onSample, &controller, transportHints(transport));
  endpoints.ready();
  ROS_INFO("loop_controller: K=%g Ki=%g Kd=%g r=%g V (%zu reference steps), y over %s, queues %u (u) / %u (y)",
           gains.K, gains.Ki, gains.Kd, reference.first(), reference.size(), endpoints.describe(transportName(transport)).c_str(), queues.publisher,
           queues.subscriber);
  ros::spin();
  const WireCounts wire = sub.wireCounts();
  endpoints.finish();
  writeReceiveSummary(receiveSummaryPath(record_path), sub.topic(), controller.sampleSeqs(), wire, queues.subscriber);
  return 0;
}

}  // namespace
}  // namespace netloop

int main(int argc, char** argv) { return netloop::runNode(argc, argv, "loop_controller", netloop::run); }
