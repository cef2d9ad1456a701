// Unit tests of the Wi-Fi emulator's parts that need no ns-3 event loop (src/ns3/): the options'
// checks, the control input (`loss` lines, loss bursts), the lag and stall tracking, and the
// JSON lines of its statistics file, byte for byte as netloop.testbed reads them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "control_input.h"
#include "lag_tracker.h"
#include "wifi_options.h"
#include "wifi_stats.h"

using namespace netloop::wifi;

namespace {

WifiOptions twoTaps() {
  WifiOptions o;
  o.taps = {"t0", "t1"};
  o.ips = {"10.0.0.1", "10.0.0.2"};
  return o;
}

LossBursts threeNodes() {
  LossBursts b;
  b.perNode.assign(3, 0.0);
  return b;
}

}  // namespace

TEST(WifiOptions, SplitListDropsEmptyItems) {
  EXPECT_EQ(SplitList("a,,b,"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(SplitList("").empty());
}

TEST(WifiOptions, DefaultsWithTwoTapsAreValid) { EXPECT_EQ(ValidateOptions(twoTaps()), ""); }

TEST(WifiOptions, EachProblemIsNamed) {
  WifiOptions o = twoTaps();
  o.layout = "ring";
  EXPECT_EQ(ValidateOptions(o), "--layout ring: allowed line, star");
  o = twoTaps();
  o.ips.pop_back();
  EXPECT_EQ(ValidateOptions(o), "need 2 or 3 --taps (up to 17 with --layout star) and as many --ips");
  o = twoTaps();
  o.standard = "80211ac";
  EXPECT_EQ(ValidateOptions(o), "--standard 80211ac: allowed 80211a, 80211g, 80211n");
  o = twoTaps();
  o.frameErrorRate = 1.0;
  EXPECT_EQ(ValidateOptions(o),
            "need 0 <= --frame-error-rate < 1, --error-burst >= 1 and 1 <= --retry-limit <= 255");
  o = twoTaps();
  o.backgroundPairs = 1;  // without a rate
  EXPECT_NE(ValidateOptions(o).find("--background-mbit > 0 with pairs"), std::string::npos);
  o.backgroundMbit = 1;
  o.mode = "ap";
  EXPECT_EQ(ValidateOptions(o), "--background-pairs needs --mode adhoc");
}

TEST(WifiOptions, StarTakesUpTo17TapsAndApOnALineExactlyTwo) {
  WifiOptions o = twoTaps();
  for (int i = 2; i < 17; ++i) {
    o.taps.push_back("t" + std::to_string(i));
    o.ips.push_back("10.0.0." + std::to_string(i + 1));
  }
  EXPECT_NE(ValidateOptions(o), "");
  o.layout = "star";
  EXPECT_EQ(ValidateOptions(o), "");
  o.mode = "ap";
  EXPECT_EQ(ValidateOptions(o), "");
  o = twoTaps();
  o.taps.push_back("t2");
  o.ips.push_back("10.0.0.3");
  o.mode = "ap";
  EXPECT_EQ(ValidateOptions(o),
            "--mode ap on a line takes exactly 2 --taps (the stations); more with --layout star");
}

TEST(ControlInput, LossLinesSetANodeOrAll) {
  LossBursts b = threeNodes();
  EXPECT_EQ(ApplyControl("loss 1 0.25", b), "");
  EXPECT_EQ(ApplyControl("loss all 0.5", b), "");
  EXPECT_DOUBLE_EQ(b.perNode[1], 0.25);
  EXPECT_DOUBLE_EQ(b.all, 0.5);
  EXPECT_EQ(ApplyControl("loss 1 0", b), "");
  EXPECT_DOUBLE_EQ(b.perNode[1], 0.0);
}

TEST(ControlInput, BadLinesChangeNothing) {
  const std::string bad =
      "bad control line (expected: loss <node index>|all <probability 0..1>, or down, up or open "
      "<node index>)";
  LossBursts b = threeNodes();
  for (const char* line : {"", "loss", "loss 0", "loss 0 x", "gain 0 0.5", "loss 0 1.5", "loss 0 -0.1"}) {
    EXPECT_EQ(ApplyControl(line, b), bad) << line;
  }
  EXPECT_EQ(ApplyControl("loss 3 0.5", b), "no node 3");
  EXPECT_EQ(ApplyControl("loss 1x 0.5", b), "no node 1x");
  EXPECT_EQ(b.perNode, std::vector<double>(3, 0.0));
  EXPECT_DOUBLE_EQ(b.all, 0.0);
}

TEST(ControlInput, DownUpAndOpenLinesNameAStation) {
  StationSwitch s;
  EXPECT_EQ(ParseStationLine("down 1", 3, s), "");
  EXPECT_EQ(s.node, 1);
  EXPECT_EQ(s.action, StationSwitch::kDown);
  EXPECT_EQ(ParseStationLine("up 2", 3, s), "");
  EXPECT_EQ(s.action, StationSwitch::kUp);
  EXPECT_EQ(ParseStationLine("open 0", 3, s), "");
  EXPECT_EQ(s.node, 0);
  EXPECT_EQ(s.action, StationSwitch::kOpen);
  EXPECT_EQ(ParseStationLine("loss 0 0.5", 3, s), "");  // not a station line: for ApplyControl
  EXPECT_EQ(s.action, StationSwitch::kNone);
  EXPECT_EQ(ParseStationLine("down 3", 3, s), "no node 3");
  EXPECT_EQ(ParseStationLine("up all", 3, s), "no node all");
  EXPECT_EQ(ParseStationLine("down", 3, s), "bad control line (expected: down <node index>)");
  EXPECT_EQ(ParseStationLine("open 1 2", 3, s), "bad control line (expected: open <node index>)");
  EXPECT_EQ(s.action, StationSwitch::kNone);
}

TEST(ControlInput, ASenderLosesTheLargerOfItsBurstAndAll) {
  LossBursts b = threeNodes();
  b.perNode[0] = 0.3;
  b.all = 0.1;
  EXPECT_DOUBLE_EQ(b.ForSender(0), 0.3);
  EXPECT_DOUBLE_EQ(b.ForSender(1), 0.1);
  EXPECT_DOUBLE_EQ(b.ForSender(-1), 0.1);  // not one of the nodes: a background station
  b.all = 0.6;
  EXPECT_DOUBLE_EQ(b.ForSender(0), 0.6);
}

TEST(ControlInput, LinesAreHandedOutWholeAsTheyComplete) {
  LineBuffer in;
  std::string line;
  in.Append("loss 0 ", 7);
  EXPECT_FALSE(in.Next(line));
  in.Append("0.5\nloss all 0\nlo", 17);
  ASSERT_TRUE(in.Next(line));
  EXPECT_EQ(line, "loss 0 0.5");
  ASSERT_TRUE(in.Next(line));
  EXPECT_EQ(line, "loss all 0");
  EXPECT_FALSE(in.Next(line));
  in.Append("ss 1 1\n", 7);
  ASSERT_TRUE(in.Next(line));
  EXPECT_EQ(line, "loss 1 1");
}

TEST(LagTracker, MeansMaximaAndLateProbes) {
  LagTracker t(5.0);
  t.Probe(-1.0, 100.0);  // counts as 0
  t.Probe(2.0, 100.001);
  t.Probe(7.0, 100.002);
  const LagStats& s = t.Stats();
  EXPECT_EQ(s.totalCount, 3u);
  EXPECT_EQ(s.late, 1u);
  EXPECT_DOUBLE_EQ(s.intervalMax, 7.0);
  EXPECT_DOUBLE_EQ(s.totalSum, 9.0);
  t.EndInterval();
  EXPECT_EQ(t.Stats().intervalCount, 0u);
  EXPECT_DOUBLE_EQ(t.Stats().intervalMax, 0.0);
  EXPECT_DOUBLE_EQ(t.Stats().totalMax, 7.0);
  EXPECT_EQ(t.Stats().totalCount, 3u);
}

TEST(LagTracker, AStallIsReportedOnceOverWhenItBeganAndHowFar) {
  LagTracker t(5.0);
  t.Probe(1.0, 10.0);
  t.Probe(20.0, 10.020);  // fell behind at 10.000
  t.Probe(40.0, 10.041);
  EXPECT_TRUE(t.InStall());
  EXPECT_TRUE(t.TakeStalls(false).empty());  // still under way
  t.Probe(0.5, 10.042);
  std::vector<Stall> stalls = t.TakeStalls(false);
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_NEAR(stalls[0].startWall, 10.0, 1e-9);
  EXPECT_DOUBLE_EQ(stalls[0].maxMs, 40.0);
  EXPECT_EQ(stalls[0].probes, 2u);
  EXPECT_TRUE(t.TakeStalls(false).empty());  // reported once
}

TEST(LagTracker, TheFinalLineEndsAStallUnderWay) {
  LagTracker t(5.0);
  t.Probe(9.0, 50.0);
  std::vector<Stall> stalls = t.TakeStalls(true);
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_EQ(stalls[0].probes, 1u);
  EXPECT_FALSE(t.InStall());
}

TEST(WifiStats, AStatsLineHasEveryKeyInOrder) {
  StatsSnapshot s;
  s.wall = 1700000000.5;
  s.simS = 2.0;
  s.lag.intervalMax = 1.5;
  s.lag.intervalSum = 3.0;
  s.lag.intervalCount = 4;
  s.lag.totalMax = 6.0;
  s.lag.totalSum = 8.0;
  s.lag.totalCount = 10;
  s.lag.late = 1;
  s.lagBoundMs = 5.0;
  s.usage = ProcessUsage{0.25, 7, 0, 3};
  s.stalls = {Stall{1699999999.0, 6.0, 1}};
  NodeCounters c;
  c.macTx = 5;
  c.macRx = 4;
  c.dataMpduTx = 6;
  c.dataPpduTx = 4;
  c.corrupted = 1;
  c.SampleQueue(2);
  c.SampleQueue(0);
  c.Arrival(1, true);
  c.Arrival(3, false);
  s.nodes = {c, NodeCounters{}};
  EXPECT_EQ(FormatStatsLine("stats", s),
            "{\"type\":\"stats\",\"wall\":1700000000.500000,\"sim_s\":2.000000,\"lag_max_ms\":1.500000,"
            "\"lag_mean_ms\":0.750000,\"lag_max_total_ms\":6.000000,\"lag_mean_total_ms\":0.800000,"
            "\"probes\":10,\"late_probes\":1,\"lag_bound_ms\":5.000000,\"cpu_s\":0.250000,"
            "\"stalls\":[[1699999999.000000,6.000000,1]],\"minor_faults\":7,\"major_faults\":0,"
            "\"involuntary_switches\":3,\"nodes\":[{\"mac_tx\":5,\"mac_rx\":4,\"queue_drop\":0,"
            "\"retries\":0,\"final_fail\":0,\"phy_tx_drop\":0,\"phy_rx_drop\":0,\"data_mpdu_tx\":6,"
            "\"data_ppdu_tx\":4,\"fer_drops\":1,\"burst_drops\":0,\"mac_queue_mean\":1.000000,"
            "\"mac_queue_max\":2,\"mac_queue_max_total\":2,\"mac_queue_drop\":3,\"mac_queue_arrivals\":2,"
            "\"mac_queue_ahead_mean\":2.000000,"
            "\"small_arrivals\":1,\"small_ahead_mean\":1.000000,\"small_ahead_max\":1},"
            "{\"mac_tx\":0,\"mac_rx\":0,\"queue_drop\":0,\"retries\":0,\"final_fail\":0,"
            "\"phy_tx_drop\":0,\"phy_rx_drop\":0,\"data_mpdu_tx\":0,\"data_ppdu_tx\":0,\"fer_drops\":0,"
            "\"burst_drops\":0,"
            "\"mac_queue_mean\":0.000000,\"mac_queue_max\":0,\"mac_queue_max_total\":0,"
            "\"mac_queue_drop\":0,\"mac_queue_arrivals\":0,\"mac_queue_ahead_mean\":0.000000,\"small_arrivals\":0,"
            "\"small_ahead_mean\":0.000000,\"small_ahead_max\":0}]}\n");
}

TEST(WifiStats, QueueRefusedIsWhatTheMacTookButNeverQueued) {
  NodeCounters c;
  c.macTx = 10;
  c.Arrival(0, true);
  EXPECT_EQ(c.QueueRefused(), 9u);
  c.qos = true;  // with QoS every access category's queue counts, not only best effort's
  c.acEnqueued = {4, 1, 2, 3};
  EXPECT_EQ(c.QueueRefused(), 0u);
}

TEST(WifiStats, BackgroundAppearsOnlyWithPairs) {
  StatsSnapshot s;
  const std::string without = FormatStatsLine("final", s);
  EXPECT_EQ(without.rfind("{\"type\":\"final\",", 0), 0u);
  EXPECT_EQ(without.find("background"), std::string::npos);
  EXPECT_NE(without.find("\"stalls\":[],"), std::string::npos);
  s.background = BackgroundCounts{2, 10, 9, 1};
  const std::string with = FormatStatsLine("final", s);
  EXPECT_NE(with.find("\"nodes\":[],\"background\":{\"pairs\":2,\"offered\":10,\"sent\":9,"
                      "\"queue_drop\":1}}\n"),
            std::string::npos);
}

TEST(WifiStats, AfterALineTheIntervalFiguresStartAgain) {
  NodeCounters c;
  c.SampleQueue(9);
  c.Arrival(4, true);
  c.EndInterval();
  EXPECT_EQ(c.qSamples, 0u);
  EXPECT_EQ(c.qMax, 0u);
  EXPECT_EQ(c.qMaxTotal, 9u);
  EXPECT_EQ(c.arrivals, 1u);
}

TEST(WifiStats, StationLines) {
  EXPECT_EQ(FormatStationLine(3.25, 1.5, 1, "associated"),
            "{\"type\":\"station\",\"wall\":3.250000,\"sim_s\":1.500000,\"node\":1,\"event\":\"associated\"}\n");
}

TEST(WifiStats, ReadyAndControlLines) {
  EXPECT_EQ(FormatReadyLine(12.5, 42, 0.001, {"00:00:00:00:00:01", "00:00:00:00:00:02"}),
            "{\"type\":\"ready\",\"wall\":12.500000,\"pid\":42,\"sim_s\":0.001000,"
            "\"macs\":[\"00:00:00:00:00:01\",\"00:00:00:00:00:02\"]}\n");
  EXPECT_EQ(FormatControlLine(3.25, "loss all 0.2", ""),
            "{\"type\":\"control\",\"wall\":3.250000,\"line\":\"loss all 0.2\",\"error\":null}\n");
  EXPECT_EQ(FormatControlLine(3.25, "say \"hi\"\\\t", "bad"),
            "{\"type\":\"control\",\"wall\":3.250000,\"line\":\"say ?hi???\",\"error\":\"bad\"}\n");
  // an error that quotes the input (an unknown node name) is made safe the same way
  EXPECT_EQ(FormatControlLine(1.0, "loss a\"b 0.5", "unknown node 'a\"b'"),
            "{\"type\":\"control\",\"wall\":1.000000,\"line\":\"loss a?b 0.5\",\"error\":\"unknown node 'a?b'\"}\n");
}
