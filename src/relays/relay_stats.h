// Relay statistics: every relay fills a typed report (netloop/RelayStats), published on
// /netloop_relay/stats and appended as one JSON line to ~stats_path
// (records/relay_<process>_stats.jsonl), both from the same message.
#pragma once

#include <netloop/RelayStats.h>
#include <ros/ros.h>

#include <string>

#include "wire/format.h"
#include "wire/reassembly.h"

namespace netloop {
namespace relay {

/// Topic of the reports unless ~stats_topic says otherwise.
constexpr const char* kStatsTopic = "/netloop_relay/stats";

/// Fills the fields every report has: header.stamp (wall clock), role, node, CPU time.
void stampReport(netloop::RelayStats& report, const std::string& role);

/// Counts one malformed datagram or stream frame by its reason.
void countMalformed(netloop::RelayMalformed& malformed, Error reason);

/// The reassembler's counters and what it holds now.
netloop::RelayReassembly reassemblyReport(const Reassembler& reassembler);

/// The report as one JSON object with the fields of its role (see RelayStats.msg), e.g.
/// {"role":"udp_receiver","node":...,"malformed":{...},"reassembly":{...},"topics":{"/y":{...}}}.
std::string reportJson(const netloop::RelayStats& report);

/// Publishes reports on a topic and appends each as one JSON line (one write(2)) to a file.
class StatsWriter {
 public:
  /// `path` empty: no file.
  StatsWriter(ros::NodeHandle nh, const std::string& topic, const std::string& path);
  ~StatsWriter();
  StatsWriter(const StatsWriter&) = delete;
  StatsWriter& operator=(const StatsWriter&) = delete;
  void write(const netloop::RelayStats& report);
  const std::string& path() const { return path_; }

 private:
  ros::Publisher pub_;
  std::string path_;
  int fd_ = -1;
};

}  // namespace relay
}  // namespace netloop
