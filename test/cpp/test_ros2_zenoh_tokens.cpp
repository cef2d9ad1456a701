// rmw_zenoh's liveliness tokens as netloop forms them (include/netloop/ros2/zenoh_tokens.h). The
// expected strings are written out by hand from rmw_zenoh_cpp 0.2.10 (Jazzy),
// src/detail/liveliness_utils.cpp and src/detail/qos.cpp; test/test_ros2_zenoh_peer.py checks the
// same format on the wire against an independent Zenoh peer.
#include <gtest/gtest.h>

#include "netloop/ros2/zenoh_tokens.h"

namespace {

using namespace netloop::ros2;

const char kHash[] = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18";

ZenohNode talker() {
  ZenohNode n;
  n.domain_id = 0;
  n.zid = "8c1b3e5f0a2d4c6e8f1a3b5c7d9e0f12";
  n.id = 0;
  n.ns = "/";
  n.name = "talker";
  return n;
}

TEST(ZenohTokens, NodeToken) {
  EXPECT_EQ(zenohNodeToken(talker()), "@ros2_lv/0/8c1b3e5f0a2d4c6e8f1a3b5c7d9e0f12/0/0/NN/%/%/talker");
  ZenohNode n = talker();
  n.domain_id = 7;
  n.id = 3;
  n.ns = "/robot/arm";
  EXPECT_EQ(zenohNodeToken(n), "@ros2_lv/7/8c1b3e5f0a2d4c6e8f1a3b5c7d9e0f12/3/3/NN/%/%robot%arm/talker");
}

TEST(ZenohTokens, QosFieldOfRos2sProfiles) {
  EXPECT_EQ(zenohQosField(qosProfile("default")), "::,10:,:,:,,");
  EXPECT_EQ(zenohQosField(qosProfile("sensor_data")), "2::,5:,:,:,,");
  EXPECT_EQ(zenohQosField(qosProfile("transient_local")), ":1:,10:,:,:,,");
  Qos q;
  q.depth = 42;  // rmw_zenoh's default depth: left out
  EXPECT_EQ(zenohQosField(q), "::,:,:,:,,");
}

TEST(ZenohTokens, EndpointTokens) {
  EXPECT_EQ(zenohEndpointToken(talker(), 1, ZenohEntity::Publisher, "/chatter", "std_msgs/String", kHash, Qos{}),
            std::string("@ros2_lv/0/8c1b3e5f0a2d4c6e8f1a3b5c7d9e0f12/0/1/MP/%/%/talker/%chatter/"
                        "std_msgs::msg::dds_::String_/") +
                kHash + "/::,10:,:,:,,");
  EXPECT_EQ(zenohEndpointToken(talker(), 2, ZenohEntity::Subscription, "/flows/image", "sensor_msgs/Image", "",
                               qosProfile("sensor_data")),
            "@ros2_lv/0/8c1b3e5f0a2d4c6e8f1a3b5c7d9e0f12/0/2/MS/%/%/talker/%flows%image/"
            "sensor_msgs::msg::dds_::Image_/TypeHashNotSupported/2::,5:,:,:,,");
}

TEST(ZenohTokens, PatternMatchesEveryNodeAndQosOfTheTopic) {
  EXPECT_EQ(zenohEndpointPattern(5, ZenohEntity::Subscription, "/y", "netloop/LoopSample", kHash),
            std::string("@ros2_lv/5/*/*/*/MS/*/*/*/%y/netloop::msg::dds_::LoopSample_/") + kHash + "/*");
}

TEST(ZenohTokens, NodeNamesSplitIntoNamespaceAndName) {
  std::string ns, name;
  splitNodeName("/robot/flow_sink", &ns, &name);
  EXPECT_EQ(ns, "/robot");
  EXPECT_EQ(name, "flow_sink");
  splitNodeName("/plant", &ns, &name);
  EXPECT_EQ(ns, "/");
  EXPECT_EQ(name, "plant");
  splitNodeName("plant", &ns, &name);
  EXPECT_EQ(ns, "/");
  EXPECT_EQ(name, "plant");
  EXPECT_THROW(splitNodeName("/", &ns, &name), std::invalid_argument);
}

}  // namespace
