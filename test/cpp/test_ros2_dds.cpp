// Cyclone DDS and Fast DDS through netloop_ros2: two participants in one process, on loopback
// only (the configuration files below), one domain id per test (from the pid) so that tests
// running at the same time do not meet. A middleware missing from the build is skipped.
#include <gtest/gtest.h>
#include <ros/serialization.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "netloop/LoopSample.h"
#include "netloop/ros2/cdr.h"
#include "netloop/ros2/middleware.h"

using namespace netloop::ros2;
using Bytes = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;

namespace {

const char* kCycloneXml =
    "<CycloneDDS><Domain id=\"any\"><General><Interfaces><NetworkInterface name=\"lo\"/></Interfaces>"
    "<AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex>"
    "<MaxAutoParticipantIndex>30</MaxAutoParticipantIndex><Peers><Peer address=\"127.0.0.1\"/></Peers>"
    "</Discovery></Domain></CycloneDDS>\n";

const char* kFastXml =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n"
    "<dds xmlns=\"http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles\"><profiles>\n"
    " <transport_descriptors><transport_descriptor><transport_id>netloop_udp</transport_id><type>UDPv4</type>\n"
    "  <maxInitialPeersRange>40</maxInitialPeersRange>\n"
    "  <interfaceWhiteList><address>127.0.0.1</address></interfaceWhiteList></transport_descriptor>\n"
    " </transport_descriptors>\n"
    " <participant profile_name=\"netloop_test\" is_default_profile=\"true\"><rtps>\n"
    "  <userTransports><transport_id>netloop_udp</transport_id></userTransports>\n"
    "  <useBuiltinTransports>false</useBuiltinTransports>\n"
    "  <builtin><initialPeersList><locator><udpv4><address>127.0.0.1</address></udpv4></locator></initialPeersList>\n"
    "  </builtin></rtps></participant>\n"
    "</profiles></dds>\n";

// The configuration files this process wrote, removed when it exits; a forked child that
// exits leaves them to the process that wrote them.
struct ConfigFiles {
  pid_t owner = getpid();
  std::vector<std::string> paths;
  ~ConfigFiles() {
    if (getpid() == owner)
      for (const auto& path : paths) unlink(path.c_str());
  }
};

std::string configFile(const std::string& middleware) {
  static ConfigFiles written;
  std::string path = "/tmp/netloop_test_ros2_" + middleware + "_" + std::to_string(getpid()) +
                     (middleware == "cyclonedds" ? ".xml" : ".fastdds.xml");
  std::ofstream(path) << (middleware == "cyclonedds" ? kCycloneXml : kFastXml);
  if (getpid() == written.owner && std::find(written.paths.begin(), written.paths.end(), path) == written.paths.end())
    written.paths.push_back(path);
  return path;
}

int nextDomain() {
  static int n = 0;
  return 1 + static_cast<int>((getpid() * 13 + n++ * 37) % 200);
}

std::shared_ptr<const MessageLayout> loopLayout() {
  using M = netloop::LoopSample;
  static auto l =
      MessageLayout::parse(ros::message_traits::DataType<M>::value(), ros::message_traits::Definition<M>::value());
  return l;
}

Bytes loopSample(uint32_t seq, size_t padding) {
  netloop::LoopSample m;
  m.seq = seq;
  m.value = seq * 0.5;
  m.stamp = ros::Time(100 + seq, 7);
  m.answer_seq = -1;
  m.padding.resize(padding);
  for (size_t i = 0; i < padding; ++i) m.padding[i] = uint8_t(i * 31 + seq);
  Bytes ros1(ros::serialization::serializationLength(m));
  ros::serialization::OStream s(ros1.data(), ros1.size());
  ros::serialization::serialize(s, m);
  return ros1ToCdr(*loopLayout(), ros1.data(), ros1.size());
}

uint32_t seqOf(const Bytes& cdr) {
  uint32_t v;
  memcpy(&v, cdr.data() + 4, 4);
  return v;
}

/// What a subscription received.
struct Inbox {
  std::mutex m;
  std::condition_variable cv;
  std::vector<Bytes> samples;
  SampleCallback callback() {
    return [this](const uint8_t* p, size_t n, int64_t) {
      std::lock_guard<std::mutex> lock(m);
      samples.emplace_back(p, p + n);
      cv.notify_all();
    };
  }
  bool waitFor(size_t count, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(m);
    return cv.wait_for(lock, timeout, [&] { return samples.size() >= count; });
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(m);
    return samples.size();
  }
};

template <class F>
bool waitUntil(F f, std::chrono::milliseconds timeout = std::chrono::milliseconds(4000)) {
  auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return f();
}

class Ros2Dds : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto have = availableMiddlewares();
    if (std::find(have.begin(), have.end(), GetParam()) == have.end())
      GTEST_SKIP() << GetParam() << " is not in this build";
    config_.middleware = GetParam();
    config_.domain_id = nextDomain();
    config_.config_file = configFile(GetParam());
  }
  std::unique_ptr<Participant> participant(const std::string& name) {
    ParticipantConfig c = config_;
    c.node_name = name;
    return createParticipant(c);
  }
  ParticipantConfig config_;
};

