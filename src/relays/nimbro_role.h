// What the four nimbro relay nodes share (nimbro_udp_sender, nimbro_tcp_sender,
// nimbro_udp_receiver, nimbro_tcp_receiver: one executable per role, as nimbro_topic_transport
// has): per-topic counters and the node's life — statistics writer, a report every
// ~stats_period s, spin, the final report.
#pragma once

#include <netloop/RelayStats.h>
#include <ros/ros.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace netloop {
namespace relay {

/// One topic's counters (a sender's or a receiver's).
struct Counters {
  std::atomic<uint64_t> in_msgs{0}, in_bytes{0}, out_msgs{0}, out_bytes{0}, rate_dropped{0}, queue_dropped{0},
      send_errors{0}, published{0}, datagrams{0};
};

/// One topic's counters as a report entry.
netloop::RelayTopicStats topicReport(const std::string& topic, const Counters& c);

/// A random sender epoch (a new one per start, so receivers tell a restarted sender apart).
uint32_t randomEpoch();

/// One role's relay: started once constructed, asked for a report now and then.
class RoleRelay {
 public:
  virtual ~RoleRelay() = default;
  /// Begins relaying (e.g. a sender subscribes its topics).
  virtual void start() {}
  /// The statistics so far (netloop/RelayStats with this role's fields).
  virtual netloop::RelayStats report() = 0;
};

using RoleFactory = std::function<std::unique_ptr<RoleRelay>(ros::NodeHandle& nh, ros::NodeHandle& pnh)>;

/// The body of a role's node: checks ~role (optional; when given it must name this role),
/// opens the statistics (~stats_topic, ~stats_path, every ~stats_period s), makes the relay
/// (a std::runtime_error while doing so is a configuration error, exit status 2), spins, and
/// writes the final report.
int runRole(const std::string& role, const RoleFactory& make);

/// runRole for a role's class (its static kRole names the role; built from the node handles).
template <class Relay>
int runRoleOf() {
  return runRole(Relay::kRole, [](ros::NodeHandle& nh, ros::NodeHandle& pnh) -> std::unique_ptr<RoleRelay> {
    return std::make_unique<Relay>(nh, pnh);
  });
}

}  // namespace relay
}  // namespace netloop
