#include "nimbro_role.h"

#include <random>

#include "netloop/loop_node.h"
#include "relay_ros.h"
#include "relay_stats.h"

namespace netloop {
namespace relay {

netloop::RelayTopicStats topicReport(const std::string& topic, const Counters& c) {
  netloop::RelayTopicStats r;
  r.topic = topic;
  r.in_msgs = c.in_msgs;
  r.in_bytes = c.in_bytes;
  r.out_msgs = c.out_msgs;
  r.out_bytes = c.out_bytes;
  r.rate_dropped = c.rate_dropped;
  r.queue_dropped = c.queue_dropped;
  r.send_errors = c.send_errors;
  r.published = c.published;
  r.datagrams = c.datagrams;
  return r;
}

uint32_t randomEpoch() {
  std::random_device rd;
  return rd() ^ static_cast<uint32_t>(wallNs());
}

int runRole(const std::string& role, const RoleFactory& make) {
  ros::NodeHandle nh, pnh("~");
  const std::string asked = pnh.param<std::string>("role", role);
  if (asked != role) exitWithConfigError("parameter ~role: '" + asked + "', but this node is the " + role);
  const double stats_period = requireNumber(pnh, "stats_period", 1.0, Bound::Positive);
  StatsWriter stats(nh, pnh.param<std::string>("stats_topic", kStatsTopic), pnh.param<std::string>("stats_path", ""));
  std::unique_ptr<RoleRelay> relay;
  try {
    relay = make(nh, pnh);
  } catch (const std::runtime_error& e) {
    exitWithConfigError(e.what());
  }
  relay->start();
  ros::WallTimer timer = nh.createWallTimer(ros::WallDuration(stats_period),
                                            [&](const ros::WallTimerEvent&) { stats.write(relay->report()); });
  ROS_INFO("nimbro %s ready", role.c_str());
  ros::spin();
  stats.write(relay->report());  // the final counts
  return 0;
}

}  // namespace relay
}  // namespace netloop
