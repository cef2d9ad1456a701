// teleop_trial: the scripted teleoperation trial, the operator side of a closed loop over the
// network. It drives the (simulated or real) car with cmd_vel from the odometry it receives.
//
//   odom (nav_msgs/Odometry, subscribed with ~transport)  ->  speed v = twist.linear.x,
//                                                             heading psi = yaw of the pose
//   cmd_vel (geometry_msgs/Twist) published every 1/~rate s (time-driven, 20 Hz default):
//     linear.x  = ff * v_ref + Kp_v e_v + Ki_v * integral(e_v)      e_v = v_ref - v
//     angular.z = Kp_h e_h + Ki_h * integral(e_h)                  e_h = psi_ref - psi
//   clamped to +-~max_speed / +-~max_turn (integration paused while saturated).
//
// Trial (times from t = 0, the moment the first odometry has arrived and cmd_vel has a
// subscriber): speed reference ~speed_initial, stepping to ~speed_step at ~speed_step_time
// (t0); heading reference psi(0), stepping by ~heading_step (+45 deg) at ~heading_step_time
// (t1). At ~duration the car is stopped (zero Twists for ~stop_time s) and the node exits 0.
// If no odometry arrives for ~odom_timeout s the commands are zero (and the integrators
// reset) until it comes back. SIGINT/SIGTERM also stop the car first (exit 130). Exit 1: no
// odometry or no cmd_vel subscriber within ~wait_timeout; exit 2: bad parameter.
// Parameters: controllers/config/teleop_trial.yaml (private, ~name); ~transport tcp |
// tcp_nodelay | udp (UDPROS needs a roscpp publisher of odom: behind a rospy simulator or
// driver, put a relay on the robot, e.g. /usr/lib/topic_tools/relay odom odom_net, and remap
// odom:=odom_net here); ~record_path (CSV, empty = none).
//
// Record (format netloop-events/1, include/netloop/event_log.h), one row per event, wall
// clock (ns since the epoch) everywhere:
//   kind topic        seq               value                 stamp_ns              recv_ns   answer_seq / answer_stamp_ns
//   rx   speed        odom header.seq   v (m/s, base_link x)  odom header.stamp     arrival   -1 / -1
//   rx   heading      odom header.seq   psi (rad, unwrapped:  odom header.stamp     arrival   -1 / -1
//                                       continuous over +-pi)
//   stale speed/heading  (same, for an odom whose seq is not newer than the last used: dropped)
//   tx   cmd_speed    command number k  linear.x sent         publish time          -1        seq / stamp of the odom the
//   tx   cmd_turn     command number k  angular.z sent        publish time          -1        command was computed from (-1)
//   ref  ref_speed    change number     new v_ref (m/s)       time it takes effect  -1        -1 / -1
//   ref  ref_heading  change number     new psi_ref (rad, same unwrapped frame as heading)
// Both ref rows are written at t = 0 with the initial references (so their stamp is the
// trial's time origin), then once per step. `bytes` is the serialized size (Odometry,
// Twist; 0 for ref rows). Odometry stamps are the robot's wall clock (the simulator stamps
// with wall time unless use_sim_time), so recv_ns - stamp_ns is the one-way delay on one host
// or on hosts sharing a clock, and a tx row's stamp minus its answer_stamp_ns is the age of the
// measurement the command used.
#include <geometry_msgs/Twist.h>
#include <nav_msgs/Odometry.h>
#include <ros/ros.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <mutex>
#include <thread>

#include "netloop/event_log.h"
#include "netloop/loop_node.h"
#include "netloop/transport.h"

namespace netloop {
namespace {

std::atomic<bool> g_stop{false};
void onSignal(int) { g_stop = true; }

double wrapAngle(double a) { return std::remainder(a, 2.0 * M_PI); }

double yawOf(const geometry_msgs::Quaternion& q) {
  return std::atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z));
}

struct TrialParams {
  double rate, duration, speed_initial, speed_step, speed_step_time, heading_step, heading_step_time;
  double speed_ff, speed_kp, speed_ki, heading_kp, heading_ki, max_speed, max_turn;
  double odom_timeout, wait_timeout, stop_time;
};

