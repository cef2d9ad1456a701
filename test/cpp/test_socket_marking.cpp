// Unit tests of socket marking: DSCP names, the socket priority, and a pass over the
// process's own sockets (IPv4 marked, a Unix socket left alone).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netloop/socket_marking.h"

TEST(Dscp, NamesAndNumbers) {
  EXPECT_EQ(netloop::dscpFromName("EF"), 46);
  EXPECT_EQ(netloop::dscpFromName("ef"), 46);
  EXPECT_EQ(netloop::dscpFromName("CS6"), 48);
  EXPECT_EQ(netloop::dscpFromName("CS0"), 0);
  EXPECT_EQ(netloop::dscpFromName("AF41"), 34);
  EXPECT_EQ(netloop::dscpFromName("46"), 46);
  EXPECT_EQ(netloop::dscpFromName("64"), -1);
  EXPECT_EQ(netloop::dscpFromName("CS8"), -1);
  EXPECT_EQ(netloop::dscpFromName("AF44"), -1);
  EXPECT_EQ(netloop::dscpFromName("fast"), -1);
}

TEST(Dscp, SocketPriority) {
  EXPECT_EQ(netloop::socketPriorityFor(46), 6);
  EXPECT_EQ(netloop::socketPriorityFor(40), 6);
  EXPECT_EQ(netloop::socketPriorityFor(48), 7);
  EXPECT_EQ(netloop::socketPriorityFor(56), 7);
  EXPECT_EQ(netloop::socketPriorityFor(34), 4);
  EXPECT_EQ(netloop::socketPriorityFor(0), 0);
}

TEST(Dscp, MarksTheProcessesIpSockets) {
  const int udp = socket(AF_INET, SOCK_DGRAM, 0), tcp = socket(AF_INET, SOCK_STREAM, 0);
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  ASSERT_GE(udp, 0);
  ASSERT_GE(tcp, 0);
  const netloop::MarkCount c = netloop::markProcessSockets(46);
  EXPECT_GE(c.marked, 2);
  for (int fd : {udp, tcp}) {
    int tos = 0, prio = 0;
    socklen_t len = sizeof tos;
    ASSERT_EQ(getsockopt(fd, IPPROTO_IP, IP_TOS, &tos, &len), 0);
    len = sizeof prio;
    ASSERT_EQ(getsockopt(fd, SOL_SOCKET, SO_PRIORITY, &prio, &len), 0);
    EXPECT_EQ(tos & 0xfc, 46 << 2) << "fd " << fd;
    EXPECT_EQ(prio, 6) << "fd " << fd;
  }
  int prio = -1;
  socklen_t len = sizeof prio;
  ASSERT_EQ(getsockopt(pair[0], SOL_SOCKET, SO_PRIORITY, &prio, &len), 0);
  EXPECT_EQ(prio, 0);  // a Unix socket is left alone
  for (int fd : {udp, tcp, pair[0], pair[1]}) close(fd);
}
