// The plumbing of the nodes' middleware endpoints that needs no ROS master: the header seq
// carried in frame_id, the inbox that hands samples to a roscpp callback queue, and (with
// netloop_ros2) a typed message through ROS 1 serialization -> CDR -> back.
#include <gtest/gtest.h>
#include <netloop/LoopSample.h>
#include <ros/callback_queue.h>
#include <sensor_msgs/CompressedImage.h>
#include <sensor_msgs/Image.h>

#include <string>
#include <vector>

#include "netloop/ros2/endpoint.h"
#include "netloop/ros2/ros_queue.h"
#ifdef NETLOOP_HAVE_ROS2
#include "netloop/ros2/cdr.h"
#endif

namespace {

using netloop::ros2::RosQueueInbox;

template <class M>
std::vector<uint8_t> ser(const M& m) {
  return netloop::ros2::detail::serializeRos1(m);
}

template <class M>
M deser(std::vector<uint8_t>& b) {
  M m;
  ros::serialization::IStream in(b.data(), static_cast<uint32_t>(b.size()));
  ros::serialization::deserialize(in, m);
  return m;
}

sensor_msgs::CompressedImage image(uint32_t seq, const std::string& frame) {
  sensor_msgs::CompressedImage m;
  m.header.seq = seq;
  m.header.stamp = ros::Time(1764140000, 123456789);
  m.header.frame_id = frame;
  m.format = "jpeg";
  m.data = {1, 2, 3, 4, 5};
  return m;
}

TEST(HeaderSeq, GoesIntoFrameIdAndComesBack) {
  const auto original = image(4242, "camera_optical_frame");
  const std::vector<uint8_t> bytes = ser(original);
  std::vector<uint8_t> marked = netloop::ros2::seqIntoFrameId(bytes.data(), bytes.size());
  EXPECT_EQ(marked.size(), bytes.size() + 5);  // "#4242"
  auto seen = deser<sensor_msgs::CompressedImage>(marked);
  EXPECT_EQ(seen.header.frame_id, "camera_optical_frame#4242");
  EXPECT_EQ(seen.data, original.data);
  // What ROS 2 delivers: the same message with seq 0; the seq comes back out of frame_id.
  seen.header.seq = 0;
  std::vector<uint8_t> arrived = ser(seen);
  ASSERT_TRUE(netloop::ros2::seqOutOfFrameId(arrived));
  EXPECT_EQ(arrived, bytes);
}

TEST(HeaderSeq, LargestSeqAndEmptyFrame) {
  const std::vector<uint8_t> bytes = ser(image(0xffffffffu, ""));
  std::vector<uint8_t> marked = netloop::ros2::seqIntoFrameId(bytes.data(), bytes.size());
  EXPECT_EQ(deser<sensor_msgs::CompressedImage>(marked).header.frame_id, "#4294967295");
  std::vector<uint8_t> zeroed = marked;
  std::fill(zeroed.begin(), zeroed.begin() + 4, 0);
  ASSERT_TRUE(netloop::ros2::seqOutOfFrameId(zeroed));
  EXPECT_EQ(zeroed, bytes);
}

TEST(HeaderSeq, FrameIdWithoutSeqIsLeftAlone) {
  for (const std::string frame : {"camera", "a#", "a#12x", "#", "a#99999999999"}) {
    std::vector<uint8_t> bytes = ser(image(7, frame));
    const std::vector<uint8_t> before = bytes;
    EXPECT_FALSE(netloop::ros2::seqOutOfFrameId(bytes)) << frame;
    EXPECT_EQ(bytes, before) << frame;
  }
  const std::vector<uint8_t> tiny(10, 0);
  EXPECT_THROW(netloop::ros2::seqIntoFrameId(tiny.data(), tiny.size()), std::invalid_argument);
}

TEST(RosQueueInbox, RunsOnTheQueueOldestFirstAndDropsBeyondDepth) {
  ros::CallbackQueue queue;
  std::vector<std::vector<uint8_t>> got;
  std::vector<int64_t> times;
  auto inbox = RosQueueInbox::create(
      [&](const uint8_t* d, size_t n, int64_t t) {
        got.emplace_back(d, d + n);
        times.push_back(t);
      },
      2, &queue);
  const uint8_t a[] = {1}, b[] = {2, 2}, c[] = {3, 3, 3};
  auto cb = inbox->sampleCallback();
  cb(a, 1, 0);
  cb(b, 2, 0);
  EXPECT_TRUE(got.empty());  // nothing runs before the queue is served
  cb(c, 3, 0);               // full: the oldest (a) goes
  EXPECT_EQ(inbox->drops(), 1u);
  EXPECT_EQ(inbox->pushed(), 3u);
  const int64_t before = netloop::ros2::wallClockNs();
  queue.callAvailable(ros::WallDuration(0));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::vector<uint8_t>({2, 2}));
  EXPECT_EQ(got[1], std::vector<uint8_t>({3, 3, 3}));
  EXPECT_GE(times[0], before);  // reception time read when the callback ran
  EXPECT_EQ(inbox->pending(), 0u);
}

