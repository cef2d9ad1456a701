// The loop controller's reference as a schedule of steps (netloop.reference, Python side).
//
// Parameters (shared loop config): rlc/reference [V], and optionally rlc/reference_steps
// (sensor sample indices, non-decreasing, the first 0) with rlc/reference_levels (one level
// [V] per index): from sample k on the reference is its level. Without the lists the
// reference is rlc/reference from the first sample (a single step).
#pragma once

#include <ros/ros.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "netloop/loop_node.h"

namespace netloop {

class ReferenceSchedule {
 public:
  explicit ReferenceSchedule(double constant) : steps_{{0, constant}} {}
  explicit ReferenceSchedule(std::vector<std::pair<int64_t, double>> steps) : steps_(std::move(steps)) {}

  /// The reference for the sensor sample numbered `seq` (the last step at or before it).
  double at(uint32_t seq) const {
    double r = steps_.front().second;
    for (const auto& step : steps_) {
      if (step.first > static_cast<int64_t>(seq)) break;
      r = step.second;
    }
    return r;
  }

  size_t size() const { return steps_.size(); }
  double first() const { return steps_.front().second; }

 private:
  std::vector<std::pair<int64_t, double>> steps_;
};

/// Reads the schedule from rlc/reference (+ rlc/reference_steps, rlc/reference_levels);
/// exits naming the parameter when the lists do not fit together.
inline ReferenceSchedule readReferenceSchedule(const ros::NodeHandle& nh) {
  const double constant = requireNumber(nh, "rlc/reference", 1.0, Bound::Any);
  if (!nh.hasParam("rlc/reference_steps")) return ReferenceSchedule(constant);
  std::vector<int> steps;
  std::vector<double> levels;
  const std::string name = nh.resolveName("rlc/reference_steps");
  if (!nh.getParam("rlc/reference_steps", steps) || !nh.getParam("rlc/reference_levels", levels) ||
      steps.empty() || steps.size() != levels.size()) {
    exitWithConfigError("parameters " + name + " and rlc/reference_levels must be lists of sample indices and "
                        "levels of equal, non-zero length");
  }
  std::vector<std::pair<int64_t, double>> out;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i] < 0 || (i > 0 && steps[i] < steps[i - 1]) || !std::isfinite(levels[i])) {
      exitWithConfigError("parameter " + name + " must hold non-decreasing sample indices >= 0 with finite levels");
    }
    out.emplace_back(steps[i], levels[i]);
  }
  return ReferenceSchedule(std::move(out));
}

}  // namespace netloop
