// An independent check of netloop_ros2's Cyclone DDS samples: Cyclone's own type support,
// compiled by idlc from ROS 2's IDL of the types (ros2_idl/netloop_ros2_interop.idl), reads what
// netloop publishes and writes what netloop subscribes, under ROS 2's topic and type names. The
// endpoints match only if the type names are equal; the fields come out right only if netloop's
// CDR is the CDR Cyclone's generated (de)serializer makes.
#include <gtest/gtest.h>

#if defined(NETLOOP_ROS2_INTEROP_IDL) && defined(NETLOOP_ROS2_HAVE_CYCLONEDDS)
#include <dds/dds.h>
#include <ros/serialization.h>
#include <sensor_msgs/Image.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include "netloop/LoopSample.h"
#include "ros1_bytes.h"
#include "netloop/ros2/cdr.h"
#include "netloop/ros2/middleware.h"
#include "netloop_ros2_interop.h"

using namespace netloop::ros2;
using Bytes = std::vector<uint8_t>;
using netloop::testing::layoutOf;
using netloop::testing::serialize;

namespace {


class Ros2Interop : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.middleware = "cyclonedds";
    config_.domain_id = 1 + static_cast<int>((getpid() * 17 + 101) % 200);
    config_.config_file = "/tmp/netloop_test_ros2_interop_" + std::to_string(getpid()) + ".xml";
    std::ofstream(config_.config_file)
        << "<CycloneDDS><Domain id=\"any\"><General><Interfaces><NetworkInterface name=\"lo\"/></Interfaces>"
           "<AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex>"
           "<Peers><Peer address=\"127.0.0.1\"/></Peers></Discovery></Domain></CycloneDDS>\n";
    netloop_ = createParticipant(config_);  // creates the domain with the loopback configuration
    pp_ = dds_create_participant(static_cast<dds_domainid_t>(config_.domain_id), nullptr, nullptr);
    ASSERT_GT(pp_, 0) << dds_strretcode(pp_);
    qos_ = dds_create_qos();
    dds_qset_reliability(qos_, DDS_RELIABILITY_RELIABLE, DDS_MSECS(100));
    dds_qset_history(qos_, DDS_HISTORY_KEEP_LAST, 10);
  }
  void TearDown() override {
    if (qos_) dds_delete_qos(qos_);
    if (pp_ > 0) dds_delete(pp_);
    netloop_.reset();
    unlink(config_.config_file.c_str());
  }
  ParticipantConfig config_;
  std::unique_ptr<Participant> netloop_;
  dds_entity_t pp_ = 0;
  dds_qos_t* qos_ = nullptr;
};

TEST_F(Ros2Interop, CycloneGeneratedReaderReadsNetloopLoopSamples) {
  dds_entity_t topic = dds_create_topic(pp_, &netloop_msg_dds__LoopSample__desc, "rt/interop_y", nullptr, nullptr);
  ASSERT_GT(topic, 0) << dds_strretcode(topic);
  dds_entity_t reader = dds_create_reader(pp_, topic, qos_, nullptr);
  ASSERT_GT(reader, 0) << dds_strretcode(reader);
  auto pub = netloop_->createPublisher("/interop_y", "netloop/LoopSample", qosProfile("default"));
  for (int i = 0; i < 400 && pub->matched() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(pub->matched(), 1u) << "Cyclone's generated reader of netloop::msg::dds_::LoopSample_ did not match";

  netloop::LoopSample m;
  m.seq = 42;
  m.value = 1.25;
  m.stamp = ros::Time(1700000000, 999);
  m.answer_seq = -5;
  m.answer_stamp = ros::Time(3, 4);
  m.padding.resize(301);
  for (size_t i = 0; i < m.padding.size(); ++i) m.padding[i] = uint8_t(i);
  Bytes ros1 = serialize(m);
  pub->publish(ros1ToCdr(*layoutOf<netloop::LoopSample>(), ros1.data(), ros1.size()));

  void* samples[1] = {nullptr};
  dds_sample_info_t info[1];
  dds_return_t n = 0;
  for (int i = 0; i < 300 && n <= 0; ++i) {
    n = dds_take(reader, samples, info, 1, 1);
    if (n <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(n, 1);
  ASSERT_TRUE(info[0].valid_data);
  auto* s = static_cast<netloop_msg_dds__LoopSample_*>(samples[0]);
  EXPECT_EQ(s->seq, 42u);
  EXPECT_EQ(s->value, 1.25);
  EXPECT_EQ(s->stamp.sec, 1700000000);
  EXPECT_EQ(s->stamp.nanosec, 999u);
  EXPECT_EQ(s->answer_seq, -5);
  EXPECT_EQ(s->answer_stamp.sec, 3);
  EXPECT_EQ(s->answer_stamp.nanosec, 4u);
  ASSERT_EQ(s->padding._length, 301u);
  EXPECT_EQ(Bytes(s->padding._buffer, s->padding._buffer + 301), m.padding);
  dds_return_loan(reader, samples, n);
}

TEST_F(Ros2Interop, NetloopReadsCycloneGeneratedImages) {
  std::mutex mu;
  std::condition_variable cv;
  Bytes got;
  auto sub = netloop_->createSubscription("/interop_image", "sensor_msgs/Image", qosProfile("default"),
                                          [&](const uint8_t* p, size_t len, int64_t) {
                                            std::lock_guard<std::mutex> lock(mu);
                                            got.assign(p, p + len);
                                            cv.notify_all();
                                          });
  dds_entity_t topic = dds_create_topic(pp_, &sensor_msgs_msg_dds__Image__desc, "rt/interop_image", nullptr, nullptr);
  ASSERT_GT(topic, 0) << dds_strretcode(topic);
  dds_entity_t writer = dds_create_writer(pp_, topic, qos_, nullptr);
  ASSERT_GT(writer, 0) << dds_strretcode(writer);
  for (int i = 0; i < 400 && sub->matched() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(sub->matched(), 1u) << "Cyclone's generated writer of sensor_msgs::msg::dds_::Image_ did not match";

  std::vector<uint8_t> data(1001);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 3);
  sensor_msgs_msg_dds__Image_ img{};
  img.header.stamp.sec = 12;
  img.header.stamp.nanosec = 34;
  img.header.frame_id = const_cast<char*>("camera_link");
  img.height = 7;
  img.width = 143;
  img.encoding = const_cast<char*>("mono8");
  img.is_bigendian = 1;
  img.step = 143;
  img.data._length = img.data._maximum = static_cast<uint32_t>(data.size());
  img.data._buffer = data.data();
  img.data._release = false;
  ASSERT_EQ(dds_write(writer, &img), 0);

  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(3), [&] { return !got.empty(); }));
  Bytes ros1 = cdrToRos1(*layoutOf<sensor_msgs::Image>(), got.data(), got.size());
  sensor_msgs::Image m;
  ros::serialization::IStream in(ros1.data(), ros1.size());
  ros::serialization::deserialize(in, m);
  EXPECT_EQ(m.header.seq, 0u);
  EXPECT_EQ(m.header.stamp, ros::Time(12, 34));
  EXPECT_EQ(m.header.frame_id, "camera_link");
  EXPECT_EQ(m.height, 7u);
  EXPECT_EQ(m.width, 143u);
  EXPECT_EQ(m.encoding, "mono8");
  EXPECT_EQ(m.is_bigendian, 1);
  EXPECT_EQ(m.step, 143u);
  EXPECT_EQ(m.data, data);
}

}  // namespace

#else
TEST(Ros2Interop, DISABLED_NeedsCycloneDdsAndIdlc) {}
#endif
