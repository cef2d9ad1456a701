// Unit tests of the emulated NIC's flow control without ns-3 (src/ns3/nfqueue.h, nic_queue.h):
// the netfilter queue messages as the kernel reads and writes them, and the queue that lets a
// host's packets through only while the device has room, marked ones first.
#include <gtest/gtest.h>

#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <linux/netlink.h>

#include <arpa/inet.h>
#include <cstring>
#include <vector>

#include "nfqueue.h"
#include "nic_queue.h"
#include "wifi_options.h"

using namespace netloop::wifi;

namespace {

void put(std::vector<uint8_t>& out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

void attr(std::vector<uint8_t>& out, uint16_t type, const void* p, size_t n) {
  nlattr a{static_cast<uint16_t>(NLA_HDRLEN + n), type};
  put(out, &a, sizeof a);
  put(out, p, n);
  out.resize(NLA_ALIGN(out.size()), 0);
}

/// A queued-packet message as the kernel sends it: id, the first `copied` bytes of an IPv4
/// packet of `length` bytes with DS field `tos`.
std::vector<uint8_t> queuedPacket(uint32_t id, uint8_t tos, uint32_t length, uint32_t copied) {
  std::vector<uint8_t> body;
  nfgenmsg g{AF_UNSPEC, NFNETLINK_V0, htons(0)};
  put(body, &g, sizeof g);
  nfqnl_msg_packet_hdr h{htonl(id), htons(0x0800), 3};
  attr(body, NFQA_PACKET_HDR, &h, sizeof h);
  std::vector<uint8_t> ip(copied, 0);
  ip[0] = 0x45;
  ip[1] = tos;
  attr(body, NFQA_PAYLOAD, ip.data(), ip.size());
  if (copied < length) {
    uint32_t cap = htonl(length);
    attr(body, NFQA_CAP_LEN, &cap, sizeof cap);
  }
  nlmsghdr m{static_cast<uint32_t>(NLMSG_HDRLEN + body.size()), (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET, 0, 0, 0};
  std::vector<uint8_t> out;
  put(out, &m, sizeof m);
  put(out, body.data(), body.size());
  return out;
}

nfq::QueuedPacket packet(uint32_t id, uint8_t dscp = 0) {
  nfq::QueuedPacket p;
  p.id = id;
  p.bytes = 1500;
  p.dscp = dscp;
  return p;
}

}  // namespace

TEST(NetfilterQueue, ParsesTwoQueuedPacketsAndTheirLengthAndDscp) {
  std::vector<uint8_t> buf = queuedPacket(7, 46 << 2, 1500, 64);
  std::vector<uint8_t> second = queuedPacket(8, 0, 40, 40);
  buf.insert(buf.end(), second.begin(), second.end());
  nfq::Received got = nfq::Parse(buf.data(), buf.size());
  ASSERT_EQ(got.packets.size(), 2u);
  EXPECT_EQ(got.packets[0].id, 7u);
  EXPECT_EQ(got.packets[0].bytes, 1500u);  // NFQA_CAP_LEN: the copy was cut short
  EXPECT_EQ(got.packets[0].dscp, 46);
  EXPECT_EQ(got.packets[1].bytes, 40u);    // copied whole
  EXPECT_EQ(got.error, 0);
}

TEST(NetfilterQueue, ReportsTheKernelsErrorAndIgnoresAnAcknowledgement) {
  std::vector<uint8_t> buf;
  for (int err : {0, -2}) {
    nlmsghdr m{static_cast<uint32_t>(NLMSG_HDRLEN + sizeof(nlmsgerr)), NLMSG_ERROR, 0, 0, 0};
    nlmsgerr e{};
    e.error = err;
    put(buf, &m, sizeof m);
    put(buf, &e, sizeof e);
  }
  EXPECT_EQ(nfq::Parse(buf.data(), buf.size()).error, -2);
}

TEST(NetfilterQueue, RequestsAreWellFormedNetlink) {
  std::vector<uint8_t> bind = nfq::BindMessage(0, 1);
  nlmsghdr h;
  std::memcpy(&h, bind.data(), sizeof h);
  EXPECT_EQ(h.nlmsg_len, bind.size());
  EXPECT_EQ(h.nlmsg_type, (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_CONFIG);
  EXPECT_TRUE(h.nlmsg_flags & NLM_F_ACK);
  std::vector<uint8_t> accept = nfq::AcceptMessage(3, 42);
  std::memcpy(&h, accept.data(), sizeof h);
  EXPECT_EQ(h.nlmsg_len, accept.size());
  EXPECT_FALSE(h.nlmsg_flags & NLM_F_ACK);
  nfqnl_msg_verdict_hdr v;
  std::memcpy(&v, accept.data() + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(nfgenmsg)) + NLA_HDRLEN, sizeof v);
  EXPECT_EQ(ntohl(v.id), 42u);
  EXPECT_EQ(ntohl(v.verdict), 1u);  // NF_ACCEPT
}

TEST(NicQueue, ReleasesOnlyWhileTheDeviceHasRoom) {
  NicQueue q(2, 0.05, {});
  for (uint32_t id = 1; id <= 5; ++id) q.Queued(packet(id));
  EXPECT_EQ(q.Release(0.0, 0), (std::vector<uint32_t>{1, 2}));  // two on their way fill the ring
  EXPECT_TRUE(q.Release(0.001, 0).empty());
  q.ReachedDevice(0.0005);
  q.ReachedDevice(0.0015);
  EXPECT_TRUE(q.Release(0.002, 2).empty());                     // both now in the device
  EXPECT_EQ(q.Release(0.003, 1), (std::vector<uint32_t>{3}));   // one acknowledged
  EXPECT_EQ(q.Backlog(), 2u);
  EXPECT_EQ(q.Counts().queued, 5u);
  EXPECT_EQ(q.Counts().released, 3u);
  EXPECT_EQ(q.Counts().arrived, 2u);
  EXPECT_DOUBLE_EQ(q.Counts().transitSum, 0.002);
  EXPECT_DOUBLE_EQ(q.Counts().transitMax, 0.0015);
}

TEST(NicQueue, AnEmptyDeviceWaitingForAFrameOnItsWayCountsAsStarved) {
  NicQueue q(2, 0.05, {});
  q.Queued(packet(1));
  q.Observe(0.0, 0);                  // empty, nothing on its way: the host had nothing
  q.Release(0.001, 0);
  q.Observe(0.001, 0);                // released: the device waits for it from here
  q.ReachedDevice(0.0014);
  q.Observe(0.0014, 1);
  EXPECT_NEAR(q.Counts().starvedS, 0.0004, 1e-12);
  q.Queued(packet(2));
  q.Release(0.002, 1);
  q.Observe(0.002, 1);                // one frame still in the device: not starved
  q.Observe(0.003, 0);                // it left before the next arrived
  q.ReachedDevice(0.0035);
  q.Observe(0.0035, 1);
  EXPECT_NEAR(q.Counts().starvedS, 0.0009, 1e-12);
  q.Observe(0.004, 0);                // empty and nothing on its way: idle, not starved
  q.Observe(0.010, 0);
  EXPECT_NEAR(q.Counts().starvedS, 0.0009, 1e-12);
}

TEST(NicQueue, MarkedPacketsGoFirstEachClassInOrder) {
  NicQueue q(8, 0.05, {46});
  q.Queued(packet(1));
  q.Queued(packet(2, 46));
  q.Queued(packet(3));
  q.Queued(packet(4, 46));
  EXPECT_EQ(q.Release(0.0, 0), (std::vector<uint32_t>{2, 4, 1, 3}));
}

TEST(NicQueue, APacketLostOnItsWayFreesItsPlaceAfterTheTimeout) {
  NicQueue q(1, 0.05, {});
  q.Queued(packet(1));
  q.Queued(packet(2));
  EXPECT_EQ(q.Release(0.0, 0).size(), 1u);
  EXPECT_TRUE(q.Release(0.04, 0).empty());
  EXPECT_EQ(q.Release(0.06, 0), (std::vector<uint32_t>{2}));   // the first never arrived
}

TEST(NicQueue, AFlushDropsTheBacklogAndCountsIt) {
  NicQueue q(1, 0.05, {});
  for (uint32_t id = 1; id <= 3; ++id) q.Queued(packet(id));
  q.Release(0.0, 0);
  q.Flush();
  EXPECT_EQ(q.Backlog(), 0u);
  EXPECT_EQ(q.InTransit(), 0u);
  EXPECT_EQ(q.Counts().flushed, 2u);
  q.Sample();
  EXPECT_EQ(q.Counts().samples, 1u);
}

TEST(NicQueue, OptionsNeedOneNamespacePerTap) {
  WifiOptions o;
  o.taps = {"t0", "t1"};
  o.ips = {"10.0.0.1", "10.0.0.2"};
  o.nicNetns = {"/run/netns/a"};
  EXPECT_NE(ValidateOptions(o).find("--nic-netns"), std::string::npos);
  o.nicNetns.push_back("/run/netns/b");
  EXPECT_EQ(ValidateOptions(o), "");
}

TEST(NicQueue, ItsCountsAppearAsTheNodesNic) {
  StatsSnapshot s;
  NodeCounters c;
  s.nodes = {c};
  EXPECT_EQ(FormatStatsLine("stats", s).find("\"nic\""), std::string::npos);  // no flow control
  s.nodes[0].hasNic = true;
  s.nodes[0].nic.queued = 3;
  s.nodes[0].nic.released = 2;
  s.nodes[0].nic.samples = 2;
  s.nodes[0].nic.backlogSum = 3;
  s.nodes[0].nic.backlogMax = 2;
  s.nodes[0].nic.arrived = 2;
  s.nodes[0].nic.transitSum = 0.001;
  s.nodes[0].nic.transitMax = 0.0007;
  s.nodes[0].nic.starvedS = 0.25;
  EXPECT_NE(FormatStatsLine("stats", s).find("\"nic\":{\"queued\":3,\"released\":2,\"flushed\":0,"
                                             "\"backlog_mean\":1.500000,\"backlog_max\":2,"
                                             "\"transit_mean_ms\":0.500000,\"transit_max_ms\":0.700000,"
                                             "\"starved_ms\":250.000000}"),
            std::string::npos);
}

TEST(NicQueue, ANicsTimePerPacketSpacesItsPackets) {
  NicQueue q(8, 0.05, {}, 0.0004);  // 400 us per packet: at most 2500 a second
  for (uint32_t id = 1; id <= 3; ++id) q.Queued(packet(id));
  EXPECT_EQ(q.Release(0.0, 0), (std::vector<uint32_t>{1}));      // room for 8, but one at a time
  EXPECT_DOUBLE_EQ(q.NextFree(), 0.0004);
  EXPECT_TRUE(q.Release(0.0003, 0).empty());
  EXPECT_EQ(q.Release(0.0004, 0), (std::vector<uint32_t>{2}));
  EXPECT_EQ(q.Release(0.0020, 0), (std::vector<uint32_t>{3}));  // idle since: at once
}

TEST(NicQueue, TheNextPacketGoesAtItsTimeDespiteRounding) {
  NicQueue q(8, 0.05, {}, 0.00048);
  q.Queued(packet(1));
  q.Queued(packet(2));
  q.Release(0.001, 0);
  EXPECT_EQ(q.Release(0.00148 - 1e-12, 0), (std::vector<uint32_t>{2}));  // the clock's ns, rounded down
}

TEST(NicQueue, ADatagramAboveTheMtuHoldsARingPlacePerFragment) {
  EXPECT_EQ(NicQueue::Frames(1500), 1u);
  EXPECT_EQ(NicQueue::Frames(1501), 2u);
  EXPECT_EQ(NicQueue::Frames(65528), 45u);
  NicQueue q(2, 0.05, {});
  nfq::QueuedPacket big = packet(1);
  big.bytes = 3000;  // three fragments
  q.Queued(big);
  q.Queued(packet(2));
  EXPECT_EQ(q.Release(0.0, 0), (std::vector<uint32_t>{1}));
  EXPECT_EQ(q.InTransit(), 3u);
  EXPECT_TRUE(q.Release(0.0, 0).empty());
}
