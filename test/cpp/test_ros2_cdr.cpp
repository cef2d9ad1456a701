// ROS 1 <-> ROS 2 CDR conversion (src/ros2/cdr_*.cpp): byte layouts computed by hand, round trips
// of real messages serialized by roscpp, bad inputs; ROS 2 names and QoS words.
#include <gtest/gtest.h>
#include <ros/serialization.h>
#include <sensor_msgs/CompressedImage.h>
#include <sensor_msgs/Image.h>
#include <sensor_msgs/LaserScan.h>
#include <sensor_msgs/PointCloud.h>

#include <chrono>
#include <cstring>

#include "netloop/LoopSample.h"
#include "netloop/ros2/cdr.h"
#include "netloop/ros2/middleware.h"
#include "netloop/ros2/names.h"
#include "ros1_bytes.h"

using namespace netloop::ros2;
using Bytes = std::vector<uint8_t>;
using netloop::testing::layoutOf;
using netloop::testing::serialize;

namespace {

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
Bytes u32(uint32_t v) { return {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)}; }
Bytes u16(uint16_t v) { return {uint8_t(v), uint8_t(v >> 8)}; }
Bytes f64(double d) {
  Bytes b(8);
  memcpy(b.data(), &d, 8);
  return b;
}
Bytes f32(float f) {
  Bytes b(4);
  memcpy(b.data(), &f, 4);
  return b;
}
Bytes str(const std::string& s) { return Bytes(s.begin(), s.end()); }
Bytes zeros(size_t n) { return Bytes(n, 0); }
const Bytes kEncap = {0x00, 0x01, 0x00, 0x00};

Bytes toCdr(const std::string& type, const std::string& def, const Bytes& ros1) {
  auto layout = MessageLayout::parse(type, def);
  return ros1ToCdr(*layout, ros1.data(), ros1.size());
}
Bytes toRos1(const std::string& type, const std::string& def, const Bytes& cdr) {
  auto layout = MessageLayout::parse(type, def);
  return cdrToRos1(*layout, cdr.data(), cdr.size());
}

template <class M>
M deserialize(const Bytes& b) {
  M m;
  ros::serialization::IStream s(const_cast<uint8_t*>(b.data()), b.size());
  ros::serialization::deserialize(s, m);
  return m;
}

}  // namespace

TEST(Ros2Cdr, Uint8ThenFloat64IsPaddedTo8) {
  Bytes ros1 = cat({{0x2a}, f64(1.5)});
  Bytes want = cat({kEncap, {0x2a}, zeros(7), f64(1.5)});
  EXPECT_EQ(toCdr("t/A", "uint8 a\nfloat64 b\n", ros1), want);
  EXPECT_EQ(toRos1("t/A", "uint8 a\nfloat64 b\n", want), ros1);
}

TEST(Ros2Cdr, StringsCarryTheirNulAndLengthsAlignTo4) {
  const std::string def = "string s\nuint8 c\nstring t\nstring[2] u\n";
  Bytes ros1 = cat({u32(2), str("ab"), {7}, u32(0), u32(1), str("x"), u32(3), str("yzw")});
  // body: 0 len=3, 4 'a' 'b' 0, 7 c, 8 len=1, 12 NUL, pad to 16: len=2, 20 'x' 0, pad to 24: len=4, 28 "yzw" 0
  Bytes want = cat({kEncap, u32(3), str("ab"), {0}, {7}, u32(1), {0}, zeros(3), u32(2), str("x"), {0}, zeros(2),
                    u32(4), str("yzw"), {0}});
  EXPECT_EQ(toCdr("t/S", def, ros1), want);
  EXPECT_EQ(toRos1("t/S", def, want), ros1);
}