TEST_P(Ros2Dds, ReliableLoopSamplesCrossInOrder) {
  auto a = participant("a");
  auto b = participant("b");
  EXPECT_EQ(a->middleware(), GetParam());
  Inbox inbox;
  auto sub = b->createSubscription("/y", "netloop/LoopSample", qosProfile("default"), inbox.callback());
  auto pub = a->createPublisher("/y", "netloop/LoopSample", qosProfile("default"));
  ASSERT_TRUE(waitUntil([&] { return pub->matched() == 1 && sub->matched() == 1; }));
  std::vector<Bytes> sent;
  for (uint32_t i = 0; i < 20; ++i) {
    sent.push_back(loopSample(i, 16));
    pub->publish(sent.back());
  }
  ASSERT_TRUE(inbox.waitFor(20, std::chrono::milliseconds(3000))) << inbox.size();
  std::lock_guard<std::mutex> lock(inbox.m);
  EXPECT_EQ(inbox.samples, sent);
  WireStats sa = a->stats(), sb = b->stats();
  EXPECT_EQ(sa.samples_sent, 20);
  EXPECT_EQ(sb.samples_received, 20);
  EXPECT_EQ(sb.samples_lost, 0);
  EXPECT_EQ(sb.samples_rejected, 0);
  if (GetParam() == "cyclonedds") {
    EXPECT_GE(sa.retransmit_bytes, 0);
  }
}

TEST_P(Ros2Dds, FourMegabyteReliableSampleArrivesComplete) {
  auto a = participant("a");
  auto b = participant("b");
  Inbox inbox;
  auto sub = b->createSubscription("/big", "netloop/LoopSample", qosProfile("default"), inbox.callback());
  auto pub = a->createPublisher("/big", "netloop/LoopSample", qosProfile("default"));
  ASSERT_TRUE(waitUntil([&] { return pub->matched() == 1 && sub->matched() == 1; }));
  Bytes big = loopSample(1, 4 << 20);
  Bytes big2 = loopSample(2, 4 << 20);
  auto t0 = Clock::now();
  pub->publish(big);
  pub->publish(big2);
  ASSERT_TRUE(inbox.waitFor(2, std::chrono::milliseconds(4000))) << inbox.size();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  std::printf("%s: two 4 MB samples in %lld ms\n", GetParam().c_str(), static_cast<long long>(ms));
  std::lock_guard<std::mutex> lock(inbox.m);
  EXPECT_TRUE(inbox.samples[0] == big);
  EXPECT_TRUE(inbox.samples[1] == big2);
}

