// The kernel's netfilter queue (nfnetlink_queue) as netloop_wifi_link speaks it: the messages
// that bind a queue of a host's namespace, the packets the kernel queues there, and the
// verdicts that let them go on (linux/netfilter/nfnetlink_queue.h). No ns-3 here: the hosts'
// NIC queues (host_nic.h) use it; unit-tested in test/cpp/test_wifi_gate.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace netloop::wifi::nfq
{

/// Binds queue `queue` of the socket's namespace to this socket (IPv4); acknowledged.
std::vector<uint8_t> BindMessage(uint16_t queue, uint32_t seq);

/// Asks for the first `copyBytes` of every queued packet (its IPv4 header) and sets the most
/// packets the kernel holds in the queue (`maxLen`; beyond it the kernel drops, as a full
/// qdisc does); acknowledged.
std::vector<uint8_t> ParamsMessage(uint16_t queue, uint32_t copyBytes, uint32_t maxLen, uint32_t seq);

/// Lets packet `id` of `queue` go on its way (NF_ACCEPT).
std::vector<uint8_t> AcceptMessage(uint16_t queue, uint32_t id);

/// One packet the kernel queued.
struct QueuedPacket
{
    uint32_t id = 0;
    uint32_t bytes = 0; // the IP packet's length
    uint8_t dscp = 0;   // its IPv4 DS field >> 2 (0 without an IPv4 header)
};

/// What a buffer read from the socket held: the packets queued, and the first error the
/// kernel answered a request with (0: none; negative errno as netlink gives it).
struct Received
{
    std::vector<QueuedPacket> packets;
    int error = 0;
};

/// Parses the netlink messages of `len` bytes at `buf` (one recv()).
Received Parse(const uint8_t* buf, size_t len);

} // namespace netloop::wifi::nfq