TEST(Ros2Cdr, HeaderDropsSeqAndTimeIsTwo32BitWords) {
  const std::string def =
      "# a comment\nHeader header  # trailing comment\nuint8 x\n"
      "================================================================================\n"
      "MSG: std_msgs/Header\nuint32 seq\ntime stamp\nstring frame_id\n";
  Bytes ros1 = cat({u32(5), u32(1), u32(2), u32(1), str("f"), {9}});
  Bytes want = cat({kEncap, u32(1), u32(2), u32(2), str("f"), {0}, {9}});
  EXPECT_EQ(toCdr("t/H", def, ros1), want);
  Bytes back = cat({u32(0), u32(1), u32(2), u32(1), str("f"), {9}});  // seq is 0 after ROS 2
  EXPECT_EQ(toRos1("t/H", def, want), back);
  EXPECT_TRUE(MessageLayout::parse("t/H", def)->startsWithHeader());
  EXPECT_FALSE(MessageLayout::parse("t/A", "uint8 a\n")->startsWithHeader());
  // Header without its MSG: section (std_msgs/Header is known).
  EXPECT_EQ(toCdr("t/H", "Header header\nuint8 x\n", ros1), want);
}

TEST(Ros2Cdr, NestedArraysOfMessagesResolvedInTheirPackage) {
  const std::string def =
      "Inner[] items\nuint8 tail\n"
      "================================================================================\n"
      "MSG: pkg/Inner\nuint8 a\nuint32 b\nDeep[2] d\n"
      "================================================================================\n"
      "MSG: pkg/Deep\nint16 z\n";
  Bytes ros1 = cat({u32(2), {1}, u32(0x11223344), u16(7), u16(8), {2}, u32(5), u16(9), u16(10), {0x0a}});
  // body: 0 count, 4 a, pad, 8 b, 12 z, 14 z, 16 a, pad, 20 b, 24 z, 26 z, 28 tail
  Bytes want = cat({kEncap, u32(2), {1}, zeros(3), u32(0x11223344), u16(7), u16(8), {2}, zeros(3), u32(5), u16(9),
                    u16(10), {0x0a}});
  EXPECT_EQ(toCdr("pkg/Outer", def, ros1), want);
  EXPECT_EQ(toRos1("pkg/Outer", def, want), ros1);
}

TEST(Ros2Cdr, TypesWithoutPackageResolveInTheirOwnSectionsPackage) {
  const std::string def =
      "b/Mid m\nLocal l\n"
      "================================================================================\n"
      "MSG: b/Mid\nLeaf leaf\n"
      "================================================================================\n"
      "MSG: b/Leaf\nuint16 x\n"
      "================================================================================\n"
      "MSG: a/Local\nuint8 y\n";
  Bytes ros1 = cat({u16(0x0102), {3}});
  EXPECT_EQ(toCdr("a/Top", def, ros1), cat({kEncap, u16(0x0102), {3}}));
  // "Leaf" in b/Mid is b/Leaf, not a/Leaf: without b/Leaf's section the definition is refused.
  const std::string missing = "b/Mid m\n===\nMSG: b/Mid\nLeaf leaf\n===\nMSG: a/Leaf\nuint16 x\n";
  EXPECT_THROW(MessageLayout::parse("a/Top", missing), CdrError);
}

TEST(Ros2Cdr, FixedArraysConstantsAndEmptySequences) {
  const std::string def =
      "int32 X=1\nstring S = a # not a comment\nfloat32[3] v\nuint8 k\nint16[2] w\ntime t\n"
      "float64[] d\nuint8 e\nduration[] ds\nbool flag\nchar c\nbyte b\n";
  Bytes ros1 = cat({f32(1), f32(2), f32(3), {4}, u16(5), u16(6), u32(7), u32(8), u32(0), {9}, u32(1), u32(10),
                    u32(11), {1}, {'c'}, {0xff}});
  // body: 0 v (12), 12 k, 14 w (4), 18 pad to 20: t (8), 28 d count 0 (no element padding), 32 e,
  // 36 ds count, 40 sec, 44 nsec, 48 flag, 49 c, 50 b
  Bytes want = cat({kEncap, f32(1), f32(2), f32(3), {4}, {0}, u16(5), u16(6), zeros(2), u32(7), u32(8), u32(0), {9},
                    zeros(3), u32(1), u32(10), u32(11), {1}, {'c'}, {0xff}});
  EXPECT_EQ(toCdr("t/F", def, ros1), want);
  EXPECT_EQ(toRos1("t/F", def, want), ros1);
}