TEST_P(Ros2Dds, TransientLocalLateJoinerGetsTheLastSampleVolatileDoesNot) {
  auto a = participant("a");
  auto b = participant("b");
  Qos tl = qosProfile("transient_local");
  tl.depth = 1;
  auto pub_tl = a->createPublisher("/late_tl", "netloop/LoopSample", tl);
  auto pub_v = a->createPublisher("/late_v", "netloop/LoopSample", qosProfile("default"));
  for (uint32_t i = 0; i < 3; ++i) {
    pub_tl->publish(loopSample(i, 0));
    pub_v->publish(loopSample(i, 0));
  }
  Inbox in_tl, in_v;
  auto sub_tl = b->createSubscription("/late_tl", "netloop/LoopSample", tl, in_tl.callback());
  auto sub_v = b->createSubscription("/late_v", "netloop/LoopSample", qosProfile("default"), in_v.callback());
  ASSERT_TRUE(in_tl.waitFor(1, std::chrono::milliseconds(4000)));
  ASSERT_TRUE(waitUntil([&] { return sub_v->matched() == 1 && pub_v->matched() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  {
    std::lock_guard<std::mutex> lock(in_tl.m);
    ASSERT_EQ(in_tl.samples.size(), 1u);  // depth 1: the last one
    EXPECT_EQ(seqOf(in_tl.samples[0]), 2u);
  }
  EXPECT_EQ(in_v.size(), 0u);
  // And both get what is published now.
  pub_tl->publish(loopSample(3, 0));
  pub_v->publish(loopSample(3, 0));
  EXPECT_TRUE(in_tl.waitFor(2, std::chrono::milliseconds(2000)));
  EXPECT_TRUE(in_v.waitFor(1, std::chrono::milliseconds(2000)));
}

TEST_P(Ros2Dds, MatchedCountsFollowTheEndpoints) {
  auto a = participant("a");
  auto b = participant("b");
  auto c = participant("c");
  Inbox i1, i2;
  auto pub = a->createPublisher("/m", "netloop/LoopSample", qosProfile("default"));
  EXPECT_EQ(pub->matched(), 0u);
  auto s1 = b->createSubscription("/m", "netloop/LoopSample", qosProfile("default"), i1.callback());
  auto s2 = c->createSubscription("/m", "netloop/LoopSample", qosProfile("sensor_data"), i2.callback());
  ASSERT_TRUE(waitUntil([&] { return pub->matched() == 2 && s1->matched() == 1 && s2->matched() == 1; }))
      << pub->matched() << " " << s1->matched() << " " << s2->matched();
  s2.reset();
  EXPECT_TRUE(waitUntil([&] { return pub->matched() == 1; })) << pub->matched();
  // A best-effort writer does not match a reliable reader (ROS 2's QoS compatibility).
  auto be = a->createPublisher("/m2", "netloop/LoopSample", qosProfile("sensor_data"));
  auto rel = b->createSubscription("/m2", "netloop/LoopSample", qosProfile("default"), i1.callback());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(be->matched(), 0u);
}

TEST_P(Ros2Dds, BestEffortDelivers) {
  auto a = participant("a");
  auto b = participant("b");
  Inbox inbox;
  auto sub = b->createSubscription("/be", "netloop/LoopSample", qosProfile("sensor_data"), inbox.callback());
  auto pub = a->createPublisher("/be", "netloop/LoopSample", qosProfile("sensor_data"));
  ASSERT_TRUE(waitUntil([&] { return pub->matched() == 1 && sub->matched() == 1; }));
  for (uint32_t i = 0; i < 20; ++i) {
    pub->publish(loopSample(i, 100));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_TRUE(inbox.waitFor(15, std::chrono::milliseconds(2000))) << inbox.size();
  std::lock_guard<std::mutex> lock(inbox.m);
  for (size_t i = 1; i < inbox.samples.size(); ++i) EXPECT_GT(seqOf(inbox.samples[i]), seqOf(inbox.samples[i - 1]));
}

TEST_P(Ros2Dds, BadQosAndConfigAreRefused) {
  Qos bad = qosProfile("default");
  bad.depth = 0;
  auto a = participant("a");
  EXPECT_THROW(a->createPublisher("/q", "netloop/LoopSample", bad), std::invalid_argument);
  EXPECT_THROW(a->createPublisher("/q", "LoopSample", qosProfile("default")), std::invalid_argument);
  ParticipantConfig c = config_;
  c.config_file = "/nonexistent/netloop.xml";
  c.domain_id = nextDomain();
  EXPECT_THROW(createParticipant(c), std::runtime_error);
}

// Reliable, with a history deep enough for a burst of 11 samples: with KEEP_LAST 10 (the default
// profile) a writer may replace its oldest sample before the reader has acknowledged it.
Qos burstQos() {
  Qos q = qosProfile("default");
  q.depth = 16;
  return q;
}

// The same across two processes: real UDP on loopback (no in-process shortcut), with a 4 MB
// reliable sample fragmented on the way. The child is this binary running Ros2DdsChild.Publish.
TEST_P(Ros2Dds, CrossesBetweenProcesses) {
  setenv("NETLOOP_FASTDDS_STATISTICS", "1", 1);  // Fast DDS's statistics module, here and in the child
  auto b = participant("parent");
  unsetenv("NETLOOP_FASTDDS_STATISTICS");
  Inbox inbox;
  auto sub = b->createSubscription("/xp", "netloop/LoopSample", burstQos(), inbox.callback());
  auto ack = b->createPublisher("/xp_ack", "netloop/LoopSample", qosProfile("transient_local"));
  std::string env = "NETLOOP_ROS2_CHILD=" + GetParam() + ":" + std::to_string(config_.domain_id) + ":" +
                    config_.config_file;
  std::string filter = "--gtest_filter=Ros2DdsChild.Publish";
  std::string exe = "/proc/self/exe";
  char* argv[] = {&exe[0], &filter[0], nullptr};
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  envp.push_back(&env[0]);
  std::string stats = "NETLOOP_FASTDDS_STATISTICS=1";
  envp.push_back(&stats[0]);
  envp.push_back(nullptr);
  pid_t child = fork();  // then only async-signal-safe calls: the middleware's sockets must not leak into the child
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int fd = 3; fd < 4096; ++fd) close(fd);
    execve("/proc/self/exe", argv, envp.data());
    _exit(127);
  }
  bool got = inbox.waitFor(11, std::chrono::milliseconds(8000));
  ack->publish(loopSample(0, 0));
  int status = 0;
  waitpid(child, &status, 0);
  WireStats w = b->stats();  // printed before the verdict: a failure shows whether a sample was lost
  std::printf("%s subscriber: received %lld lost %lld rejected %lld acknacks %lld\n", GetParam().c_str(),
              (long long)w.samples_received, (long long)w.samples_lost, (long long)w.samples_rejected,
              (long long)w.acknacks);
  ASSERT_TRUE(got) << inbox.size() << " samples";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::lock_guard<std::mutex> lock(inbox.m);
  for (uint32_t i = 0; i < 10; ++i) EXPECT_EQ(inbox.samples[i], loopSample(i, 64));
  EXPECT_TRUE(inbox.samples[10] == loopSample(10, 4 << 20));
  EXPECT_EQ(w.samples_received, 11);
  EXPECT_EQ(w.samples_lost, 0);
  if (GetParam() == "fastdds") {
    EXPECT_GE(w.acknacks, 1);
  }
}

TEST(Ros2DdsChild, Publish) {
  const char* spec = getenv("NETLOOP_ROS2_CHILD");
  if (!spec) GTEST_SKIP() << "run by Ros2Dds.CrossesBetweenProcesses";
  std::string s = spec;
  size_t a = s.find(':'), b = s.find(':', a + 1);
  ParticipantConfig c;
  c.middleware = s.substr(0, a);
  c.domain_id = std::stoi(s.substr(a + 1, b - a - 1));
  c.config_file = s.substr(b + 1);
  c.node_name = "child";
  auto p = createParticipant(c);
  Inbox acks;
  auto ack = p->createSubscription("/xp_ack", "netloop/LoopSample", qosProfile("transient_local"), acks.callback());
  auto pub = p->createPublisher("/xp", "netloop/LoopSample", burstQos());
  ASSERT_TRUE(waitUntil([&] { return pub->matched() == 1; }, std::chrono::milliseconds(5000)));
  for (uint32_t i = 0; i < 10; ++i) pub->publish(loopSample(i, 64));
  pub->publish(loopSample(10, 4 << 20));
  EXPECT_TRUE(acks.waitFor(1, std::chrono::milliseconds(8000)));
  WireStats w = p->stats();
  std::printf("%s publisher: sent %lld retransmits %lld retransmit_bytes %lld heartbeats %lld throttles %lld\n",
              c.middleware.c_str(), (long long)w.samples_sent, (long long)w.retransmits,
              (long long)w.retransmit_bytes, (long long)w.heartbeats, (long long)w.throttles);
  EXPECT_EQ(w.samples_sent, 11);
  if (c.middleware == "fastdds") {
    EXPECT_GE(w.heartbeats, 1);
    EXPECT_GE(w.retransmits, 0);
  } else {
    EXPECT_GE(w.retransmit_bytes, 0);
  }
}

// Fast DDS and Cyclone DDS on one domain: ROS 2 nodes on different rmw implementations talk to
// each other over RTPS; so must netloop's two backends (same topic and type names, same CDR).
// 100 KB samples: fragmented by both. (Fast DDS -> Cyclone with samples above ~256 KB loses some
// samples for good on loopback here: Fast DDS sends 64 KB datagrams in bursts, cf. Fast-DDS
// issue 3053; between two Fast DDS or two Cyclone DDS participants 4 MB crosses, see above.)
TEST(Ros2CrossVendor, FastDdsAndCycloneDdsTalk) {
  auto have = availableMiddlewares();
  if (std::find(have.begin(), have.end(), "cyclonedds") == have.end() ||
      std::find(have.begin(), have.end(), "fastdds") == have.end())
    GTEST_SKIP() << "needs both DDS";
  ParticipantConfig cc, fc;
  cc.middleware = "cyclonedds";
  fc.middleware = "fastdds";
  cc.domain_id = fc.domain_id = nextDomain();
  cc.config_file = configFile("cyclonedds");
  fc.config_file = configFile("fastdds");
  auto cyc = createParticipant(cc);
  auto fast = createParticipant(fc);
  Inbox at_cyc, at_fast;
  auto sub_c = cyc->createSubscription("/xv", "netloop/LoopSample", qosProfile("default"), at_cyc.callback());
  auto sub_f = fast->createSubscription("/xv_back", "netloop/LoopSample", qosProfile("default"), at_fast.callback());
  auto pub_f = fast->createPublisher("/xv", "netloop/LoopSample", qosProfile("default"));
  auto pub_c = cyc->createPublisher("/xv_back", "netloop/LoopSample", qosProfile("default"));
  ASSERT_TRUE(waitUntil([&] { return pub_f->matched() == 1 && pub_c->matched() == 1; }, std::chrono::milliseconds(4500)))
      << pub_f->matched() << " " << pub_c->matched();
  Bytes small = loopSample(5, 100), big = loopSample(6, 100000);
  pub_f->publish(small);
  pub_f->publish(big);
  pub_c->publish(small);
  pub_c->publish(big);
  ASSERT_TRUE(at_cyc.waitFor(2, std::chrono::milliseconds(3000))) << at_cyc.size();
  ASSERT_TRUE(at_fast.waitFor(2, std::chrono::milliseconds(3000))) << at_fast.size();
  EXPECT_TRUE(at_cyc.samples[0] == small && at_cyc.samples[1] == big);
  EXPECT_TRUE(at_fast.samples[0] == small && at_fast.samples[1] == big);
}

INSTANTIATE_TEST_SUITE_P(Middlewares, Ros2Dds, ::testing::Values("cyclonedds", "fastdds"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