TrialParams readParams(const ros::NodeHandle& pnh) {
  TrialParams p;
  p.rate = requireNumber(pnh, "rate", 20.0, Bound::Positive);
  p.duration = requireNumber(pnh, "duration", 10.0, Bound::Positive);
  p.speed_initial = requireNumber(pnh, "speed_initial", 0.0, Bound::Any);
  p.speed_step = requireNumber(pnh, "speed_step", 0.3, Bound::Any);
  p.speed_step_time = requireNumber(pnh, "speed_step_time", 1.0, Bound::NonNegative);
  p.heading_step = requireNumber(pnh, "heading_step", M_PI / 4, Bound::Any);
  p.heading_step_time = requireNumber(pnh, "heading_step_time", 4.0, Bound::NonNegative);
  p.speed_ff = requireNumber(pnh, "speed_ff", 0.0, Bound::Any);
  p.speed_kp = requireNumber(pnh, "speed_kp", 0.5, Bound::Any);
  p.speed_ki = requireNumber(pnh, "speed_ki", 4.0, Bound::Any);
  p.heading_kp = requireNumber(pnh, "heading_kp", 2.0, Bound::Any);
  p.heading_ki = requireNumber(pnh, "heading_ki", 0.0, Bound::Any);
  p.max_speed = requireNumber(pnh, "max_speed", 0.4, Bound::Positive);
  p.max_turn = requireNumber(pnh, "max_turn", 1.5, Bound::Positive);
  p.odom_timeout = requireNumber(pnh, "odom_timeout", 1.0, Bound::NonNegative);
  p.wait_timeout = requireNumber(pnh, "wait_timeout", 30.0, Bound::Positive);
  p.stop_time = requireNumber(pnh, "stop_time", 0.25, Bound::NonNegative);
  return p;
}

// The latest odometry, as the callback thread leaves it for the control loop.
struct Measurement {
  bool valid = false;
  uint32_t seq = 0;
  double speed = 0.0, heading = 0.0;  // heading unwrapped
  ros::Time stamp;
  ros::WallTime received;
};

class TeleopTrial {
 public:
  TeleopTrial(const TrialParams& p, ros::Publisher pub, const std::string& record_path)
      : p_(p), pub_(std::move(pub)), log_(record_path) {}

  void onOdom(const nav_msgs::Odometry::ConstPtr& msg) {
    const ros::WallTime received = ros::WallTime::now();
    const double yaw = yawOf(msg->pose.pose.orientation);
    const uint32_t bytes = ros::serialization::serializationLength(*msg);
    std::lock_guard<std::mutex> lock(mutex_);
    // older than the last one used (by seq; by stamp when the publisher leaves seq alone)
    const int32_t newer = static_cast<int32_t>(msg->header.seq - last_.seq);
    const bool stale = last_.valid && (newer < 0 || (newer == 0 && msg->header.stamp <= last_.stamp));
    const double heading = last_.valid ? last_.heading + wrapAngle(yaw - last_yaw_) : yaw;
    const char* kind = stale ? "stale" : "rx";
    const int64_t stamp = toNs(msg->header.stamp), recv = toNs(received);
    log_.write(EventRow{kind, "speed", msg->header.seq, msg->twist.twist.linear.x, stamp, recv, -1, -1, bytes});
    log_.write(EventRow{kind, "heading", msg->header.seq, heading, stamp, recv, -1, -1, bytes});
    if (stale) return;
    last_ = Measurement{true, msg->header.seq, msg->twist.twist.linear.x, heading, msg->header.stamp, received};
    last_yaw_ = yaw;
    ++received_count_;
  }