TEST(Ros2Cdr, ArraysOfPlainMessagesAlignedOrNot) {
  // geometry_msgs/Point-like: one memcpy once aligned to 8.
  const std::string pts =
      "uint8 a\nPoint[] p\nPoint one\n===\nMSG: g/Point\nfloat64 x\nfloat64 y\nfloat64 z\n";
  Bytes ros1 = cat({{1}, u32(2), f64(1), f64(2), f64(3), f64(4), f64(5), f64(6), f64(7), f64(8), f64(9)});
  // body: 0 a, 4 count, 8 six doubles, 56 three doubles
  Bytes want = cat({kEncap, {1}, zeros(3), u32(2), f64(1), f64(2), f64(3), f64(4), f64(5), f64(6), f64(7), f64(8),
                    f64(9)});
  EXPECT_EQ(toCdr("g/Pts", pts, ros1), want);
  EXPECT_EQ(toRos1("g/Pts", pts, want), ros1);
  // {float32, float32, float64}: plain, but a sequence of it right after its count starts at 4,
  // not a multiple of 8: element by element, with padding before each c.
  const std::string mixed = "S[] s\n===\nMSG: g/S\nfloat32 a\nfloat32 b\nfloat64 c\n";
  Bytes r2 = cat({u32(2), f32(1), f32(2), f64(3), f32(4), f32(5), f64(6)});
  // body: 0 count, 4 a, 8 b, pad, 16 c, 24 a, 28 b, 32 c
  Bytes w2 = cat({kEncap, u32(2), f32(1), f32(2), zeros(4), f64(3), f32(4), f32(5), f64(6)});
  EXPECT_EQ(toCdr("g/M", mixed, r2), w2);
  EXPECT_EQ(toRos1("g/M", mixed, w2), r2);
  // The same after a uint32: the elements start at 8, so one memcpy.
  const std::string mixed2 = "uint32 n\nS[] s\n===\nMSG: g/S\nfloat32 a\nfloat32 b\nfloat64 c\n";
  Bytes r3 = cat({u32(9), u32(2), f32(1), f32(2), f64(3), f32(4), f32(5), f64(6)});
  Bytes w3 = cat({kEncap, u32(9), u32(2), f32(1), f32(2), f64(3), f32(4), f32(5), f64(6)});
  EXPECT_EQ(toCdr("g/M2", mixed2, r3), w3);
  EXPECT_EQ(toRos1("g/M2", mixed2, w3), r3);
  // Truncated inside the array: refused.
  Bytes cut(ros1.begin(), ros1.end() - 30);
  EXPECT_THROW(toCdr("g/Pts", pts, cut), CdrError);
}

TEST(Ros2Cdr, EmptyMessageHasOneByteInCdr) {
  EXPECT_EQ(toCdr("std_msgs/Empty", "", {}), cat({kEncap, {0}}));
  EXPECT_EQ(toRos1("std_msgs/Empty", "", cat({kEncap, {0}})), Bytes{});
}