TEST(RosQueueInbox, CallbacksOfADestroyedInboxAreGone) {
  ros::CallbackQueue queue;
  int runs = 0;
  auto inbox = RosQueueInbox::create([&](const uint8_t*, size_t, int64_t) { ++runs; }, 10, &queue);
  auto cb = inbox->sampleCallback();
  const uint8_t x[] = {9};
  cb(x, 1, 0);
  inbox.reset();
  cb(x, 1, 0);  // the middleware's late sample: nothing to push into
  queue.callAvailable(ros::WallDuration(0));
  EXPECT_EQ(runs, 0);
  EXPECT_TRUE(queue.isEmpty());
}

#ifdef NETLOOP_HAVE_ROS2
TEST(TypedThroughCdr, ImageKeepsItsSeqAndBytes) {
  using netloop::ros2::MessageLayout;
  sensor_msgs::Image img;
  img.header.seq = 77;
  img.header.stamp = ros::Time(1764140000, 5);
  img.header.frame_id = "camera_optical_frame";
  img.height = 2;
  img.width = 3;
  img.encoding = "rgb8";
  img.step = 9;
  img.data.assign(18, 0xab);
  const auto layout = MessageLayout::parse(ros::message_traits::datatype<sensor_msgs::Image>(),
                                           ros::message_traits::definition<sensor_msgs::Image>());
  ASSERT_TRUE(layout->startsWithHeader());
  const std::vector<uint8_t> bytes = ser(img);
  const std::vector<uint8_t> marked = netloop::ros2::seqIntoFrameId(bytes.data(), bytes.size());
  const std::vector<uint8_t> cdr = netloop::ros2::ros1ToCdr(*layout, marked.data(), marked.size());
  std::vector<uint8_t> back = netloop::ros2::cdrToRos1(*layout, cdr.data(), cdr.size());
  EXPECT_EQ(deser<sensor_msgs::Image>(back).header.seq, 0u);  // ROS 2 has no seq
  ASSERT_TRUE(netloop::ros2::seqOutOfFrameId(back));
  EXPECT_EQ(back, bytes);
}

TEST(TypedThroughCdr, LoopSampleRoundTrips) {
  netloop::LoopSample m;
  m.seq = 12;
  m.value = -1.5;
  m.stamp = ros::Time(1764140000, 999999999);
  m.answer_seq = 11;
  m.answer_stamp = ros::Time(1764139999, 1);
  m.padding.assign(100, 7);
  const auto layout = netloop::ros2::MessageLayout::parse("netloop/LoopSample",
                                                          ros::message_traits::definition<netloop::LoopSample>());
  EXPECT_FALSE(layout->startsWithHeader());
  const std::vector<uint8_t> bytes = ser(m);
  const std::vector<uint8_t> cdr = netloop::ros2::ros1ToCdr(*layout, bytes.data(), bytes.size());
  EXPECT_EQ(cdr.size() >= 4 ? cdr[1] : 0, 1);  // CDR little endian encapsulation
  EXPECT_EQ(netloop::ros2::cdrToRos1(*layout, cdr.data(), cdr.size()), bytes);
}
#endif

}  // namespace
