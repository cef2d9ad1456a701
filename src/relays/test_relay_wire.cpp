// Unit tests of the relays' wire library (no ROS): fragmentation and reassembly (in any
// order, with duplicates, losses and timeouts), strict decoding of hostile datagrams
// (random and mutated), stream frames, type announcements, compression, the priority
// queue and the pacer.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "wire/relay_wire.h"

using namespace netloop::relay;

namespace {

std::vector<uint8_t> bytesOf(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

PacketHeader header(uint32_t topic = 7, uint32_t msg = 1) {
  PacketHeader h;
  h.topic_id = topic;
  h.epoch = 42;
  h.msg_id = msg;
  h.src = 1;
  h.dst = 2;
  return h;
}

std::vector<PacketView> decodeAll(const std::vector<std::vector<uint8_t>>& pkts) {
  std::vector<PacketView> out;
  for (const auto& p : pkts) {
    PacketView v;
    EXPECT_EQ(decodePacket(p.data(), p.size(), 1u << 24, v), Error::Ok);
    out.push_back(v);
  }
  return out;
}

}  // namespace

TEST(RelayWire, FragmentsFitOneMtuAndReassembleInAnyOrder) {
  const auto msg = bytesOf(65536, 1);
  const auto pkts = fragment(header(), msg.data(), msg.size(), 1500 - kIpUdpOverhead);
  ASSERT_EQ(pkts.size(), (65536 + 1431) / 1432u);
  for (const auto& p : pkts) EXPECT_LE(p.size() + kIpUdpOverhead, 1500u);
  std::vector<size_t> order(pkts.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  Reassembler r;
  auto views = decodeAll(pkts);
  Message out;
  int done = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    if (r.push(views[order[k]], 0, out)) {
      ++done;
      EXPECT_EQ(k, order.size() - 1);
    }
  }
  ASSERT_EQ(done, 1);
  EXPECT_EQ(out.data, msg);
  EXPECT_EQ(r.pendingBytes(), 0u);
  EXPECT_EQ(r.pendingMessages(), 0u);
}

TEST(RelayWire, EmptyAndSingleDatagramMessages) {
  for (size_t n : {0, 1, 1432}) {
    const auto msg = bytesOf(n, 2);
    const auto pkts = fragment(header(7, static_cast<uint32_t>(n)), msg.data(), msg.size(), 1472);
    ASSERT_EQ(pkts.size(), 1u);
    Reassembler r;
    Message out;
    ASSERT_TRUE(r.push(decodeAll(pkts)[0], 0, out));
    EXPECT_EQ(out.data, msg);
  }
}

TEST(RelayWire, DuplicatesAreDeliveredOnce) {
  const auto msg = bytesOf(5000, 4);
  const auto pkts = fragment(header(), msg.data(), msg.size(), 1472);
  auto views = decodeAll(pkts);
  Reassembler r;
  Message out;
  int delivered = 0;
  for (int rep = 0; rep < 3; ++rep)
    for (const auto& v : views) delivered += r.push(v, 0, out);
  EXPECT_EQ(delivered, 1);
  EXPECT_GE(r.stats().duplicate_messages, 1u);
  EXPECT_EQ(r.pendingMessages(), 0u);
  // a duplicated fragment while incomplete is counted, not stored twice
  Reassembler r2;
  r2.push(views[0], 0, out);
  r2.push(views[0], 0, out);
  EXPECT_EQ(r2.stats().duplicate_packets, 1u);
}

TEST(RelayWire, IncompleteMessagesAreDroppedAfterTheTimeout) {
  ReassemblyLimits lim;
  lim.timeout_ns = 100000000;  // 100 ms
  Reassembler r(lim);
  const auto msg = bytesOf(10000, 5);
  auto views = decodeAll(fragment(header(), msg.data(), msg.size(), 1472));
  Message out;
  for (size_t i = 0; i + 1 < views.size(); ++i) EXPECT_FALSE(r.push(views[i], 0, out));  // last one lost
  EXPECT_EQ(r.pendingMessages(), 1u);
  r.expire(50000000);
  EXPECT_EQ(r.pendingMessages(), 1u);
  r.expire(200000000);
  EXPECT_EQ(r.pendingMessages(), 0u);
  EXPECT_EQ(r.pendingBytes(), 0u);
  EXPECT_EQ(r.stats().timed_out, 1u);
  // the late last fragment alone starts a new incomplete message, never a delivery
  EXPECT_FALSE(r.push(views.back(), 300000000, out));
}

TEST(RelayWire, PendingMemoryIsBounded) {
  ReassemblyLimits lim;
  lim.max_pending_bytes = 100000;
  lim.max_pending_messages = 4;
  Reassembler r(lim);
  Message out;
  for (uint32_t m = 0; m < 100; ++m) {
    const auto msg = bytesOf(30000, m);
    auto views = decodeAll(fragment(header(7, m), msg.data(), msg.size(), 1472));
    r.push(views[0], m, out);  // only the first fragment of each
    EXPECT_LE(r.pendingBytes(), lim.max_pending_bytes);
    EXPECT_LE(r.pendingMessages(), lim.max_pending_messages);
  }
  EXPECT_GT(r.stats().evicted, 90u);
  // a message larger than the whole budget is refused outright
  const auto big = bytesOf(200000, 9);
  auto views = decodeAll(fragment(header(8, 1), big.data(), big.size(), 1472));
  EXPECT_FALSE(r.push(views[0], 0, out));
  EXPECT_EQ(r.stats().too_large, 1u);
}

TEST(RelayWire, DecoderRefusesInconsistentHeaders) {
  const auto msg = bytesOf(3000, 6);
  auto pkts = fragment(header(), msg.data(), msg.size(), 1472);
  PacketView v;
  auto bad = [&](std::vector<uint8_t> p) { return decodePacket(p.data(), p.size(), 1u << 24, v); };
  auto p = pkts[0];
  EXPECT_EQ(bad(std::vector<uint8_t>(p.begin(), p.begin() + 39)), Error::TooShort);
  EXPECT_EQ(bad(std::vector<uint8_t>(p.begin(), p.end() - 1)), Error::BadLength);  // truncated
  auto q = p;
  q[0] ^= 1;
  EXPECT_EQ(bad(q), Error::BadMagic);
  q = p;
  q[4] = 2;
  EXPECT_EQ(bad(q), Error::BadVersion);
  q = p;
  q[5] = 9;
  EXPECT_EQ(bad(q), Error::BadKind);
  q = p;
  q[6] = 0x80;
  EXPECT_EQ(bad(q), Error::BadFlags);
  q = p;
  q[32] = 5;  // frag_index beyond frag_count
  EXPECT_EQ(bad(q), Error::BadFragment);
  q = p;
  q[34] = 9;  // frag_count disagrees with total_len / frag_size
  EXPECT_EQ(bad(q), Error::BadFragment);
  q = p;
  q[36] = 0;
  q[37] = 0;  // frag_size 0
  EXPECT_EQ(bad(q), Error::BadFragment);
  q = p;
  q[27] = 0x7f;  // total_len huge
  EXPECT_EQ(bad(q), Error::TooLarge);
  q = pkts.back();
  q.push_back(0);  // trailing garbage
  EXPECT_EQ(bad(q), Error::BadLength);
}

TEST(RelayWire, InconsistentFragmentsDropTheMessage) {
  const auto a = bytesOf(3000, 7), b = bytesOf(4000, 8);
  auto va = decodeAll(fragment(header(7, 5), a.data(), a.size(), 1472));
  auto vb = decodeAll(fragment(header(7, 5), b.data(), b.size(), 1472));  // same id, other size
  Reassembler r;
  Message out;
  r.push(va[0], 0, out);
  EXPECT_FALSE(r.push(vb[1], 0, out));
  EXPECT_EQ(r.stats().inconsistent, 1u);
  EXPECT_EQ(r.pendingMessages(), 0u);
}

TEST(RelayWire, RandomAndMutatedDatagramsNeverCrashOrLeak) {
  std::mt19937 rng(11);
  ReassemblyLimits lim;
  lim.max_pending_bytes = 1 << 20;
  lim.max_pending_messages = 16;
  lim.max_message_bytes = 1 << 20;
  Reassembler r(lim);
  std::vector<std::vector<uint8_t>> corpus;
  for (uint32_t m = 0; m < 20; ++m) {
    const auto msg = bytesOf(rng() % 20000, m);
    for (auto& p : fragment(header(rng() % 3, m), msg.data(), msg.size(), 1472)) corpus.push_back(p);
  }
  Message out;
  size_t ok = 0;
  for (int i = 0; i < 200000; ++i) {
    std::vector<uint8_t> p;
    if (rng() % 4 == 0) {
      p = bytesOf(rng() % 200, rng());  // pure noise
    } else {
      p = corpus[rng() % corpus.size()];
      const int mutations = 1 + rng() % 4;
      for (int k = 0; k < mutations; ++k) {
        switch (rng() % 4) {
          case 0: p[rng() % p.size()] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
          case 1: p.resize(rng() % (p.size() + 1)); break;
          case 2: p.push_back(static_cast<uint8_t>(rng())); break;
          default: if (p.size() > 40) p[rng() % 40] = static_cast<uint8_t>(rng()); break;
        }
        if (p.empty()) break;
      }
    }
    PacketView v;
    if (decodePacket(p.data(), p.size(), lim.max_message_bytes, v) == Error::Ok) {
      ++ok;
      if (r.push(v, i * 1000000LL, out)) {
        EXPECT_LE(out.data.size(), lim.max_message_bytes);
      }
    }
    if (i % 100 == 0) r.expire(i * 1000000LL);
    ASSERT_LE(r.pendingBytes(), lim.max_pending_bytes);
    ASSERT_LE(r.pendingMessages(), lim.max_pending_messages);
  }
  EXPECT_GT(ok, 1000u);  // the mutations left enough valid datagrams to exercise reassembly
}

TEST(RelayWire, StreamFramesSurviveAnySplit) {
  std::vector<uint8_t> stream;
  std::vector<std::vector<uint8_t>> msgs;
  for (uint32_t i = 0; i < 20; ++i) {
    msgs.push_back(bytesOf(i * 997, i));
    FrameHeader h;
    h.topic_id = i;
    h.msg_id = i;
    const auto f = encodeFrame(h, msgs.back().data(), msgs.back().size());
    stream.insert(stream.end(), f.begin(), f.end());
  }
  std::mt19937 rng(5);
  StreamDecoder d(1 << 20);
  size_t pos = 0, got = 0;
  while (pos < stream.size()) {
    const size_t n = std::min<size_t>(1 + rng() % 3000, stream.size() - pos);
    d.feed(stream.data() + pos, n);
    pos += n;
    Frame f;
    while (d.next(f)) {
      EXPECT_EQ(f.data, msgs[got]);
      EXPECT_EQ(f.h.msg_id, got);
      ++got;
    }
  }
  EXPECT_EQ(got, msgs.size());
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(RelayWire, StreamDecoderStopsAtGarbageAndHugeLengths) {
  StreamDecoder d(1000);
  FrameHeader h;
  h.len = 0;
  auto f = encodeFrame(h, nullptr, 0);
  f[24] = 0xff;  // len far above the limit
  f[25] = 0xff;
  d.feed(f.data(), f.size());
  Frame out;
  EXPECT_FALSE(d.next(out));
  EXPECT_EQ(d.error(), Error::TooLarge);
  d.feed(f.data(), f.size());  // ignored once failed
  EXPECT_EQ(d.buffered(), 0u);
  StreamDecoder g(1000);
  const auto noise = bytesOf(100, 3);
  g.feed(noise.data(), noise.size());
  EXPECT_FALSE(g.next(out));
  EXPECT_NE(g.error(), Error::Ok);
}

TEST(RelayWire, TypeInfoRoundTripAndValidation) {
  TypeInfo t{"/flows/image", "sensor_msgs/CompressedImage", "8f7a12909da2c9d3332d540a0977563f", "Header header\n"};
  const auto b = encodeTypeInfo(t);
  TypeInfo back;
  ASSERT_TRUE(decodeTypeInfo(b.data(), b.size(), back));
  EXPECT_EQ(back.topic, t.topic);
  EXPECT_EQ(back.datatype, t.datatype);
  EXPECT_EQ(back.md5, t.md5);
  EXPECT_EQ(back.definition, t.definition);
  for (size_t cut = 0; cut < b.size(); ++cut) EXPECT_FALSE(decodeTypeInfo(b.data(), cut, back));
  TypeInfo bad = t;
  bad.datatype = "no_slash";
  auto bb = encodeTypeInfo(bad);
  EXPECT_FALSE(decodeTypeInfo(bb.data(), bb.size(), back));
  bad = t;
  bad.md5 = "xyz";
  bb = encodeTypeInfo(bad);
  EXPECT_FALSE(decodeTypeInfo(bb.data(), bb.size(), back));
  bad = t;
  bad.topic = "relative";
  bb = encodeTypeInfo(bad);
  EXPECT_FALSE(decodeTypeInfo(bb.data(), bb.size(), back));
}

TEST(RelayWire, CompressionRoundTripAndRefusal) {
  std::vector<uint8_t> msg(50000, 7);
  std::vector<uint8_t> z, back;
  ASSERT_TRUE(compressBytes(msg.data(), msg.size(), z));
  EXPECT_LT(z.size(), 1000u);
  ASSERT_TRUE(decompressBytes(z.data(), z.size(), msg.size(), 1 << 20, back));
  EXPECT_EQ(back, msg);
  EXPECT_FALSE(decompressBytes(z.data(), z.size(), msg.size() - 1, 1 << 20, back));  // wrong size
  EXPECT_FALSE(decompressBytes(z.data(), z.size(), msg.size(), 1000, back));         // over the limit
  EXPECT_FALSE(decompressBytes(z.data(), z.size() / 2, msg.size(), 1 << 20, back));  // truncated
  std::vector<uint8_t> empty;
  ASSERT_TRUE(compressBytes(nullptr, 0, z));
  EXPECT_TRUE(decompressBytes(z.data(), z.size(), 0, 10, back));
  EXPECT_TRUE(back.empty());
}

TEST(PriorityQueue, MostUrgentFirstFifoWithinAPriority) {
  PriorityQueue q(1 << 20);
  auto pkts = [](int n, uint8_t tag) {
    std::vector<OutPacket> v;
    for (int i = 0; i < n; ++i) v.push_back({std::vector<uint8_t>(100, tag), 0});
    return v;
  };
  q.push(1, 10, pkts(3, 'a'));  // low priority, big
  q.push(2, 200, pkts(1, 'b'));
  q.push(3, 10, pkts(1, 'c'));
  q.push(2, 200, pkts(1, 'd'));
  std::string order;
  OutPacket p;
  while (q.pop(p)) order += static_cast<char>(p.bytes[0]);
  EXPECT_EQ(order, "bdaaac");
}

TEST(PriorityQueue, UrgentMessageOvertakesBetweenDatagrams) {
  PriorityQueue q(1 << 20);
  std::vector<OutPacket> image;
  for (int i = 0; i < 46; ++i) image.push_back({std::vector<uint8_t>(1472, 'i'), 0});
  EXPECT_EQ(q.headPriority(), -1);
  q.push(1, 10, image);
  OutPacket p;
  ASSERT_TRUE(q.pop(p));  // first image datagram on the wire
  EXPECT_EQ(q.headPriority(), 10);
  q.push(2, 200, {{std::vector<uint8_t>(1064, 'l'), 0}});
  EXPECT_EQ(q.headPriority(), 200);  // what the relay's backpressure and marking look at
  ASSERT_TRUE(q.pop(p));
  EXPECT_EQ(p.bytes[0], 'l');  // the next datagram is the urgent one
  EXPECT_EQ(q.headPriority(), 10);
}

TEST(PriorityQueue, BoundedDroppingLowestPriorityFirst) {
  PriorityQueue q(10000);
  auto msg = [](size_t bytes) { return std::vector<OutPacket>{{std::vector<uint8_t>(bytes, 0), 0}}; };
  EXPECT_TRUE(q.push(1, 10, msg(4000)).accepted);
  EXPECT_TRUE(q.push(1, 10, msg(4000)).accepted);
  auto r = q.push(2, 200, msg(4000));  // needs room: a low-priority message goes
  EXPECT_TRUE(r.accepted);
  EXPECT_EQ(r.dropped_messages, 1u);
  ASSERT_EQ(r.dropped_lanes.size(), 1u);
  EXPECT_EQ(r.dropped_lanes[0], 1u);
  EXPECT_LE(q.bytes(), 10000u);
  EXPECT_FALSE(q.push(3, 5, msg(4000)).accepted);  // only more urgent messages could make room
  auto same = q.push(3, 10, msg(4000));              // as urgent as lane 1: its oldest goes
  EXPECT_TRUE(same.accepted);
  auto& low = same;
  EXPECT_EQ(low.dropped_lanes[0], 1u);
  auto lowest = q.push(4, 1, msg(4000));  // nothing less urgent left: refused
  EXPECT_FALSE(lowest.accepted);
  EXPECT_FALSE(q.push(5, 255, msg(20000)).accepted);  // larger than the queue
  EXPECT_LE(q.bytes(), 10000u);
}

TEST(PriorityQueue, PriorityChangeAppliesToQueuedMessages) {
  PriorityQueue q(1 << 20);
  q.push(1, 100, {{std::vector<uint8_t>(10, 'a'), 0}});
  q.push(2, 50, {{std::vector<uint8_t>(10, 'b'), 0}});
  q.setPriority(2, 150);
  OutPacket p;
  ASSERT_TRUE(q.pop(p));
  EXPECT_EQ(p.bytes[0], 'b');
}

TEST(Pacer, KeepsTheConfiguredRate) {
  Pacer pacer(6e6, 28, 1000000);
  int64_t now = 0;
  size_t bytes = 0;
  for (int i = 0; i < 1000; ++i) {
    now = std::max(now, pacer.readyAt()) + 100000;  // woken 0.1 ms late every time
    pacer.sent(1472, now);
    bytes += 1472 + 28;
  }
  const double rate = bytes * 8.0 / (pacer.readyAt() / 1e9);
  EXPECT_NEAR(rate, 6e6, 6e6 * 0.01);  // late wake-ups are made up for
  Pacer idle(6e6, 28, 1000000);
  idle.sent(1472, 10000000000LL);  // after a long idle period, no burst beyond the credit
  EXPECT_GE(idle.readyAt(), 10000000000LL - 1000000 + 1999999);
}