TEST(Ros2Cdr, BigEndianCdrIsSwapped) {
  const std::string def = "uint16 a\nuint32[] b\nstring s\nfloat64 d\n";
  Bytes be = {0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xAA, 0xBB, 0xCC, 0xDD,
              0x00, 0x00, 0x00, 0x02, 'q', 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  double d = 2.0;
  uint64_t bits;
  memcpy(&bits, &d, 8);
  for (int i = 7; i >= 0; --i) be.push_back(uint8_t(bits >> (8 * i)));
  Bytes want = cat({u16(0x0102), u32(1), u32(0xAABBCCDD), u32(1), str("q"), f64(2.0)});
  EXPECT_EQ(toRos1("t/B", def, be), want);
}

TEST(Ros2Cdr, TrailingPaddingOfTheWriterIsAccepted) {
  Bytes cdr = cat({{0x00, 0x01, 0x00, 0x03}, {7}, zeros(3)});
  EXPECT_EQ(toRos1("t/P", "uint8 a\n", cdr), Bytes{7});
}

TEST(Ros2Cdr, LoopSampleLayoutByHand) {
  netloop::LoopSample m;
  m.seq = 3;
  m.value = 0.25;
  m.stamp = ros::Time(10, 20);
  m.answer_seq = -1;
  m.answer_stamp = ros::Time(0, 0);
  m.padding = {1, 2, 3};
  auto layout = layoutOf<netloop::LoopSample>();
  Bytes ros1 = serialize(m);
  Bytes cdr = ros1ToCdr(*layout, ros1.data(), ros1.size());
  // body: 0 seq, 4 pad, 8 value, 16 stamp, 24 answer_seq, 32 answer_stamp, 40 count, 44 bytes
  int64_t minus1 = -1;
  Bytes as(8);
  memcpy(as.data(), &minus1, 8);
  Bytes want = cat({kEncap, u32(3), zeros(4), f64(0.25), u32(10), u32(20), as, u32(0), u32(0), u32(3), {1, 2, 3}});
  EXPECT_EQ(cdr, want);
}

TEST(Ros2Cdr, RoundTripsOfRealMessages) {
  {
    netloop::LoopSample m;
    m.seq = 7;
    m.value = -3.5;
    m.stamp = ros::Time(1700000000, 123456789);
    m.answer_seq = 6;
    m.answer_stamp = ros::Time(1700000000, 5);
    m.padding.assign(1000, 0x5a);
    auto layout = layoutOf<netloop::LoopSample>();
    Bytes ros1 = serialize(m);
    Bytes cdr = ros1ToCdr(*layout, ros1.data(), ros1.size());
    EXPECT_EQ(cdrToRos1(*layout, cdr.data(), cdr.size()), ros1);
  }
  {
    sensor_msgs::CompressedImage m;
    m.header.seq = 0;  // ROS 2 has no seq: it comes back 0
    m.header.stamp = ros::Time(5, 6);
    m.header.frame_id = "camera";
    m.format = "jpeg";
    m.data.assign(65536, 0x33);
    auto layout = layoutOf<sensor_msgs::CompressedImage>();
    EXPECT_TRUE(layout->startsWithHeader());
    Bytes ros1 = serialize(m);
    Bytes cdr = ros1ToCdr(*layout, ros1.data(), ros1.size());
    EXPECT_EQ(cdrToRos1(*layout, cdr.data(), cdr.size()), ros1);
  }
  {
    sensor_msgs::PointCloud m;  // Point32[] (plain: one memcpy) and ChannelFloat32[] (strings)
    m.header.frame_id = "lidar";
    m.points.resize(1000);
    for (size_t i = 0; i < m.points.size(); ++i) m.points[i].x = m.points[i].y = m.points[i].z = float(i);
    m.channels.resize(2);
    m.channels[0].name = "intensity";
    m.channels[0].values.assign(1000, 0.5f);
    m.channels[1].name = "ring";
    auto layout = layoutOf<sensor_msgs::PointCloud>();
    Bytes ros1 = serialize(m);
    Bytes cdr = ros1ToCdr(*layout, ros1.data(), ros1.size());
    EXPECT_EQ(cdrToRos1(*layout, cdr.data(), cdr.size()), ros1);
  }
  {
    sensor_msgs::LaserScan m;
    m.header.seq = 99;
    m.header.frame_id = "laser";
    m.angle_min = -1.5f;
    m.angle_max = 1.5f;
    m.ranges.assign(360, 2.5f);
    m.intensities.assign(360, 100.f);
    auto layout = layoutOf<sensor_msgs::LaserScan>();
    Bytes ros1 = serialize(m);
    Bytes cdr = ros1ToCdr(*layout, ros1.data(), ros1.size());
    auto back = deserialize<sensor_msgs::LaserScan>(cdrToRos1(*layout, cdr.data(), cdr.size()));
    EXPECT_EQ(back.header.seq, 0u);
    m.header.seq = 0;
    EXPECT_EQ(serialize(back), serialize(m));
  }
  {
    sensor_msgs::Image m;
    m.header.frame_id = "cam";
    m.height = 1024;
    m.width = 1024;
    m.encoding = "rgba8";
    m.step = 4096;
    m.data.resize(4 << 20);
    for (size_t i = 0; i < m.data.size(); ++i) m.data[i] = uint8_t(i * 7);
    auto layout = layoutOf<sensor_msgs::Image>();
    Bytes ros1 = serialize(m);
    Bytes warm = ros1ToCdr(*layout, ros1.data(), ros1.size());
    warm = Bytes();
    auto t0 = std::chrono::steady_clock::now();
    Bytes cdr = ros1ToCdr(*layout, ros1.data(), ros1.size());
    auto t1 = std::chrono::steady_clock::now();
    Bytes back = cdrToRos1(*layout, cdr.data(), cdr.size());
    auto t2 = std::chrono::steady_clock::now();
    EXPECT_EQ(back, ros1);
    EXPECT_EQ(cdr.size(), ros1.size() + 4 /*encap*/ - 4 /*seq*/ + 2 /*NULs*/ + 1 /*padding before step*/);
    auto us = [](auto a, auto b) { return std::chrono::duration_cast<std::chrono::microseconds>(b - a).count(); };
    std::printf("4 MB Image: ros1ToCdr %lld us, cdrToRos1 %lld us\n", (long long)us(t0, t1), (long long)us(t1, t2));
    EXPECT_LT(us(t0, t1), 200000);
  }
}

TEST(Ros2Cdr, BadDefinitionsNameTheLine) {
  auto expectError = [](const std::string& def, const std::string& part) {
    try {
      MessageLayout::parse("t/Bad", def);
      ADD_FAILURE() << "no error for: " << def;
    } catch (const CdrError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expectError("uint8 a\nNoSuch b\n", "t/NoSuch");
  expectError("uint8 a\nuint32\n", "line 2");
  expectError("uint8[x] a\n", "not a number");
  expectError("uint8[3 a\n", "']'");
  expectError("uint8 a b\n", "unexpected 'b'");
  expectError("Self s\n===\nMSG: t/Self\nSelf s\n", "contains itself");
  EXPECT_THROW(MessageLayout::parse("NoPackage", "uint8 a\n"), CdrError);
}

TEST(Ros2Cdr, BadBytesThrow) {
  auto layout = layoutOf<sensor_msgs::CompressedImage>();
  sensor_msgs::CompressedImage m;
  m.format = "png";
  m.data.assign(10, 1);
  Bytes ros1 = serialize(m);
  Bytes cdr = ros1ToCdr(*layout, ros1.data(), ros1.size());
  try {
    ros1ToCdr(*layout, ros1.data(), ros1.size() - 1);
    ADD_FAILURE();
  } catch (const CdrError& e) {
    EXPECT_NE(std::string(e.what()).find("data"), std::string::npos) << e.what();
  }
  Bytes longer = ros1;
  longer.push_back(0);
  EXPECT_THROW(ros1ToCdr(*layout, longer.data(), longer.size()), CdrError);
  EXPECT_THROW(cdrToRos1(*layout, cdr.data(), cdr.size() - 1), CdrError);
  Bytes extra = cdr;
  extra.insert(extra.end(), 8, 0);
  EXPECT_THROW(cdrToRos1(*layout, extra.data(), extra.size()), CdrError);
  Bytes xcdr2 = cdr;
  xcdr2[1] = 0x07;
  EXPECT_THROW(cdrToRos1(*layout, xcdr2.data(), xcdr2.size()), CdrError);
  EXPECT_THROW(cdrToRos1(*layout, cdr.data(), 2), CdrError);
  // A huge sequence count must fail cleanly, not allocate.
  auto seq = MessageLayout::parse("t/Q", "uint64[] a\n");
  Bytes huge = cat({kEncap, u32(0xffffffff)});
  EXPECT_THROW(cdrToRos1(*seq, huge.data(), huge.size()), CdrError);
  Bytes huge1 = u32(0xffffffff);
  EXPECT_THROW(ros1ToCdr(*seq, huge1.data(), huge1.size()), CdrError);
  auto msgs = MessageLayout::parse("t/R", "t/S[] a\n===\nMSG: t/S\nstring x\n");
  EXPECT_THROW(cdrToRos1(*msgs, huge.data(), huge.size()), CdrError);
}

TEST(Ros2Names, TopicTypeAndKeyExpression) {
  EXPECT_EQ(ddsTopicName("/y"), "rt/y");
  EXPECT_EQ(ddsTopicName("/flows/image"), "rt/flows/image");
  EXPECT_EQ(ddsTopicName("y"), "rt/y");
  EXPECT_EQ(ddsTypeName("netloop/LoopSample"), "netloop::msg::dds_::LoopSample_");
  EXPECT_EQ(ddsTypeName("sensor_msgs/CompressedImage"), "sensor_msgs::msg::dds_::CompressedImage_");
  EXPECT_EQ(ddsTypeName("std_msgs/msg/String"), "std_msgs::msg::dds_::String_");
  EXPECT_THROW(ddsTypeName("LoopSample"), std::invalid_argument);
  EXPECT_THROW(ddsTypeName("a/b/c"), std::invalid_argument);
  EXPECT_EQ(zenohKeyExpr(0, "/chatter", "std_msgs/String", "RIHS01_df66"),
            "0/chatter/std_msgs::msg::dds_::String_/RIHS01_df66");
  EXPECT_EQ(zenohKeyExpr(3, "/a/b", "std_msgs/String", ""), "3/a/b/std_msgs::msg::dds_::String_/TypeHashNotSupported");
}

TEST(Ros2Qos, ProfilesAndWords) {
  Qos d = qosProfile("default");
  EXPECT_EQ(d.reliability, Reliability::Reliable);
  EXPECT_EQ(d.durability, Durability::Volatile);
  EXPECT_EQ(d.depth, 10);
  Qos s = qosProfile("sensor_data");
  EXPECT_EQ(s.reliability, Reliability::BestEffort);
  EXPECT_EQ(s.depth, 5);
  Qos t = qosProfile("transient_local");
  EXPECT_EQ(t.durability, Durability::TransientLocal);
  EXPECT_EQ(t.reliability, Reliability::Reliable);
  try {
    qosProfile("fast");
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sensor_data"), std::string::npos);
  }
  EXPECT_EQ(parseReliability("best_effort"), Reliability::BestEffort);
  EXPECT_EQ(parseDurability("transient_local"), Durability::TransientLocal);
  EXPECT_THROW(parseReliability("Reliable"), std::invalid_argument);
  EXPECT_THROW(parseDurability("persistent"), std::invalid_argument);
}

TEST(Ros2Factory, TheBuildsMiddlewaresInAStableOrder) {
  std::vector<std::string> want;
#ifdef NETLOOP_ROS2_HAVE_CYCLONEDDS
  want.push_back("cyclonedds");
#endif
#ifdef NETLOOP_ROS2_HAVE_FASTDDS
  want.push_back("fastdds");
#endif
#ifdef NETLOOP_ROS2_HAVE_RMW_FASTRTPS_CPP
  want.push_back("rmw_fastrtps_cpp");  // a plug-in, found beside the library at run time
#endif
  auto have = availableMiddlewares();
  std::vector<std::string> dds;
  for (const auto& m : have)
    if (m != "zenoh") dds.push_back(m);
  EXPECT_EQ(dds, want);
  if (!have.empty()) {
    ParticipantConfig c;
    c.middleware = have[0];
    c.domain_id = 233;
    EXPECT_THROW(createParticipant(c), std::invalid_argument);
  }
}

TEST(Ros2Factory, UnknownMiddlewareNamesTheAvailableOnes) {
  ParticipantConfig c;
  c.middleware = "opensplice";
  try {
    createParticipant(c);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("opensplice"), std::string::npos);
  }
}