  Measurement latest() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_;
  }
  uint64_t receivedCount() {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_count_;
  }

  // Runs the trial; returns the exit status.
  int run() {
    const auto dt = std::chrono::duration<double>(1.0 / p_.rate);
    const double dts = 1.0 / p_.rate;
    // wait for the loop to be closed: odometry in, someone listening to cmd_vel
    const auto wait_end = std::chrono::steady_clock::now() + std::chrono::duration<double>(p_.wait_timeout);
    while (!(latest().valid && pub_.getNumSubscribers() > 0)) {
      if (g_stop) return 130;
      if (std::chrono::steady_clock::now() > wait_end) {
        ROS_ERROR("teleop_trial: after %.0f s: %s%s", p_.wait_timeout, latest().valid ? "" : "no odometry received; ",
                  pub_.getNumSubscribers() > 0 ? "" : "nobody subscribes cmd_vel");
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const Measurement first = latest();
    const double heading0 = first.heading;
    ROS_INFO("teleop_trial: start, heading %.3f rad; speed %.2f -> %.2f m/s at %.2f s, heading %+.3f rad at %.2f s, "
             "%.1f s at %.1f Hz", heading0, p_.speed_initial, p_.speed_step, p_.speed_step_time, p_.heading_step,
             p_.heading_step_time, p_.duration, p_.rate);
    const auto start = std::chrono::steady_clock::now();
    double v_ref = p_.speed_initial, h_ref = heading0;
    writeRef("ref_speed", v_ref);
    writeRef("ref_heading", h_ref);
    bool speed_stepped = false, heading_stepped = false, odom_lost = false;
    double int_v = 0.0, int_h = 0.0;
    uint64_t k = 0;
    for (;; ++k) {
      std::this_thread::sleep_until(start + k * dt);
      const double t = k * dts;
      if (g_stop || t >= p_.duration) break;
      if (!speed_stepped && t >= p_.speed_step_time) {
        speed_stepped = true;
        v_ref = p_.speed_step;
        writeRef("ref_speed", v_ref);
      }
      if (!heading_stepped && t >= p_.heading_step_time) {
        heading_stepped = true;
        h_ref = heading0 + p_.heading_step;
        writeRef("ref_heading", h_ref);
      }
      const Measurement m = latest();
      const double age = (ros::WallTime::now() - m.received).toSec();
      double v_cmd = 0.0, w_cmd = 0.0;
      if (p_.odom_timeout > 0 && age > p_.odom_timeout) {
        if (!odom_lost) ROS_WARN("teleop_trial: no odometry for %.2f s: commanding zero until it returns", age);
        odom_lost = true;
        int_v = int_h = 0.0;
      } else {
        if (odom_lost) ROS_WARN("teleop_trial: odometry back");
        odom_lost = false;
        const double e_v = v_ref - m.speed, e_h = h_ref - m.heading;
        const double v_raw = p_.speed_ff * v_ref + p_.speed_kp * e_v + p_.speed_ki * (int_v + e_v * dts);
        const double w_raw = p_.heading_kp * e_h + p_.heading_ki * (int_h + e_h * dts);
        v_cmd = std::clamp(v_raw, -p_.max_speed, p_.max_speed);
        w_cmd = std::clamp(w_raw, -p_.max_turn, p_.max_turn);
        if (v_cmd == v_raw) int_v += e_v * dts;  // anti-windup: no integration while saturated
        if (w_cmd == w_raw) int_h += e_h * dts;
      }
      publish(v_cmd, w_cmd, m);
    }
    // stop the car: zero commands for stop_time (the receiving watchdog would stop it too)
    const Measurement m = latest();
    const auto stop_start = std::chrono::steady_clock::now();
    const uint64_t n_stop = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(p_.stop_time * p_.rate)));
    for (uint64_t i = 0; i < n_stop; ++i) {
      std::this_thread::sleep_until(stop_start + i * dt);
      publish(0.0, 0.0, m);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the last Twist leave
    ROS_INFO("teleop_trial: %s after %.2f s, %llu commands sent, %llu odometry messages used",
             g_stop ? "interrupted" : "done", k * dts, static_cast<unsigned long long>(seq_),
             static_cast<unsigned long long>(receivedCount()));
    return g_stop ? 130 : 0;
  }

 private:
  void writeRef(const char* topic, double value) {
    log_.write(EventRow{"ref", topic, ref_seq_++, value, toNs(ros::WallTime::now()), -1, -1, -1, 0});
  }

  void publish(double v, double w, const Measurement& m) {
    geometry_msgs::Twist cmd;
    cmd.linear.x = v;
    cmd.angular.z = w;
    const int64_t now = toNs(ros::WallTime::now());
    pub_.publish(cmd);
    const uint32_t bytes = ros::serialization::serializationLength(cmd);
    const int64_t aseq = m.valid ? static_cast<int64_t>(m.seq) : -1;
    const int64_t astamp = m.valid ? toNs(m.stamp) : -1;
    log_.write(EventRow{"tx", "cmd_speed", seq_, v, now, -1, aseq, astamp, bytes});
    log_.write(EventRow{"tx", "cmd_turn", seq_, w, now, -1, aseq, astamp, bytes});
    ++seq_;
  }

  TrialParams p_;
  ros::Publisher pub_;
  EventLog log_;
  std::mutex mutex_;
  Measurement last_;
  double last_yaw_ = 0.0;
  uint64_t received_count_ = 0, seq_ = 0, ref_seq_ = 0;
};

int run() {
  std::signal(SIGINT, onSignal);  // stop the car before leaving (ros::init without its handler)
  std::signal(SIGTERM, onSignal);
  ros::NodeHandle nh;
  ros::NodeHandle pnh("~");
  const TrialParams params = readParams(pnh);
  if (params.speed_step_time >= params.duration || params.heading_step_time >= params.duration) {
    exitWithConfigError("parameters " + pnh.resolveName("speed_step_time") + " and " +
                        pnh.resolveName("heading_step_time") + " must be less than " + pnh.resolveName("duration"));
  }
  const Transport transport = requireTransport(pnh, "tcp_nodelay");
  TeleopTrial trial(params, nh.advertise<geometry_msgs::Twist>("cmd_vel", 10), pnh.param<std::string>("record_path", ""));
  ros::Subscriber sub = nh.subscribe("odom", 10, &TeleopTrial::onOdom, &trial, transportHints(transport));
  ROS_INFO("teleop_trial: odom (%s) over %s, cmd_vel (%s) at %.1f Hz", sub.getTopic().c_str(),
           transportName(transport).c_str(), nh.resolveName("cmd_vel").c_str(), params.rate);
  ros::AsyncSpinner spinner(1);  // odometry is received (and time-stamped) as it arrives
  spinner.start();
  const int status = trial.run();
  spinner.stop();
  ros::shutdown();
  return status;
}

}  // namespace
}  // namespace netloop

int main(int argc, char** argv) {
  return netloop::runNode(argc, argv, "teleop_trial", netloop::run, ros::init_options::NoSigintHandler);
}
