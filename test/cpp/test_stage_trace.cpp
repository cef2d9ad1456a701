// The stage trace of the nodes' ROS 2 endpoints (include/netloop/ros2/stage_trace.h): off without
// NETLOOP_STAGE_TRACE or for another type than netloop/LoopSample; on, one row per seq written once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "netloop/ros2/stage_trace.h"

namespace {

using netloop::ros2::StageTrace;

TEST(StageTrace, OffUnlessAskedForLoopSamples) {
  unsetenv("NETLOOP_STAGE_TRACE");
  EXPECT_EQ(StageTrace::open("/sink", "/flows/probe", "netloop/LoopSample", false), nullptr);
  setenv("NETLOOP_STAGE_TRACE", "/tmp", 1);
  EXPECT_EQ(StageTrace::open("/sink", "/flows/cam", "sensor_msgs/Image", false), nullptr);
  unsetenv("NETLOOP_STAGE_TRACE");
}

TEST(StageTrace, WritesOneRowPerSeqOnce) {
  char dir[] = "/tmp/netloop_stage_traceXXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("NETLOOP_STAGE_TRACE", dir, 1);
  auto trace = StageTrace::open("/flow_probe_sink", "/flows/probe", "netloop/LoopSample", false);
  unsetenv("NETLOOP_STAGE_TRACE");
  ASSERT_NE(trace, nullptr);
  const uint8_t cdr[8] = {0, 1, 0, 0, 7, 0, 0, 0};  // encapsulation header, seq 7
  const uint32_t seq = StageTrace::seqOfCdr(cdr, sizeof cdr);
  EXPECT_EQ(seq, 7u);
  trace->mark(seq, 0, 100);
  trace->mark(seq, 1, 250);
  trace->mark(seq, 2, 300);
  trace->mark(8, 0, 400);
  trace->write();
  trace->mark(9, 0, 500);
  trace->write();  // once: seq 9 is not added
  const std::string path = std::string(dir) + "/flow_probe_sink__flows_probe.sub.stages.csv";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "seq,delivered_ns,running_ns,converted_ns\n7,100,250,300\n8,400,0,0\n");
  std::remove(path.c_str());
  rmdir(dir);
}

}  // namespace
