// Unit tests of the 802.11e classification of the Wi-Fi emulator (src/ns3/user_priority.h):
// DSCP -> user priority as Linux's cfg80211_classify8021d (RFC 8325), user priority -> access
// category, frames as the MAC sees them (LLC/SNAP + IP), and the stats line's "ac_enqueued".
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "user_priority.h"
#include "wifi_stats.h"

using namespace netloop::wifi;

namespace {

/// The DS field of a DSCP (ECN bits 0).
uint8_t ds(int dscp) { return uint8_t(dscp << 2); }

/// A frame as WifiNetDevice::Send hands it to the MAC: LLC/SNAP with `etherType`, then `net`.
std::vector<uint8_t> llcFrame(uint16_t etherType, std::vector<uint8_t> net) {
  std::vector<uint8_t> f = {0xaa, 0xaa, 0x03, 0, 0, 0, uint8_t(etherType >> 8), uint8_t(etherType)};
  f.insert(f.end(), net.begin(), net.end());
  return f;
}

uint8_t upOf(const std::vector<uint8_t>& frame) { return UserPriorityOfLlcFrame(frame.data(), frame.size()); }

}  // namespace

TEST(UserPriority, Rfc8325ExceptionsAndTheThreeHighBitsOtherwise) {
  struct Case { int dscp; int up; const char* name; };
  const Case cases[] = {
      {0, 0, "CS0"},   {8, 1, "CS1"},   {10, 0, "AF11"}, {12, 0, "AF12"}, {14, 0, "AF13"},
      {16, 0, "CS2"},  {18, 3, "AF21"}, {20, 3, "AF22"}, {22, 3, "AF23"}, {24, 4, "CS3"},
      {26, 4, "AF31"}, {28, 4, "AF32"}, {30, 4, "AF33"}, {32, 4, "CS4"},  {34, 4, "AF41"},
      {36, 4, "AF42"}, {38, 4, "AF43"}, {40, 5, "CS5"},  {44, 6, "VA"},   {46, 6, "EF"},
      {48, 7, "CS6"},  {56, 7, "CS7"},  {1, 0, "LE"},    {63, 7, "63"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(UserPriorityOfDsField(ds(c.dscp)), c.up) << c.name;
    EXPECT_EQ(UserPriorityOfDsField(ds(c.dscp) | 3), c.up) << c.name << " with ECN CE";
  }
}

TEST(UserPriority, AccessCategoriesOfTheEightPriorities) {
  const char* expected[8] = {"BE", "BK", "BK", "BE", "VI", "VI", "VO", "VO"};
  for (uint8_t up = 0; up < 8; ++up) {
    EXPECT_STREQ(AccessCategoryName(AccessCategoryOfUserPriority(up)), expected[up]) << int(up);
  }
  EXPECT_EQ(AccessCategoryOfUserPriority(UserPriorityOfDsField(ds(46))), AccessCategory::kVoice);
  EXPECT_EQ(AccessCategoryOfUserPriority(UserPriorityOfDsField(ds(0))), AccessCategory::kBestEffort);
}

TEST(UserPriority, FramesAreClassifiedByTheirNetworkHeader) {
  // IPv4: version/IHL 0x45, then the TOS byte
  EXPECT_EQ(upOf(llcFrame(0x0800, {0x45, ds(46), 0, 28})), 6);
  EXPECT_EQ(upOf(llcFrame(0x0800, {0x45, 0x00, 0, 28})), 0);
  EXPECT_EQ(upOf(llcFrame(0x0800, {0x45, ds(48), 0, 28})), 7);
  // IPv6: the traffic class spans the first two bytes (EF = 0xb8: 0x6b 0x80)
  EXPECT_EQ(upOf(llcFrame(0x86dd, {0x6b, 0x80, 0, 0})), 6);
  EXPECT_EQ(upOf(llcFrame(0x86dd, {0x60, 0x00, 0, 0})), 0);
  // MPLS: the first label's traffic class (TC 5 in bits 11..9)
  EXPECT_EQ(upOf(llcFrame(0x8847, {0x00, 0x01, 0x0b, 0x40})), 5);
  // IEEE 802.21 always 7; ARP and frames too short to tell 0
  EXPECT_EQ(upOf(llcFrame(0x8917, {0, 0, 0, 0})), 7);
  EXPECT_EQ(upOf(llcFrame(0x0806, {0x00, 0x01, 0x08, 0x00})), 0);
  EXPECT_EQ(upOf(llcFrame(0x0800, {0x45})), 0);
  EXPECT_EQ(UserPriorityOfLlcFrame(nullptr, 0), 0);
}

TEST(WifiStats, AccessCategoryCountsOnlyWithQos) {
  StatsSnapshot s;
  NodeCounters plain, qos;
  qos.qos = true;
  qos.acEnqueued = {5, 0, 1, 7};
  s.nodes = {plain, qos};
  const std::string line = FormatStatsLine("stats", s);
  EXPECT_EQ(line.find("ac_enqueued"), line.rfind("ac_enqueued"));  // once: the QoS node's
  EXPECT_NE(line.find("\"small_ahead_max\":0,\"ac_enqueued\":{\"BE\":5,\"BK\":0,\"VI\":1,\"VO\":7}}]"),
            std::string::npos);
}
