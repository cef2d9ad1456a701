// Unit tests of a sender's drain (process_sockets.h): it waits while a TCP socket of the
// process holds unacknowledged bytes, ends soon once none does, and waits its whole time
// while the process has a connected UDP socket (no acknowledgement to wait for). Real loopback sockets.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "netloop/process_sockets.h"

namespace {

/// A connected loopback TCP pair: {sender, receiver}.
std::pair<int, int> tcpPair() {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(listen(listener, 1), 0);
  EXPECT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int sender = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(connect(sender, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const int receiver = accept(listener, nullptr, nullptr);
  close(listener);
  return {sender, receiver};
}

/// Writes until the socket's buffers are full; the bytes written.
size_t fill(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::vector<char> chunk(65536, 'x');
  size_t total = 0;
  for (ssize_t n; (n = write(fd, chunk.data(), chunk.size())) > 0;) total += static_cast<size_t>(n);
  return total;
}

}  // namespace

TEST(Drain, EndsSoonWhenEverythingSentWasAcknowledged) {
  auto [sender, receiver] = tcpPair();
  ASSERT_EQ(write(sender, "hello", 5), 5);
  const netloop::Drain d = netloop::drainOutgoing(2.0, true);
  EXPECT_TRUE(d.acked);
  EXPECT_LT(d.waited_s, 1.0);   // quiet for 0.05 s, then twice a loopback round trip
  close(sender);
  close(receiver);
}

TEST(Drain, WaitsWhileBytesAreUnacknowledgedThenEnds) {
  auto [sender, receiver] = tcpPair();
  const size_t sent = fill(sender);
  ASSERT_GT(netloop::outgoing().tcp_unacked_bytes, 0);
  EXPECT_FALSE(netloop::drainOutgoing(0.2, true).acked);   // nobody reads: the whole time
  std::thread reader([receiver = receiver, sent] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::vector<char> buf(65536);
    for (size_t got = 0; got < sent;) {
      const ssize_t n = read(receiver, buf.data(), buf.size());
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
  });
  const netloop::Drain d = netloop::drainOutgoing(5.0, true);
  reader.join();
  EXPECT_TRUE(d.acked);
  EXPECT_GE(d.waited_s, 0.15);  // not before the reader took the bytes
  EXPECT_LT(d.waited_s, 5.0);
  EXPECT_EQ(netloop::outgoing().tcp_unacked_bytes, 0);
  close(sender);
  close(receiver);
}

TEST(Drain, WaitsTheWholeTimeWithAConnectedUdpSocketOrWithoutUntilAcked) {
  const int server = socket(AF_INET, SOCK_DGRAM, 0), udp = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(server, 0);
  ASSERT_GE(udp, 0);
  EXPECT_EQ(netloop::outgoing().datagram_sockets, 0);   // unconnected (as roscpp's UDPROS server): not counted
  EXPECT_TRUE(netloop::drainOutgoing(1.0, true).acked);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(9);
  ASSERT_EQ(connect(udp, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);   // as a UDPROS publisher's
  EXPECT_EQ(netloop::outgoing().datagram_sockets, 1);
  netloop::Drain d = netloop::drainOutgoing(0.2, true);
  EXPECT_FALSE(d.acked);
  EXPECT_GE(d.waited_s, 0.2);
  close(udp);
  close(server);
  d = netloop::drainOutgoing(0.2, false);
  EXPECT_FALSE(d.acked);
  EXPECT_GE(d.waited_s, 0.2);
}
